/**
 * `webhooks portal …` (issue 32 item 1): the real bin/webhooks.js as a child process against the
 * platform in this process. An operator makes a link (it opens one session for its application),
 * lists it with the session it opened, sets the portal's framing origins and theme, and revokes
 * the link (the session ends at once); bad input gets a precise message and exit code 2 or 1.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openTestDatabase } from "../support/databases.js";
import { startTestPlatform, type TestPlatform } from "./harness.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BIN = `${ROOT}bin/webhooks.js`;

let t: TestPlatform;
let closeDb: () => Promise<void>;
let app: string;

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], {
      cwd: ROOT, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", WEBHOOKS_URL: t.baseUrl, ADMIN_TOKEN: t.token }, timeout: 100_000,
    }, (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }));
  });
}

beforeAll(async () => {
  const opened = await openTestDatabase("pglite");
  closeDb = opened.close;
  t = await startTestPlatform(opened.db, {}, { workers: false });
  app = (await t.api("POST", "/applications", { name: "Acme" })).id;
}, 180_000);
afterAll(async () => {
  await t?.stop();
  await closeDb?.();
});

it("makes a link that opens one session, lists it, and revokes it (ending the session)", async () => {
  const made = await cli(["portal", "link", app, "--access", "write", "--expires", "30", "--return-url", "https://acme.example/back", "--json"]);
  expect(made.code, made.stderr).toBe(0);
  const link = JSON.parse(made.stdout);
  expect(link).toMatchObject({ applicationId: app, access: "write", returnUrl: "https://acme.example/back" });
  expect(link.url).toBe(`${t.baseUrl}/portal?application=${app}#link=${link.token}`);
  const opened = await fetch(`${t.baseUrl}/portal/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ token: link.token }) });
  expect(opened.status).toBe(201);
  const cookie = opened.headers.get("set-cookie")!.split(";")[0]!;
  const { sessionId } = (await opened.json()) as { sessionId: string };

  const listed = await cli(["portal", "links", app]);
  expect(listed.code, listed.stderr).toBe(0);
  expect(listed.stdout).toMatch(new RegExp(`${link.id}\\s+write\\s+.*${sessionId}\\s+in use\\n`));
  expect(listed.stdout).not.toContain(link.token);

  const revoked = await cli(["portal", "revoke", link.id]);
  expect(revoked.code, revoked.stderr).toBe(0);
  expect(revoked.stdout).toBe(`Revoked ${link.id}; its session ${sessionId} ended.\n`);
  expect((await fetch(`${t.baseUrl}/portal/session`, { headers: { cookie } })).status).toBe(401);
  expect((await cli(["portal", "links", app])).stdout).toMatch(new RegExp(`${link.id}\\s+write\\s+.*${sessionId}\\s+revoked\\n`));
}, 120_000);

it("sets the framing origins and the theme, and shows them", async () => {
  const set = await cli(["portal", "settings", app, "--frame-ancestor", "https://app.acme.example", "--frame-ancestor", "https://*.acme.example", "--name", "Acme hooks", "--accent", "#0B7285"]);
  expect(set.code, set.stderr).toBe(0);
  expect(set.stdout).toContain("https://app.acme.example https://*.acme.example");
  expect(set.stdout).toContain("Acme hooks");
  expect(set.stdout).toContain("#0b7285");
  const page = await fetch(`${t.baseUrl}/portal?application=${app}`);
  expect(page.headers.get("content-security-policy")).toContain("frame-ancestors https://app.acme.example https://*.acme.example");
  const cleared = await cli(["portal", "settings", app, "--no-frame-ancestors", "--name", "", "--json"]);
  expect(JSON.parse(cleared.stdout)).toMatchObject({ frameAncestors: [], theme: { name: null, accentColor: "#0b7285" } });
}, 120_000);

it("refuses bad input precisely", async () => {
  const access = await cli(["portal", "link", app, "--access", "admin"]);
  expect(access.code).toBe(2);
  expect(access.stderr).toContain("--access must be read or write");
  const expires = await cli(["portal", "link", app, "--expires", "5000"]);
  expect(expires.code).toBe(2);
  expect(expires.stderr).toContain("--expires must be an integer from 1 to 1440");
  const token = await cli(["portal", "revoke", "whpl_0123456789abcdef_x"]);
  expect(token.code).toBe(2);
  expect(token.stderr).toContain("not the token itself");
  const origin = await cli(["portal", "settings", app, "--frame-ancestor", "https://acme.example/path"]);
  expect(origin.code).toBe(1);
  expect(origin.stderr).toContain("write the origin only");
  const missing = await cli(["portal", "link", "app_missing"]);
  expect(missing.code).toBe(1);
  expect(missing.stderr).toContain("404");
}, 120_000);
