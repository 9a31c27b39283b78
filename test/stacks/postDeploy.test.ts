/**
 * The deploy's post-step on GCP: run the migrate job once and wait for its outcome. `gcloud` is
 * played by a recording TEST PEER (`exec` below) that answers as the CLI does (`jobs run` exits 0
 * at once, `jobs describe --format=json` shows the last attempt); it does not model the CLI's
 * authentication or Cloud Scheduler itself.
 */
import { describe, expect, it } from "vitest";
import { postDeploy, type Exec } from "../../stacks/postDeploy.js";
import { testConfig } from "./synthFixture.js";

function gcloudPeer(describeAnswers: object[]): { exec: Exec; calls: string[][] } {
  const calls: string[][] = [];
  const exec: Exec = (command, args) => {
    calls.push([command, ...args]);
    if (args[2] === "run") return { status: 0, stdout: "", stderr: "", error: undefined };
    const next = describeAnswers.length > 1 ? describeAnswers.shift()! : describeAnswers[0]!;
    return { status: 0, stdout: JSON.stringify(next), stderr: "", error: undefined };
  };
  return { exec, calls };
}

const config = testConfig();
const at = (iso: string) => () => new Date(iso);
const quiet = { log: () => {}, sleep: async () => {}, pollMs: 0 };

describe("postDeploy", () => {
  it("GCP: runs the stack's migrate job and waits for an attempt after it started", async () => {
    const peer = gcloudPeer([{ lastAttemptTime: "2026-12-01T09:00:00Z" }, { lastAttemptTime: "2026-12-01T10:00:05Z", status: {} }]);
    const result = await postDeploy("gcp", config, { ...quiet, exec: peer.exec, now: at("2026-12-01T10:00:00Z") });
    expect(result).toEqual({ ok: true, message: expect.stringContaining("migrate ran at 2026-12-01T10:00:05Z") });
    expect(peer.calls[0]).toEqual(["gcloud", "scheduler", "jobs", "run", "hooktest-migrate", "--location=europe-west1", "--project=hooks-test-project"]);
    expect(peer.calls.filter((c) => c[3] === "describe")).toHaveLength(2);
  });

  it("GCP: a failed attempt is a failed deploy, with the function's message and how to look and retry", async () => {
    const peer = gcloudPeer([{ lastAttemptTime: "2026-12-01T10:00:05Z", status: { code: 13, message: "password authentication failed" } }]);
    const result = await postDeploy("gcp", config, { ...quiet, exec: peer.exec, now: at("2026-12-01T10:00:00Z") });
    expect(result.ok).toBe(false);
    expect(result.message).toMatch(/failed \(code 13\): password authentication failed/);
    expect(result.message).toContain("gcloud scheduler jobs run hooktest-migrate");
  });

  it("GCP: a job that cannot be started says how to run it by hand", async () => {
    const exec: Exec = () => ({ status: 1, stdout: "", stderr: "ERROR: (gcloud) not logged in", error: undefined });
    const result = await postDeploy("gcp", config, { ...quiet, exec });
    expect(result).toEqual({ ok: false, message: expect.stringMatching(/not logged in[\s\S]*gcloud scheduler jobs run hooktest-migrate/) });
  });

  it("AWS and Azure need nothing after cdktf deploy", async () => {
    const exec: Exec = () => { throw new Error("no command expected"); };
    expect((await postDeploy("aws", config, { exec })).ok).toBe(true);
    expect((await postDeploy("azure", config, { exec })).ok).toBe(true);
  });
});
