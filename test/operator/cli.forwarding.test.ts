/**
 * Issue 30 item 4: `webhooks forwarding get|add|update|remove`, the real `bin/webhooks.js` run as a
 * child process against the platform in this process: a partner's destinations with their filters
 * and transformations, and each refusal's message and exit code (2: the command line; 1: the API).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateSecret } from "../../shared/outbound/signature.js";
import { openTestDatabase } from "../support/databases.js";
import { startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "./harness.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BIN = `${ROOT}bin/webhooks.js`;
const PARTNER_SECRET = generateSecret();

let t: TestPlatform;
let receiver: TestReceiver;
let closeDb: () => Promise<void>;
let dir: string;

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", WEBHOOKS_URL: t.baseUrl, ADMIN_TOKEN: t.token },
      timeout: 100_000,
    }, (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }));
  });
}

beforeAll(async () => {
  const opened = await openTestDatabase("pglite");
  closeDb = opened.close;
  receiver = await startTestReceiver();
  dir = mkdtempSync(join(tmpdir(), "webhooks-cli-forwarding-"));
  t = await startTestPlatform(opened.db, { PARTNERS: JSON.stringify({
    shop: { scheme: "standard-webhooks", secrets: [PARTNER_SECRET], forward: true },
    quiet: { scheme: "standard-webhooks", secrets: [PARTNER_SECRET] },
  }) });
}, 180_000);
afterAll(async () => {
  await t?.stop();
  await receiver?.close();
  await closeDb?.();
  rmSync(dir, { recursive: true, force: true });
});

describe("webhooks forwarding", { timeout: 120_000 }, () => {
  it("adds a destination with a filter and a transformation, shows it, changes it, removes it", async () => {
    const source = join(dir, "slack.js");
    writeFileSync(source, "(event) => ({ body: { text: `paid ${event.data.amount}` } })\n");
    const added = await cli(["forwarding", "add", "shop", "big", "--endpoint", `${receiver.url}/big`, "--filter", '{"data.data.amount": {"$gt": 100}}', "--transformation", source]);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toContain("Added destination big of partner shop");
    expect(added.stdout).toMatch(/secrets\s+whsec_/);
    expect(added.stdout).toContain('{"data.data.amount":{"$gt":100}}');

    const got = JSON.parse((await cli(["forwarding", "get", "shop", "--json"])).stdout);
    expect(got.enabled).toBe(true);
    expect(got.destinations).toHaveLength(1);
    expect(got.destinations[0]).toMatchObject({ name: "big", url: `${receiver.url}/big`, filter: { "data.data.amount": { $gt: 100 } }, transformation: "(event) => ({ body: { text: `paid ${event.data.amount}` } })\n", source: "api" });
    expect(got.destinations[0].secrets).toBeUndefined();
    const shown = await cli(["forwarding", "get", "shop"]);
    expect(shown.stdout).toContain("Partner shop: forwards.");
    expect(shown.stdout).toMatch(new RegExp(`big\\s+${receiver.url}/big\\s+\\{"data\\.data\\.amount":\\{"\\$gt":100\\}\\}\\s+yes\\s+healthy\\s+api`));

    const changed = await cli(["forwarding", "update", "shop", "big", "--no-filter", "--no-transformation", "--json"]);
    expect(changed.code, changed.stderr).toBe(0);
    expect(JSON.parse(changed.stdout)).toMatchObject({ name: "big", filter: null, transformation: null });

    const removed = await cli(["forwarding", "remove", "shop", "big"]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toMatch(/Removed destination big of partner shop \(subscription sub_\S+; 0 pending deliveries cancelled\)/);
    expect((await cli(["forwarding", "get", "shop"])).stdout).toContain("No destinations.");
  });

  it("refuses with what to do: exit 2 for the command line, 1 with the API's message", async () => {
    const bad = async (code: 1 | 2, message: string | RegExp, args: string[]) => {
      const r = await cli(args);
      expect(r.code, r.stderr).toBe(code);
      if (typeof message === "string") expect(r.stderr).toContain(message);
      else expect(r.stderr).toMatch(message);
    };
    await bad(2, "--endpoint <url> is required", ["forwarding", "add", "shop", "x"]);
    await bad(2, "--filter must be a JSON object", ["forwarding", "add", "shop", "x", "--endpoint", receiver.url, "--filter", "{data.amount: 1}"]);
    await bad(2, "--filter must be a JSON object", ["forwarding", "add", "shop", "x", "--endpoint", receiver.url, "--filter", "[1]"]);
    await bad(2, "--transformation: cannot read", ["forwarding", "add", "shop", "x", "--endpoint", receiver.url, "--transformation", join(dir, "missing.js")]);
    await bad(2, "Give --filter or --no-filter, not both", ["forwarding", "update", "shop", "x", "--filter", "{}", "--no-filter"]);
    await bad(2, "Nothing to change", ["forwarding", "update", "shop", "x"]);
    await bad(1, /filter\.data\.amount\.\$gtt: unknown operator/, ["forwarding", "add", "shop", "x", "--endpoint", receiver.url, "--filter", '{"data.amount": {"$gtt": 1}}']);
    await bad(1, 'Partner "quiet" does not forward', ["forwarding", "add", "quiet", "x", "--endpoint", receiver.url]);
    await bad(1, 'No partner with id "nobody"', ["forwarding", "get", "nobody"]);
    await bad(1, 'No forward destination with id "shop/x"', ["forwarding", "remove", "shop", "x"]);
  });
});
