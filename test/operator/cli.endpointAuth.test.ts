/**
 * Issue 29: `webhooks subscriptions create|update --auth …`, the real bin/webhooks.js as a child
 * process against the platform in this process: each kind set from files (the secret parts never on
 * the command line), shown without its secret, removed with `--auth none`; misuse refused with
 * exit 2 and what to do, the API's refusals (a key that is not the certificate's) with exit 1.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openTestDatabase } from "../support/databases.js";
import { createTestCa } from "../support/opensslCertificates.js";
import { startTestPlatform, type TestPlatform } from "./harness.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BIN = `${ROOT}bin/webhooks.js`;
let t: TestPlatform;
let closeDb: () => Promise<void>;
const dir = mkdtempSync(join(tmpdir(), "cli-auth-"));
const file = (name: string, text: string) => { writeFileSync(join(dir, name), text); return join(dir, name); };

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", WEBHOOKS_URL: t.baseUrl, ADMIN_TOKEN: t.token }, timeout: 100_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }));
  });
}

beforeAll(async () => {
  const opened = await openTestDatabase("pglite");
  closeDb = opened.close;
  t = await startTestPlatform(opened.db, {});
}, 180_000);
afterAll(async () => {
  await t?.stop();
  await closeDb?.();
});

it("sets each kind of endpoint auth from files, shows it without its secret, removes it; refuses misuse", async () => {
  const secretFile = file("client-secret", "cli-client-secret-4411\n");
  const created = await cli(["subscriptions", "create", "--endpoint", "http://127.0.0.1:9/hooks", "--event", "a.*",
    "--auth", "oauth2", "--token-url", "http://127.0.0.1:9/token", "--client-id", "cli-client", "--client-secret-file", secretFile, "--scope", "hooks", "--token-param", "resource=r1"]);
  expect(created.code, created.stderr).toBe(0);
  expect(created.stdout).toContain("oauth2 client credentials (client cli-client at http://127.0.0.1:9/token, scope hooks)");
  expect(created.stdout).not.toContain("cli-client-secret-4411");
  const id = /Created (sub_\S+)\./.exec(created.stdout)![1]!;
  expect((await t.api("GET", `/subscriptions/${id}`)).auth).toEqual({
    kind: "oauth2ClientCredentials", tokenUrl: "http://127.0.0.1:9/token", clientId: "cli-client", scope: "hooks", audience: null, parameters: { resource: "r1" }, clientAuthentication: "basic",
  });

  const basic = await cli(["subscriptions", "update", id, "--auth", "basic", "--auth-username", "relay", "--auth-password-file", file("password", "pw-7788")]);
  expect(basic.code, basic.stderr).toBe(0);
  expect(basic.stdout).toContain("basic (user relay)");
  expect(basic.stdout).not.toContain("pw-7788");

  const ca = createTestCa();
  const client = ca.client("cli-client", { notAfter: new Date(Date.now() + 3 * 86_400_000) });
  const mtls = await cli(["subscriptions", "update", id, "--auth", "mtls", "--client-cert", file("c.crt", client.cert), "--client-key", file("c.key", client.key), "--client-ca", file("ca.crt", ca.ca)]);
  expect(mtls.code, mtls.stderr).toBe(0);
  expect(mtls.stdout).toMatch(/mtls \(CN=cli-client, valid until \S+, expires soon\)/);
  expect(mtls.stdout).toMatch(/warning: auth: the client certificate expires on \S+ \(in 2 days\)/);

  const wrongKey = await cli(["subscriptions", "update", id, "--auth", "mtls", "--client-cert", join(dir, "c.crt"), "--client-key", file("o.key", ca.client("other").key)]);
  expect(wrongKey.code).toBe(1);
  expect(wrongKey.stderr).toContain("auth.privateKey: does not match the certificate");

  const none = await cli(["subscriptions", "update", id, "--auth", "none"]);
  expect(none.code, none.stderr).toBe(0);
  expect((await t.api("GET", `/subscriptions/${id}`)).auth).toBeNull();

  const misuse: [string[], string][] = [
    [["subscriptions", "update", id, "--client-id", "x"], "--client-id needs --auth (basic, oauth2 or mtls)."],
    [["subscriptions", "update", id, "--auth", "kerberos"], "--auth must be basic, oauth2 or mtls (or none)"],
    [["subscriptions", "update", id, "--auth", "basic", "--auth-username", "u"], "--auth-password-file is required with --auth basic."],
    [["subscriptions", "update", id, "--auth", "basic", "--auth-username", "u", "--auth-password-file", join(dir, "missing")], "Cannot read --auth-password-file"],
    [["subscriptions", "update", id, "--auth", "basic", "--auth-username", "u", "--auth-password-file", join(dir, "password"), "--scope", "s"], "--scope does not apply to --auth basic."],
    [["subscriptions", "create", "--endpoint", "http://127.0.0.1:9/h", "--event", "a", "--auth", "none"], "--auth must be basic, oauth2 or mtls;"],
  ];
  for (const [args, message] of misuse) {
    const r = await cli(args);
    expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(2);
    expect(r.stderr).toContain(message);
  }
}, 180_000);
