/**
 * Issue 27 item 14: what a newcomer meets in the CLI in their first hour. `runCli` in-process
 * (the same function bin/webhooks.js runs) against the platform in this process; the real binary's
 * happy paths are cli.test.ts's.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { runCli } from "../../shared/cli/main.js";
import { makeDeadLetter, usePlatformOnOwnDatabase, type TestPlatform, type TestReceiver } from "./harness.js";

interface Run { code: number; stdout: string; stderr: string }

let t: TestPlatform;
let receiver: TestReceiver;
usePlatformOnOwnDatabase((platform, r) => { t = platform; receiver = r; });

async function cli(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, {
    stdout: (s) => { stdout += s; },
    stderr: (s) => { stderr += s; },
    env: { WEBHOOKS_URL: t.baseUrl, ADMIN_TOKEN: t.token, ...env },
    cwd: process.cwd(),
  });
  return { code, stdout, stderr };
}

describe("webhooks: finding one's way", { timeout: 60_000 }, () => {
  it("--version prints the package's version", async () => {
    const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
    const r = await cli(["--version"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(`webhooks ${version}`);
  });

  it("an unknown command, action or option says which known one was meant", async () => {
    const command = await cli(["subscriptons", "list"]);
    expect(command.code).toBe(2);
    expect(command.stderr).toContain('unknown command "subscriptons"; did you mean "subscriptions"?');
    const action = await cli(["dlq", "lst"]);
    expect(action.code).toBe(2);
    expect(action.stderr).toContain('unknown action "lst"; did you mean "list"?');
    // Before the command: an option, not a command.
    const leading = await cli(["--jsn", "dlq", "list"]);
    expect(leading.code).toBe(2);
    expect(leading.stderr).toContain('unknown option "--jsn"; did you mean "--json"?');
    expect(leading.stderr).not.toContain("unknown command");
    const option = await cli(["dlq", "list", "--limt", "5"]);
    expect(option.code).toBe(2);
    expect(option.stderr).toContain('did you mean "--limit"?');
    // Nothing close: no guess, the list.
    const far = await cli(["zzzzzz"]);
    expect(far.stderr).not.toContain("did you mean");
    expect(far.stderr).toContain("webhooks --help");
  });
});

describe("webhooks dlq: list filters like replay --all, and replay --all says what it selected", { timeout: 120_000 }, () => {
  it("narrows the list by subscription, event type, reason and time; replay --all names its filter", async () => {
    receiver.answer = 400;
    const a = await makeDeadLetter(t, `${receiver.url}/a`, "fh-a");
    const b = await makeDeadLetter(t, `${receiver.url}/b`, "fh-b");
    const ids = async (args: string[]) => {
      const r = await cli(["dlq", "list", "--json", ...args]);
      expect(r.code, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as { id: string }[]).map((d) => d.id).sort();
    };
    expect(await ids([])).toEqual([a.deliveryId, b.deliveryId].sort());
    expect(await ids(["--subscription", a.subscriptionId])).toEqual([a.deliveryId]);
    expect(await ids(["--event-type", "test.fh_b"])).toEqual([b.deliveryId]);
    expect(await ids(["--reason", "permanent"])).toHaveLength(2);
    expect(await ids(["--reason", "exhausted"])).toEqual([]);
    expect(await ids(["--since", "2999-01-01T00:00:00Z"])).toEqual([]);
    expect(await ids(["--until", "2999-01-01T00:00:00Z"])).toHaveLength(2);

    receiver.answer = 200;
    const r = await cli(["dlq", "replay", "--all", "--subscription", b.subscriptionId, "--reason", "permanent"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`dead letters of subscription ${b.subscriptionId} whose reason starts "permanent"`);
    expect(r.stdout).toContain(`Replayed 1 dead letter of subscription ${b.subscriptionId} whose reason starts "permanent".`);
    expect(await ids([])).toEqual([a.deliveryId]);
  });
});

describe("webhooks subscriptions create: flow control from the command line", { timeout: 60_000 }, () => {
  it("sets ordered, maxInFlight, rateLimitPerSecond and attemptTimeoutMs, and refuses bad values", async () => {
    const r = await cli(["subscriptions", "create", "--endpoint", `${receiver.url}/flow`, "--event", "flow.*", "--ordered",
      "--max-in-flight", "4", "--rate-limit-per-second", "2.5", "--attempt-timeout-ms", "5000", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const sub = JSON.parse(r.stdout);
    expect({ ordered: sub.ordered, maxInFlight: sub.maxInFlight, rateLimitPerSecond: sub.rateLimitPerSecond, attemptTimeoutMs: sub.attemptTimeoutMs })
      .toEqual({ ordered: true, maxInFlight: 4, rateLimitPerSecond: 2.5, attemptTimeoutMs: 5000 });
    const bad = await cli(["subscriptions", "create", "--endpoint", `${receiver.url}/flow`, "--event", "flow.*", "--max-in-flight", "0"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--max-in-flight must be an integer from 1 to 10000");
    const rate = await cli(["subscriptions", "create", "--endpoint", `${receiver.url}/flow`, "--event", "flow.*", "--rate-limit-per-second", "fast"]);
    expect(rate.code).toBe(2);
    expect(rate.stderr).toContain("--rate-limit-per-second must be a number");
  });
});

describe("webhooks applications | keys: the words of the CLI, not the API's", { timeout: 60_000 }, () => {
  it("applications delete, refused while it has subscriptions, says --cascade", async () => {
    const app = await t.api("POST", "/applications", { name: "Cascade" });
    await t.api("POST", "/subscriptions", { url: `${receiver.url}/c`, eventTypes: ["c.*"], applicationId: app.id });
    const r = await cli(["applications", "delete", app.id]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`webhooks applications delete ${app.id} --cascade`);
    expect(r.stderr).not.toContain("cascade=true");
    expect((await cli(["applications", "delete", app.id, "--cascade"])).code).toBe(0);
  });

  it("keys create without a scope asks for one instead of making an operator key", async () => {
    const before = (await t.api("GET", "/keys?limit=1000")).keys.length;
    const r = await cli(["keys", "create", "--description", "no scope"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--application <id>");
    expect(r.stderr).toContain("--operator");
    expect((await t.api("GET", "/keys?limit=1000")).keys.length).toBe(before);
    const operator = await cli(["keys", "create", "--operator", "--read-only", "--json"]);
    expect(operator.code, operator.stderr).toBe(0);
    expect(JSON.parse(operator.stdout)).toMatchObject({ applicationId: null, access: "read" });
    const both = await cli(["keys", "create", "--operator", "--application", "app_default"]);
    expect(both.code).toBe(2);
  });

  it("a refused token (401) says which credential was used, and that another one was set", async () => {
    const stale = await cli(["subscriptions", "list"], { WEBHOOKS_API_KEY: "whk_key_0000000000000000_stale" });
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain("refused the token (401), the one from WEBHOOKS_API_KEY (whk_key_0000");
    expect(stale.stderr).toContain("ADMIN_TOKEN is set too but WEBHOOKS_API_KEY comes first");
    expect(stale.stderr).not.toContain("stale"); // the secret part is never echoed
    const flag = await cli(["subscriptions", "list", "--token", "x".repeat(24)]);
    expect(flag.stderr).toContain("the one from --token (24 characters)");
    const admin = await cli(["subscriptions", "list"], { ADMIN_TOKEN: "y".repeat(24) });
    expect(admin.stderr).toContain("the one from ADMIN_TOKEN");
  });
});
