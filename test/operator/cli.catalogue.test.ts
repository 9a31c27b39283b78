/**
 * Issue 30 from the CLI: `webhooks event-types list|get|create|update|delete|import` (the event
 * catalogue) and `subscriptions create|update --filter --transformation`, the real
 * `bin/webhooks.js` run as a child process against the platform in this process; each refusal's
 * message and exit code (2: the command line; 1: the API); every request one of /openapi.json.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openTestDatabase } from "../support/databases.js";
import { startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "./harness.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BIN = `${ROOT}bin/webhooks.js`;

let t: TestPlatform;
let receiver: TestReceiver;
let closeDb: () => Promise<void>;
let dir: string;

/** Runs the CLI; `stdin`, when given, is written to its standard input. */
function cli(args: string[], stdin?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", WEBHOOKS_URL: t.baseUrl, ADMIN_TOKEN: t.token },
      timeout: 100_000,
    }, (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }));
    child.stdin?.end(stdin ?? "");
  });
}

async function refused(code: 1 | 2, message: string | RegExp, args: string[]): Promise<void> {
  const r = await cli(args);
  expect(r.code, r.stderr).toBe(code);
  if (typeof message === "string") expect(r.stderr).toContain(message);
  else expect(r.stderr).toMatch(message);
  expect(r.stderr).not.toMatch(/\bat \S+:\d+:\d+/); // no stack trace
}

beforeAll(async () => {
  const opened = await openTestDatabase("pglite");
  closeDb = opened.close;
  receiver = await startTestReceiver();
  dir = mkdtempSync(join(tmpdir(), "webhooks-cli-catalogue-"));
  t = await startTestPlatform(opened.db, {}, { workers: false });
}, 180_000);
afterAll(async () => {
  await t?.stop();
  await receiver?.close();
  await closeDb?.();
  rmSync(dir, { recursive: true, force: true });
});

describe("webhooks event-types", { timeout: 120_000 }, () => {
  it("creates, lists, shows, edits (a new schema is a new version), deprecates and deletes an event type", async () => {
    const schemaFile = join(dir, "order.paid.schema.json");
    writeFileSync(schemaFile, JSON.stringify({ type: "object", required: ["orderId"], properties: { orderId: { type: "string" }, amount: { type: "number" } } }));
    const created = await cli(["event-types", "create", "order.paid", "--description", "An order was paid", "--schema", schemaFile, "--example", '{"orderId":"o1","amount":5}', "--validation", "enforce"]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain("Added order.paid (version 1).");
    expect(created.stdout).toMatch(/validation\s+enforce/);

    const got = JSON.parse((await cli(["event-types", "get", "order.paid", "--json"])).stdout);
    expect(got).toMatchObject({ name: "order.paid", description: "An order was paid", version: 1, validation: "enforce", deprecated: false, examples: [{ orderId: "o1", amount: 5 }], schema: { required: ["orderId"] } });

    // The schema from standard input: a new version.
    const updated = await cli(["event-types", "update", "order.paid", "--schema", "-", "--deprecated", "on", "--json"], JSON.stringify({ type: "object" }));
    expect(updated.code, updated.stderr).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({ version: 2, deprecated: true, schema: { type: "object" } });

    await cli(["event-types", "create", "order.refunded"]);
    const listed = await cli(["event-types", "list"]);
    expect(listed.stdout).toMatch(/order\.paid\s+2\s+enforce\s+yes\s+yes\s+An order was paid/);
    expect(listed.stdout).toContain("order.refunded");
    expect(JSON.parse((await cli(["event-types", "list", "--no-deprecated", "--json"])).stdout).map((e: { name: string }) => e.name)).toEqual(["order.refunded"]);

    const removed = await cli(["event-types", "delete", "order.refunded"]);
    expect(removed.stdout).toBe("Removed order.refunded from the catalogue.\n");
    await refused(1, "404", ["event-types", "get", "order.refunded"]);
  });

  it("imports an OpenAPI document's webhooks from a file, and again without overwriting", async () => {
    const doc = join(dir, "openapi.json");
    writeFileSync(doc, JSON.stringify({
      openapi: "3.1.0", info: { title: "t", version: "1" },
      webhooks: {
        "invoice.created": { post: { summary: "An invoice", requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/Invoice" } } } } } },
      },
      components: { schemas: { Invoice: { type: "object", properties: { id: { type: "string" } } } } },
    }));
    const imported = await cli(["event-types", "import", doc, "--validation", "warn"]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toBe(`Imported from ${doc}: created invoice.created; updated none; unchanged none.\n`);
    expect(JSON.parse((await cli(["event-types", "get", "invoice.created", "--json"])).stdout)).toMatchObject({ validation: "warn", description: "An invoice", schema: { $ref: "#/$defs/Invoice", $defs: { Invoice: { type: "object", properties: { id: { type: "string" } } } } } });
    const again = JSON.parse((await cli(["event-types", "import", doc, "--no-overwrite", "--json"])).stdout);
    expect(again).toMatchObject({ created: [], updated: [] });
  });

  it("refuses bad input with a precise message", async () => {
    await refused(2, "--validation must be off, warn or enforce", ["event-types", "create", "x.y", "--validation", "strict"]);
    await refused(2, "--example must be JSON", ["event-types", "create", "x.y", "--example", "{nope"]);
    await refused(2, /--schema: cannot read \S*missing\.json \(ENOENT\)/, ["event-types", "create", "x.y", "--schema", join(dir, "missing.json")]);
    writeFileSync(join(dir, "openapi.yaml"), "openapi: 3.1.0\n");
    await refused(2, "the OpenAPI document must be JSON", ["event-types", "import", join(dir, "openapi.yaml")]);
    await refused(2, "Nothing to change", ["event-types", "update", "x.y"]);
    await refused(2, "--deprecated takes on or off", ["event-types", "update", "x.y", "--deprecated", "yes"]);
    writeFileSync(join(dir, "bad.schema.json"), JSON.stringify({ type: "nonsense" }));
    await refused(1, /400 invalid_request.*schema/, ["event-types", "create", "bad.schema", "--schema", join(dir, "bad.schema.json")]);
  });
});

describe("webhooks subscriptions --filter --transformation", { timeout: 120_000 }, () => {
  it("creates a subscription with a filter and a transformation from a file, then changes and removes them", async () => {
    const source = join(dir, "slack.js");
    writeFileSync(source, "(event) => ({ body: { text: `paid ${event.data.amount}` } })\n");
    const created = await cli(["subscriptions", "create", "--endpoint", `${receiver.url}/s`, "--event", "order.*", "--filter", '{"data.amount": {"$gt": 100}}', "--transformation", source, "--json"]);
    expect(created.code, created.stderr).toBe(0);
    const sub = JSON.parse(created.stdout);
    expect(sub).toMatchObject({ filter: { "data.amount": { $gt: 100 } }, transformation: "(event) => ({ body: { text: `paid ${event.data.amount}` } })\n" });
    const shown = await cli(["subscriptions", "get", sub.id]);
    expect(shown.stdout).toMatch(/filter\s+\{"data\.amount":\{"\$gt":100\}\}/);
    expect(shown.stdout).toMatch(/transformation\s+1 line\(s\)/);

    // The transformation from standard input.
    const changed = await cli(["subscriptions", "update", sub.id, "--transformation", "-", "--filter", '{"type": "order.paid"}', "--json"], "(e) => null");
    expect(changed.code, changed.stderr).toBe(0);
    expect(JSON.parse(changed.stdout)).toMatchObject({ filter: { type: "order.paid" }, transformation: "(e) => null" });

    const cleared = await cli(["subscriptions", "update", sub.id, "--no-filter", "--no-transformation", "--json"]);
    expect(JSON.parse(cleared.stdout)).toMatchObject({ filter: null, transformation: null });
  });

  it("refuses a bad filter or transformation: on the command line (2) or as the API says (1)", async () => {
    const base = ["subscriptions", "create", "--endpoint", "https://example.com/h", "--event", "order.*"];
    await refused(2, "--filter must be a JSON object", [...base, "--filter", "{data.amount: 1}"]);
    await refused(2, "--filter must be a JSON object", [...base, "--filter", "[1]"]);
    await refused(2, /--transformation: cannot read \S*nope\.js \(ENOENT\)/, [...base, "--transformation", join(dir, "nope.js")]);
    await refused(2, "standard input is empty", [...base, "--transformation", "-"]);
    await refused(1, /400 invalid_request.*filter/, [...base, "--filter", '{"data.amount": {"$between": 1}}']);
    writeFileSync(join(dir, "broken.js"), "(e) => {");
    await refused(1, /400 invalid_request.*transformation: SyntaxError/, [...base, "--transformation", join(dir, "broken.js")]);
    await refused(2, "Give --filter or --no-filter, not both", ["subscriptions", "update", "sub_x", "--filter", "{}", "--no-filter"]);
    await refused(2, "Give --transformation or --no-transformation, not both", ["subscriptions", "update", "sub_x", "--transformation", "-", "--no-transformation"]);
  });
});

describe("the catalogue and content commands use only documented operations", () => {
  it("every request the CLI made is an operation of /openapi.json", async () => {
    expect(t.requests.length).toBeGreaterThan(15);
    expect(await t.undocumentedRequests()).toEqual([]);
  });
});
