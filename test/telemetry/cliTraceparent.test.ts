/**
 * The CLI's traceparent switches: `subscriptions create --no-traceparent` and `subscriptions
 * update --traceparent on|off` set the subscription's `sendTraceparent`; another value is a usage
 * error naming what it takes. `runCli` in-process against the platform in this process.
 */
import { expect, it } from "vitest";
import { runCli } from "../../shared/cli/main.js";
import { usePlatformOnOwnDatabase, type TestPlatform, type TestReceiver } from "../operator/harness.js";

let t: TestPlatform;
let receiver: TestReceiver;
usePlatformOnOwnDatabase((platform, r) => { t = platform; receiver = r; });

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, { stdout: (s) => { stdout += s; }, stderr: (s) => { stderr += s; }, env: { WEBHOOKS_URL: t.baseUrl, ADMIN_TOKEN: t.token }, cwd: process.cwd() });
  return { code, stdout, stderr };
}

it("create --no-traceparent, update --traceparent on|off, and a bad value refused", async () => {
  const created = await cli(["--json", "subscriptions", "create", "--endpoint", `${receiver.url}/a`, "--event", "cli.x", "--no-traceparent"]);
  expect(created.code, created.stderr).toBe(0);
  const id = JSON.parse(created.stdout).id as string;
  expect((await t.api("GET", `/subscriptions/${id}`)).sendTraceparent).toBe(false);
  const plain = await cli(["--json", "subscriptions", "create", "--endpoint", `${receiver.url}/b`, "--event", "cli.x"]);
  expect(JSON.parse(plain.stdout).sendTraceparent).toBe(true);

  expect((await cli(["subscriptions", "update", id, "--traceparent", "on"])).code).toBe(0);
  expect((await t.api("GET", `/subscriptions/${id}`)).sendTraceparent).toBe(true);
  expect((await cli(["subscriptions", "update", id, "--traceparent", "off"])).code).toBe(0);
  expect((await t.api("GET", `/subscriptions/${id}`)).sendTraceparent).toBe(false);

  const bad = await cli(["subscriptions", "update", id, "--traceparent", "yes"]);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('--traceparent takes on or off; got "yes".');
  expect((await cli(["subscriptions", "update", "--help"])).stdout).toContain("--traceparent on|off");
  expect((await cli(["subscriptions", "create", "--help"])).stdout).toContain("--no-traceparent");
}, 60_000);
