/**
 * Must show 4: the real `bin/webhooks.js`, run as a child process against the platform in this
 * process: each command's happy path, and its message and exit code on bad input.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { publicKeyText } from "../../shared/crypto/ed25519.js";
import { generateSecret, sign } from "../../shared/outbound/signature.js";
import { openTestDatabase } from "../support/databases.js";
import { eventually, makeDeadLetter, startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "./harness.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BIN = `${ROOT}bin/webhooks.js`;

interface Run { code: number; stdout: string; stderr: string }

let t: TestPlatform;
let receiver: TestReceiver;
let closeDb: () => Promise<void>;
const PARTNER_SECRET = generateSecret();

function cli(args: string[], env: Record<string, string> = {}, timeoutMs = 100_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", WEBHOOKS_URL: t.baseUrl, ADMIN_TOKEN: t.token, ...env },
      timeout: timeoutMs,
    }, (error, stdout, stderr) => {
      const killed = error && typeof error.code !== "number" ? `\n[killed: ${error.signal ?? error.message}]` : "";
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr: stderr + killed });
    });
  });
}

/** Runs the CLI and checks it refused: exit `code` and `message` on stderr (a string it contains, or a pattern). */
async function refused(code: 1 | 2, message: string | RegExp, args: string[], env: Record<string, string> = {}): Promise<void> {
  const r = await cli(args, env);
  expect(r.code, r.stderr).toBe(code);
  if (typeof message === "string") expect(r.stderr).toContain(message);
  else expect(r.stderr).toMatch(message);
}

async function quarantineOne(id: string): Promise<string> {
  const body = JSON.stringify({ type: "order.paid", data: {} }); // no order_id: rejected, quarantined
  const ts = Math.floor(Date.now() / 1000);
  const res = await fetch(`${t.baseUrl}/webhooks/shop`, {
    method: "POST",
    headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": `v1,${sign(PARTNER_SECRET, id, ts, body)}` },
    body,
  });
  const { inboxId } = (await res.json()) as { inboxId: string };
  await eventually(`${inboxId} quarantined`, async () => (await t.api("GET", `/inbox/${inboxId}`)).status === "quarantined");
  return inboxId;
}

beforeAll(async () => {
  const opened = await openTestDatabase("pglite");
  closeDb = opened.close;
  receiver = await startTestReceiver();
  t = await startTestPlatform(opened.db, { PARTNERS: JSON.stringify({ shop: { scheme: "standard-webhooks", secrets: [PARTNER_SECRET] } }) });
}, 180_000);
afterAll(async () => {
  await t?.stop();
  await receiver?.close();
  await closeDb?.();
});

describe("webhooks (overview and usage errors)", { timeout: 120_000 }, () => {
  it("without --url or WEBHOOKS_URL, finds the platform on PORT as npm start does", async () => {
    const r = await cli(["subscriptions", "list", "--json"], { WEBHOOKS_URL: "", PORT: new URL(t.baseUrl).port });
    expect(r.code, r.stderr).toBe(0);
    expect(Array.isArray(JSON.parse(r.stdout))).toBe(true);
  });

  it("--help lists every command and exits 0; no command exits 2", async () => {
    const help = await cli(["--help"]);
    expect(help.code).toBe(0);
    for (const c of ["dlq list", "dlq replay", "inbox list", "inbox replay", "events send", "subscriptions create", "subscriptions enable", "synth", "deploy", "compare"]) {
      expect(help.stdout).toContain(c);
    }
    expect((await cli([])).code).toBe(2);
  });

  it("an unknown command or action exits 2 and says what exists", async () => {
    await refused(2, 'unknown command "frobnicate"', ["frobnicate"]);
    await refused(2, 'unknown action "purge"; use one of: list, replay', ["dlq", "purge"]);
  });

  it("an unknown option exits 2 and names it", async () => {
    const r = await cli(["dlq", "list", "--colour"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--colour");
    expect(r.stderr).toContain("webhooks dlq list --help");
  });

  it("a missing token exits 2; a wrong token and an unreachable server exit 1 with what to do", async () => {
    await refused(2, "pass --token or set ADMIN_TOKEN", ["dlq", "list"], { ADMIN_TOKEN: "" });
    await refused(1, "refused the token (401)", ["dlq", "list", "--token", "not-the-token-at-all"]);
    await refused(1, "Could not reach the platform at http://127.0.0.1:9", ["dlq", "list", "--url", "http://127.0.0.1:9"]);
    await refused(2, "--url must be an http(s) URL", ["dlq", "list", "--url", "ftp://x"]);
  });
});

describe("webhooks events", { timeout: 120_000 }, () => {
  it("send enqueues one event for the subscriptions that want it; again, it changes nothing", async () => {
    const sub = await t.api("POST", "/subscriptions", { url: `${receiver.url}/events-cli`, eventTypes: ["cli.*"] }) as { id: string };
    const r = await cli(["events", "send", "--type", "cli.created", "--id", "cli-1", "--data", '{"n":1}']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("Enqueued cli-1: 1 delivery.\n");
    const again = await cli(["events", "send", "--type", "cli.created", "--id", "cli-1", "--data", '{"n":1}', "--json"]);
    expect(JSON.parse(again.stdout)).toEqual({ eventId: "cli-1", created: false, deliveries: [{ id: `cli-1:${sub.id}`, subscriptionId: sub.id, status: expect.any(String) }] });
  });

  it("send --file enqueues a batch in one transaction", async () => {
    await t.api("POST", "/subscriptions", { url: `${receiver.url}/events-cli-batch`, eventTypes: ["cli.batch"] });
    const dir = mkdtempSync(join(tmpdir(), "webhooks-cli-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, "events.json");
    writeFileSync(file, JSON.stringify([{ id: "cli-b1", type: "cli.batch", data: 1 }, { id: "cli-b2", type: "cli.batch", data: 2 }]));
    const r = await cli(["events", "send", "--file", file]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/cli-b1\s+yes/);
    expect(r.stdout).toMatch(/cli-b2\s+yes/);
    writeFileSync(file, JSON.stringify([{ id: "cli-b3", type: "cli.batch", data: 3 }, { id: "cli-b4", type: "cli batch", data: 4 }]));
    await refused(1, "events[1]: Invalid event: type", ["events", "send", "--file", file]);
    // Nothing of the batch, though cli-b3 was valid and has a subscription that wants it.
    expect(await t.api("GET", "/deliveries?eventId=cli-b3")).toEqual({ deliveries: [], next: null });
    const first = await t.api("GET", "/deliveries?eventId=cli-b1") as { deliveries: { eventId: string }[] };
    expect(first.deliveries.length).toBeGreaterThan(0);
  });

  it("send refuses missing and invalid input with the reason", async () => {
    await refused(2, "--type is required", ["events", "send", "--data", "{}"]);
    await refused(2, "--data is not JSON", ["events", "send", "--type", "a.b", "--data", "{nope"]);
    await refused(2, "use it without --type", ["events", "send", "--file", "x.json", "--type", "a.b"]);
    await refused(2, "Cannot read --file /nonexistent/events.json: ENOENT", ["events", "send", "--file", "/nonexistent/events.json"]);
    await refused(1, /failed with 400 invalid_request: Invalid event: type/, ["events", "send", "--type", "order paid"]);
  });
});

describe("webhooks subscriptions", { timeout: 120_000 }, () => {
  let id = "";

  it("create prints the new subscription with its secret; --json gives the API's object", async () => {
    const r = await cli(["subscriptions", "create", "--endpoint", `${receiver.url}/subs`, "--event", "order.*", "--event", "invoice.paid", "--max-attempts", "3", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const sub = JSON.parse(r.stdout);
    expect(sub).toMatchObject({ url: `${receiver.url}/subs`, eventTypes: ["order.*", "invoice.paid"], maxAttempts: 3, status: "active" });
    expect(sub.secrets[0]).toMatch(/^whsec_/);
    id = sub.id;
    const text = await cli(["subscriptions", "create", "--endpoint", `${receiver.url}/subs2`, "--event", "order.*"]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/Created sub_\S+\. Keep the secret/);
    expect(text.stdout).toMatch(/secrets\s+whsec_/);
  });

  it("create refuses missing and invalid input with the reason", async () => {
    await refused(2, "Give --endpoint <url> (where deliveries are POSTed) or --destination <kind>", ["subscriptions", "create", "--event", "order.*"]);
    await refused(2, "at least one --event", ["subscriptions", "create", "--endpoint", "https://example.com"]);
    await refused(1, /failed with 400 invalid_request: Invalid subscription: url: must be an absolute URL/, ["subscriptions", "create", "--endpoint", "not a url", "--event", "order.*"]);
    await refused(2, "--max-attempts must be an integer from 1 to 100", ["subscriptions", "create", "--endpoint", "https://example.com", "--event", "a.b", "--max-attempts", "0"]);
    await refused(2, "Cannot read --secret-file /nonexistent/secret: ENOENT", ["subscriptions", "create", "--endpoint", "https://example.com", "--event", "a.b", "--secret-file", "/nonexistent/secret"]);
  });

  it("list shows each subscription's health; --status filters and is validated", async () => {
    const r = await cli(["subscriptions", "list"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ID\s+HEALTH/);
    expect(r.stdout).toMatch(new RegExp(`${id}\\s+healthy`));
    const json = JSON.parse((await cli(["subscriptions", "list", "--json", "--status", "active"])).stdout);
    expect(json.map((s: { id: string }) => s.id)).toContain(id);
    await refused(2, "--status must be active, degraded or disabled", ["subscriptions", "list", "--status", "sleepy"]);
  });

  it("get shows one; an unknown id exits 1 with the API's message; a missing id exits 2", async () => {
    const r = await cli(["subscriptions", "get", id]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/health\s+healthy/);
    expect(r.stdout).toContain("order.*, invoice.paid");
    await refused(1, "failed with 404 not_found", ["subscriptions", "get", "sub_nope"]);
    await refused(2, "Missing argument: webhooks subscriptions get <subscription id>", ["subscriptions", "get"]);
  });

  it("enable re-enables a disabled subscription", async () => {
    await t.platform.db.query("UPDATE outbound_subscriptions SET status = 'disabled', disabled_reason = 'test' WHERE id = $1", [id]);
    const r = await cli(["subscriptions", "enable", id]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`Enabled ${id}: health healthy`);
    expect((await t.api("GET", `/subscriptions/${id}`)).status).toBe("active");
    expect((await cli(["subscriptions", "enable", "sub_nope"])).code).toBe(1);
  });
});

describe("webhooks subscriptions update | pause | resume | delete | test, events list | get | resend", { timeout: 120_000 }, () => {
  it("edits, pauses, resumes, tests and deletes a subscription; lists, shows and resends events", async () => {
    receiver.answer = 200;
    const since = new Date(Date.now() - 1000).toISOString();
    await t.api("POST", "/events", { id: "cli-past", type: "clix.a", data: { past: true } });
    const created = await cli(["subscriptions", "create", "--endpoint", `${receiver.url}/clix`, "--event", "clix.*", "--header", "x-api-key=k1", "--backfill-since", since, "--json"]);
    expect(created.code, created.stderr).toBe(0);
    const sub = JSON.parse(created.stdout);
    expect(sub).toMatchObject({ headers: { "x-api-key": "k1" }, backfilled: 1 });
    const updated = await cli(["subscriptions", "update", sub.id, "--max-attempts", "3", "--header", "x-api-key=k2", "--description", "edited"]);
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout).toContain("Updated");
    expect(await t.api("GET", `/subscriptions/${sub.id}`)).toMatchObject({ maxAttempts: 3, headers: { "x-api-key": "k2" }, description: "edited" });
    await refused(2, "Nothing to change", ["subscriptions", "update", sub.id]);
    await refused(2, "--header must be name=value", ["subscriptions", "update", sub.id, "--header", "oops"]);
    await refused(1, "webhook-id", ["subscriptions", "update", sub.id, "--header", "webhook-id=x"]);

    expect((await cli(["subscriptions", "pause", sub.id])).stdout).toContain(`Paused ${sub.id}`);
    expect((await t.api("GET", `/subscriptions/${sub.id}`)).paused).toBe(true);
    expect((await cli(["subscriptions", "resume", sub.id])).stdout).toContain(`Resumed ${sub.id}`);
    const test = await cli(["subscriptions", "test", sub.id, "--json"]);
    expect(test.code, test.stderr).toBe(0);
    const testDelivery = JSON.parse(test.stdout).deliveries[0].id;
    await eventually("the test event received with the new header", async () => receiver.received.find((r) => r.headers["webhook-id"] === testDelivery)?.headers["x-api-key"] === "k2");

    await t.api("POST", "/events", { id: "cli-ev", type: "clix.b", data: { n: 1 } });
    const listed = await cli(["events", "list", "--type", "clix.b", "--since", since]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain("cli-ev");
    await refused(2, "--since must be an ISO 8601 time", ["events", "list", "--since", "yesterday"]);
    await eventually("cli-ev delivered", async () => (await t.api("GET", "/events/cli-ev")).deliveries.every((d: { status: string }) => d.status === "delivered"));
    const shown = await cli(["events", "get", "cli-ev"]);
    expect(shown.stdout).toContain(`cli-ev:${sub.id}`);
    expect(shown.stdout).toContain("delivered");
    const resent = await cli(["events", "resend", "cli-ev", "--subscription", sub.id, "--json"]);
    expect(resent.code, resent.stderr).toBe(0);
    expect(JSON.parse(resent.stdout).deliveries).toHaveLength(1);
    await refused(1, "404", ["events", "resend", "no-such-event"]);

    const deleted = await cli(["subscriptions", "delete", sub.id]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toMatch(/Deleted .* cancelled/);
    await refused(1, "404", ["subscriptions", "get", sub.id]);
  });

  it("dlq replay --all narrowed by subscription and time", async () => {
    receiver.answer = ({ path }) => (path.startsWith("/clidead") ? 400 : 200);
    const a = await makeDeadLetter(t, `${receiver.url}/clidead-a`, "cli-narrow-a");
    const b = await makeDeadLetter(t, `${receiver.url}/clidead-b`, "cli-narrow-b");
    receiver.answer = 200;
    await refused(2, "--subscription narrows --all", ["dlq", "replay", a.deliveryId, "--subscription", a.subscriptionId]);
    const r = await cli(["dlq", "replay", "--all", "--subscription", a.subscriptionId, "--since", "2000-01-01T00:00:00Z", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).ids).toEqual([a.deliveryId]);
    expect((await t.api("GET", `/deliveries/${encodeURIComponent(b.deliveryId)}`)).status).toBe("dead");
    // Leave no dead letter behind for the dlq tests that count them.
    await t.api("POST", `/dead-letters/${encodeURIComponent(b.deliveryId)}/replay`);
    for (const id of [a.deliveryId, b.deliveryId]) await eventually(`${id} delivered`, async () => (await t.api("GET", `/deliveries/${encodeURIComponent(id)}`)).status === "delivered");
  });
});

describe("webhooks dlq", { timeout: 120_000 }, () => {
  it("list shows dead letters with their reason; replay <id> sends one back and it is delivered", async () => {
    receiver.answer = ({ path }) => (path.startsWith("/dlq") ? 422 : 200);
    const { deliveryId } = await makeDeadLetter(t, `${receiver.url}/dlq-one`, "cli-one");
    const list = await cli(["dlq", "list"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(deliveryId);
    expect(list.stdout).toMatch(/permanent/);
    const json = JSON.parse((await cli(["dlq", "list", "--json"])).stdout);
    expect(json.find((d: { id: string }) => d.id === deliveryId)).toMatchObject({ status: "dead", eventType: "test.cli_one" });

    receiver.answer = 200;
    const r = await cli(["dlq", "replay", deliveryId]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("Replayed 1 dead letter.");
    await eventually("the replayed delivery", async () => (await t.api("GET", `/deliveries/${encodeURIComponent(deliveryId)}`)).status === "delivered");
  });

  it("replay --all replays every dead letter with progress on stderr", async () => {
    receiver.answer = ({ path }) => (path.startsWith("/dlq") ? 422 : 200);
    const a = await makeDeadLetter(t, `${receiver.url}/dlq-a`, "cli-a");
    const b = await makeDeadLetter(t, `${receiver.url}/dlq-b`, "cli-b");
    receiver.answer = 200;
    const r = await cli(["dlq", "replay", "--all", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("replaying every dead letter");
    expect(r.stderr).toMatch(/replayed 2\n/);
    expect(JSON.parse(r.stdout)).toMatchObject({ replayed: 2, failed: [] });
    expect(JSON.parse(r.stdout).ids.sort()).toEqual([a.deliveryId, b.deliveryId].sort());
  });

  it("replay refuses bad input: nothing, ids with --all, an id that is not a dead letter", async () => {
    await refused(2, "Give the id of at least one dead letter, or --all.", ["dlq", "replay"]);
    await refused(2, "either ids or --all", ["dlq", "replay", "x", "--all"]);
    const unknown = await cli(["dlq", "replay", "nope:nope"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toContain("Replayed 0 dead letters; 1 failed.");
    expect(unknown.stdout).toContain("404 not_found");
    await refused(2, "--limit must be an integer from 1 to 1000", ["dlq", "list", "--limit", "5000"]);
  });
});

describe("webhooks inbox", { timeout: 120_000 }, () => {
  it("list shows quarantined entries with their reason; replay <id> puts one back on the normal path", async () => {
    const inboxId = await quarantineOne("cli-q-1");
    const list = await cli(["inbox", "list"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(inboxId);
    expect(list.stdout).toContain("no order id in this event");
    const r = await cli(["inbox", "replay", inboxId]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("Replayed 1 inbox entry.");
    const entry = await t.api("GET", `/inbox/${inboxId}`);
    expect(entry.replays).toBe(1);
  });

  it("replay --all replays every quarantined entry", async () => {
    const a = await quarantineOne("cli-q-2");
    const b = await quarantineOne("cli-q-3");
    const r = await cli(["inbox", "replay", "--all", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).ids).toEqual(expect.arrayContaining([a, b]));
    expect(r.stderr).toContain("replaying every inbox entry");
  });

  it("refuses a bad status, a bad id and a missing id", async () => {
    await refused(2, "--status must be one of pending, deferred, failed, processed, quarantined", ["inbox", "list", "--status", "lost"]);
    const bad = await cli(["inbox", "replay", "not-a-uuid"]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain("Inbox entry ids are UUIDs");
    expect((await cli(["inbox", "replay"])).code).toBe(2);
  });
});

describe("webhooks synth | deploy | compare", { timeout: 120_000 }, () => {
  it("refuse an unknown cloud, a missing cloud and --json", async () => {
    await refused(2, 'Unknown cloud "mars": use one of aws, azure, gcp.', ["deploy", "mars"]);
    const none = await cli(["deploy"]);
    expect(none.code).toBe(2);
    await refused(2, "--json is not available for `webhooks synth`", ["synth", "--json"]);
  });

  it("deploy runs the preflight first and stops with its verdict when prerequisites are missing", async () => {
    // No cloud credentials here (HOME points nowhere): the preflight refuses before anything runs.
    const r = await cli(["deploy", "aws"], { HOME: "/nonexistent" }, 110_000);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("Cannot deploy aws yet");
    expect(r.stdout).toContain("no AWS credentials");
    expect(r.stderr).toContain("Deploying aws failed (exit 1): fix what is reported above");
  }, 120_000);

  it("synth writes the stack's Terraform JSON", async () => {
    const out = `${ROOT}cdktf.out/stacks/webhooks-aws/cdk.tf.json`;
    const before = existsSync(out) ? statSync(out).mtimeMs : 0;
    const r = await cli(["synth", "aws"], { WEBHOOKS_SYNTH_PLACEHOLDERS: "1" }, 230_000);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.stderr).toContain("Synthesized into cdktf.out/stacks/webhooks-aws/cdk.tf.json");
    expect(statSync(out).mtimeMs).toBeGreaterThan(before);
    expect(Object.keys(JSON.parse(readFileSync(out, "utf8")).resource ?? {})).toContain("aws_sqs_queue");
  }, 240_000);

  it("compare prints the side-by-side table and writes it as Markdown where asked", async () => {
    const target = join(mkdtempSync(join(tmpdir(), "webhooks-compare-")), "comparison.md");
    const r = await cli(["compare", "--markdown", target], {}, 230_000);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    for (const cloud of ["aws", "azure", "gcp"]) expect(r.stdout.toLowerCase()).toContain(cloud);
    expect(readFileSync(target, "utf8")).toContain("|");
  }, 240_000);

  it("help of each stacks command says what it runs", async () => {
    expect((await cli(["synth", "--help"])).stdout).toContain("npm run synth");
    expect((await cli(["deploy", "--help"])).stdout).toContain("stacks/deploy.ts");
    expect((await cli(["compare", "--help"])).stdout).toContain("stacks/compare.ts");
  });
});

describe("webhooks applications | keys | audit", { timeout: 120_000 }, () => {
  it("creates an application, a scoped key that sees only it, lists and revokes keys, reads the audit log, deletes the application", async () => {
    const created = await cli(["applications", "create", "CLI tenant", "--json"]);
    expect(created.code, created.stderr).toBe(0);
    const app = JSON.parse(created.stdout);
    expect(app.id).toMatch(/^app_/);
    const listed = await cli(["apps", "list"]);
    expect(listed.stdout).toContain(app.id);
    expect(listed.stdout).toContain("app_default");

    const made = await cli(["keys", "create", "--application", app.id, "--description", "cli portal"]);
    expect(made.code, made.stderr).toBe(0);
    const key = /(whk_[0-9a-f]{16}_[A-Za-z0-9_-]{43})/.exec(made.stdout)![1]!;
    expect(made.stdout).toContain(`scope ${app.id} (read-write)`);
    const keyId = `key_${key.slice(4, 20)}`;

    // With the key (WEBHOOKS_API_KEY), subscriptions and events land in its application only.
    const asKey = { WEBHOOKS_API_KEY: key, ADMIN_TOKEN: "" };
    const sub = await cli(["subscriptions", "create", "--endpoint", `${receiver.url}/cli-tenant`, "--event", "tenant.*", "--json"], asKey);
    expect(sub.code, sub.stderr).toBe(0);
    expect(JSON.parse(sub.stdout).applicationId).toBe(app.id);
    const mine = await cli(["subscriptions", "list", "--json"], asKey);
    expect(JSON.parse(mine.stdout).map((s: { applicationId: string }) => s.applicationId)).toEqual([app.id]);
    await refused(1, "403 forbidden", ["inbox", "list"], asKey);
    await refused(1, "404 not_found", ["events", "send", "--type", "tenant.x", "--application", "app_default"], asKey);
    const sent = await cli(["events", "send", "--type", "tenant.x", "--data", "{}", "--json"], asKey);
    expect(JSON.parse(sent.stdout).deliveries.map((d: { subscriptionId: string }) => d.subscriptionId)).toEqual([JSON.parse(sub.stdout).id]);

    const keys = await cli(["keys", "list", "--application", app.id, "--json"]);
    expect(JSON.parse(keys.stdout).map((k: { id: string }) => k.id)).toEqual([keyId]);
    const log = await cli(["audit", "--actor", keyId]);
    expect(log.code, log.stderr).toBe(0);
    expect(log.stdout).toContain("createSubscription");
    expect(log.stdout).toContain("sendEvent");

    await refused(2, "not the key itself", ["keys", "revoke", key]);
    const revoked = await cli(["keys", "revoke", keyId]);
    expect(revoked.stdout).toContain(`Revoked ${keyId}`);
    await refused(1, "refused the token (401)", ["subscriptions", "list"], asKey);
    expect((await cli(["keys", "list", "--active", "--json"])).stdout).not.toContain(keyId);

    await refused(1, "409 application_in_use", ["applications", "delete", app.id]);
    const deleted = await cli(["applications", "delete", app.id, "--cascade"]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toContain("1 subscription(s) deleted");
    expect((await cli(["applications", "list"])).stdout).not.toContain(app.id);
  });

  it("a read-only key reads but cannot change anything; bad input is refused with the reason", async () => {
    const made = JSON.parse((await cli(["keys", "create", "--operator", "--read-only", "--json"])).stdout);
    const asReader = { WEBHOOKS_API_KEY: made.key, ADMIN_TOKEN: "" };
    expect((await cli(["subscriptions", "list"], asReader)).code).toBe(0);
    await refused(1, "403 read_only", ["applications", "create", "nope"], asReader);
    await refused(1, "404 not_found", ["keys", "create", "--application", "app_missing"]);
    await refused(2, "Missing argument", ["applications", "create"]);
    await refused(2, "Missing argument", ["keys", "revoke"]);
    await refused(1, "404 not_found", ["keys", "revoke", "key_0000000000000000"]);
    await refused(2, "--limit must be an integer", ["audit", "--limit", "0"]);
  });
});

describe("webhooks subscriptions keys / skip-key (ordered delivery, issue 15)", { timeout: 120_000 }, () => {
  it("lists an ordered subscription's blocked key, refuses a skip naming the wrong dead letter, skips it, and the key moves on", async () => {
    receiver.answer = ({ path }) => (path.startsWith("/ordkey") ? 400 : 200);
    const sub = await t.api("POST", "/subscriptions", { url: `${receiver.url}/ordkey`, eventTypes: ["cli.ordered"], ordered: true, maxAttempts: 1 });
    await t.api("POST", "/events/batch", { events: [1, 2].map((n) => ({ id: `cli-ord-${n}`, type: "cli.ordered", data: n, orderingKey: "acct/7" })) });
    const first = `cli-ord-1:${sub.id}`;
    await eventually("the key blocked", async () => (await t.api("GET", `/subscriptions/${sub.id}/ordering-keys`)).orderingKeys[0]?.blocked === true);
    receiver.answer = 200;
    const list = await cli(["subscriptions", "keys", sub.id]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/acct\/7\s+blocked\s+1\s+/);
    expect(list.stdout).toContain(first);
    expect(JSON.parse((await cli(["subs", "keys", sub.id, "--blocked", "--json"])).stdout).orderingKeys).toMatchObject([{ orderingKey: "acct/7", blocked: true, waiting: 1 }]);
    await refused(1, "409 key_not_blocked", ["subscriptions", "skip-key", sub.id, "acct/7", "--delivery", `cli-ord-2:${sub.id}`]);
    await refused(2, "", ["subscriptions", "skip-key", sub.id]);
    const skip = await cli(["subscriptions", "skip-key", sub.id, "acct/7", "--delivery", first]);
    expect(skip.code, skip.stderr).toBe(0);
    expect(skip.stdout).toContain(`Skipped ${first} on key acct/7.`);
    expect(skip.stdout).toContain(`cli-ord-2:${sub.id}`);
    await eventually("the next one delivered", async () => (await t.api("GET", `/deliveries/${encodeURIComponent(`cli-ord-2:${sub.id}`)}`)).status === "delivered");
    expect((await t.api("GET", `/deliveries/${encodeURIComponent(first)}`)).status).toBe("dead");
    // Leave no dead letter behind: replayed, it goes (the key is idle).
    await t.api("POST", `/dead-letters/${encodeURIComponent(first)}/replay`);
    await eventually("the replayed one delivered", async () => (await t.api("GET", `/deliveries/${encodeURIComponent(first)}`)).status === "delivered");
    expect((await cli(["subscriptions", "keys", sub.id])).stdout).toContain("No ordering key has work.");
    await refused(1, "404 not_found", ["subscriptions", "keys", "sub_missing"]);
  });
});

describe("webhooks subscriptions --signature-scheme / rotate-secret / public-keys (v1a, issue 17)", { timeout: 120_000 }, () => {
  it("creates a v1a subscription, shows its public key, moves a v1 one to v1a by rotation; a bad scheme is a usage error", async () => {
    const made = await cli(["subscriptions", "create", "--endpoint", `${receiver.url}/v1a`, "--event", "cli.v1a", "--signature-scheme", "v1a", "--json"]);
    expect(made.code, made.stderr).toBe(0);
    const v1a = JSON.parse(made.stdout) as { id: string; secrets: string[] };
    expect(v1a.secrets).toHaveLength(1);
    expect(v1a.secrets[0]).toMatch(/^whsk_/);
    // The key shown is the one that verifies what the subscription signs with.
    const keys = await cli(["subscriptions", "public-keys", v1a.id]);
    expect(keys.code, keys.stderr).toBe(0);
    expect(keys.stdout).toBe(`${publicKeyText(v1a.secrets[0]!)}\n`);

    const plain = JSON.parse((await cli(["subscriptions", "create", "--endpoint", `${receiver.url}/v1`, "--event", "cli.v1", "--json"])).stdout) as { id: string; secrets: string[] };
    expect(plain.secrets[0]).toMatch(/^whsec_/);
    expect((await cli(["subscriptions", "public-keys", plain.id])).stdout).toContain("signs with v1 (HMAC) only");
    const rotated = await cli(["subscriptions", "rotate-secret", plain.id, "--signature-scheme", "v1a"]);
    expect(rotated.code, rotated.stderr).toBe(0);
    const shown = rotated.stdout.match(/secrets \(newest first\): (\S+) (\S+)/);
    expect(shown?.slice(1)).toEqual([expect.stringMatching(/^whsk_/), plain.secrets[0]]); // the new one first, the v1 one kept
    expect(JSON.parse((await cli(["subs", "public-keys", plain.id, "--json"])).stdout)).toEqual({ id: plain.id, publicKeys: [publicKeyText(shown![1]!)] });

    await refused(2, "--signature-scheme must be v1", ["subscriptions", "create", "--endpoint", `${receiver.url}/x`, "--event", "x", "--signature-scheme", "ed25519"]);
    await refused(2, "--signature-scheme must be v1", ["subscriptions", "rotate-secret", plain.id, "--signature-scheme", "v2"]);
    await refused(2, "not both", ["subscriptions", "create", "--endpoint", `${receiver.url}/x`, "--event", "x", "--secret", generateSecret(), "--signature-scheme", "v1a"]);
    await refused(2, "Missing argument", ["subscriptions", "public-keys"]);
    await refused(1, "404 not_found", ["subscriptions", "public-keys", "sub_missing"]);
    await refused(1, "404 not_found", ["subscriptions", "rotate-secret", "sub_missing"]);
  });
});

describe("webhooks uses only documented operations", () => {
  it("every request the CLI (and this test) made is an operation of /openapi.json", async () => {
    expect(t.requests.length).toBeGreaterThan(20);
    expect(await t.undocumentedRequests()).toEqual([]);
  });
});
