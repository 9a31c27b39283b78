import { expect, it } from "vitest";
import { startPollLoop } from "../../shared/inbound/pollLoop.js";

/** Resolves when `cond` holds, checking after every turn of the event loop (bounded). */
async function settle(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000 && !cond(); i++) await new Promise((r) => setImmediate(r));
}

it("runs again at once while rounds are full, then waits until woken; stop ends it", async () => {
  let rounds = 0;
  let fullRounds = 3;
  const loop = startPollLoop({ name: "t", pollIntervalMs: 3_600_000, round: async () => { rounds++; return fullRounds-- > 0; } });
  await settle(() => rounds >= 4);
  // Three full rounds, then an idle one: it now sleeps for the (hour-long) poll interval.
  for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
  expect(rounds).toBe(4);
  loop.wake();
  await settle(() => rounds >= 5);
  expect(rounds).toBe(5);
  await loop.stop();
  loop.wake();
  for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
  expect(rounds).toBe(5);
});

it("keeps going after a failing round (the database is down), and a wake-up during a round is not lost", async () => {
  let rounds = 0;
  let release!: () => void;
  const loop = startPollLoop({
    name: "t",
    pollIntervalMs: 3_600_000,
    maxBackoffMs: 1,
    round: async () => {
      rounds++;
      if (rounds === 1) throw new Error("database down");
      if (rounds === 2) await new Promise<void>((r) => (release = r));
      return false;
    },
  });
  await settle(() => rounds === 2 && release !== undefined); // the failure was followed by a retry
  loop.wake(); // arrives while round 2 runs
  release();
  await settle(() => rounds >= 3);
  expect(rounds).toBe(3);
  await loop.stop();
});
