import { describe, expect, it } from "vitest";
import { runPeriodically } from "../shared/periodic.js";

const until = async (check: () => boolean) => {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 2));
  expect(check()).toBe(true);
};

describe("runPeriodically", () => {
  it("runs again after each run ends, never two at once, and stop waits for the run in progress", async () => {
    let running = 0;
    let overlapped = false;
    let runs = 0;
    let finished = 0;
    const job = runPeriodically("test", async () => {
      running += 1;
      overlapped ||= running > 1;
      runs += 1;
      await new Promise((r) => setTimeout(r, 5));
      running -= 1;
      finished += 1;
    }, { intervalMs: 1, onError: () => {} });
    await until(() => runs >= 3);
    await job.stop();
    expect(finished).toBe(runs); // the last run was awaited, not abandoned
    expect(overlapped).toBe(false);
    const after = runs;
    await new Promise((r) => setTimeout(r, 20));
    expect(runs).toBe(after); // nothing after stop
  });

  it("reports a failing run and keeps going, even if the task throws at once or the reporter throws", async () => {
    const errors: string[] = [];
    let runs = 0;
    const job = runPeriodically("test", (() => {
      runs += 1;
      throw new Error(`sync failure ${runs}`);
    }) as never, {
      intervalMs: 1,
      onError: (error) => {
        errors.push((error as Error).message);
        throw new Error("the reporter is broken too");
      },
    });
    await until(() => runs >= 3);
    await expect(job.stop()).resolves.toBeUndefined();
    expect(errors.slice(0, 3)).toEqual(["sync failure 1", "sync failure 2", "sync failure 3"]);
  });

  it("waits firstDelayMs before the first run", async () => {
    let runs = 0;
    const job = runPeriodically("test", async () => { runs += 1; }, { intervalMs: 1000, firstDelayMs: 30, onError: () => {} });
    expect(runs).toBe(0);
    await until(() => runs === 1);
    await job.stop();
  });
});
