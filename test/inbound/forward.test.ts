/**
 * Must-show: forwarding with no code. A partner with `forward` has each verified, de-duplicated
 * event handed on through the outbox: a receiver verifying with the reference `standardwebhooks`
 * library gets each partner event id exactly once (re-sent and concurrent repeats are not forwarded
 * twice), with the partner's original bytes and who sent it in headers; and nothing is lost when
 * the relay process is killed while forwarding (PostgreSQL: a relay in its own process).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ensureForwardSubscriptions, FORWARD_HEADERS, forwardSubscriptionId } from "../../shared/inbound/forward.js";
import { ingest, type IngestDeps } from "../../shared/inbound/ingest.js";
import { inlineMessage } from "../../shared/cloud/inboundMessage.js";
import { processInbound } from "../../shared/cloud/processInbound.js";
import { createDispatchHandler } from "../../shared/inbound/dispatch.js";
import { InboxProcessor } from "../../shared/inbound/processor.js";
import { parsePartners } from "../../shared/inbound/verify/index.js";
import { getEvent, listEvents } from "../../shared/outbound/events.js";
import { generateSecret } from "../../shared/outbound/signature.js";
import { createRelay } from "../../shared/outbound/relay.js";
import { createTransport } from "../../shared/outbound/transport.js";
import { describeEachBackend } from "../support/databases.js";
import { waitFor } from "../outbound/support/receiver.js";
import { resetInbound, SECRET, signed } from "./helpers.js";

interface Got { headers: IncomingHttpHeaders; raw: Buffer }

/** Our internal service: keeps the raw bytes and headers of every request, answers 200. */
async function startService(): Promise<{ url: string; got: Got[]; close(): Promise<void> }> {
  const got: Got[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => { got.push({ headers: req.headers, raw: Buffer.concat(chunks) }); res.writeHead(200).end(); });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/from-partners`,
    got,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** What the service saw, verified with the reference library: partner event id → requests. */
function verifiedByEventId(got: Got[], secret: string): Map<string, Got[]> {
  const wh = new Webhook(secret);
  const by = new Map<string, Got[]>();
  for (const g of got) {
    wh.verify(g.raw.toString("utf8"), g.headers as Record<string, string>); // throws on a bad signature
    const id = String(g.headers[FORWARD_HEADERS.eventId]);
    by.set(id, [...(by.get(id) ?? []), g]);
  }
  return by;
}

const FIXTURE = fileURLToPath(new URL("../outbound/fixtures/relayProcess.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

function spawnRelay(url: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", FIXTURE], {
    cwd: ROOT,
    env: { ...process.env, RELAY_DATABASE_URL: url, RELAY_CONCURRENCY: "8", RELAY_LEASE_SECONDS: "3", LOG_LEVEL: "silent" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (c: Buffer) => { out += c.toString(); if (out.includes("ready")) resolve(child); });
    child.once("exit", (code, signal) => reject(new Error(`relay process exited before ready (code ${code}, signal ${signal})`)));
  });
}
const exited = (child: ChildProcess) => new Promise<void>((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once("exit", () => r())));

describeEachBackend("forwarding inbound events (no code)", (ctx) => {
  const forwardSecret = generateSecret();
  let service: Awaited<ReturnType<typeof startService>>;
  let deps: IngestDeps;

  beforeAll(async () => {
    service = await startService();
    const partners = parsePartners(JSON.stringify({ shop: { scheme: "standard-webhooks", secrets: [SECRET], forward: { url: service.url, secrets: [forwardSecret] } } }));
    deps = { db: ctx.db, partners, maxBodyBytes: 65536 };
    await ensureForwardSubscriptions(ctx.db, partners);
  });
  afterAll(() => service.close());
  beforeEach(async () => {
    await resetInbound(ctx.db);
    service.got.length = 0;
  });

  const relayUntilDone = async () => {
    const transport = createTransport({ allowedDestinations: ["127.0.0.1"] });
    const relay = createRelay({ db: ctx.db, transport, pollIntervalMs: 50 });
    try {
      for (let i = 0; i < 50 && (await pendingForwards()) > 0; i++) await relay.runOnce();
    } finally {
      await transport.close();
    }
  };
  const pendingForwards = async () =>
    (await ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM outbound_deliveries WHERE subscription_id = $1 AND status = 'pending'", [forwardSubscriptionId("shop")])).rows[0]!.n;

  it("each partner event id once, original bytes, partner/id/type headers; re-sent and concurrent repeats not forwarded twice", async () => {
    // Odd bytes on purpose: spacing, escapes, non-ASCII, key order, a trailing newline.
    const bodies = Array.from({ length: 5 }, (_, i) => `{ "type":"invoice.paid",\t"z":1, "a":"caf\\u00e9 ✓ ${i}", "n": 1.50 }\n`);
    const sent = bodies.map((body, i) => ({ id: `fwd-${ctx.backend}-${i}`, body }));
    for (const s of sent) {
      const d = signed(s.id, s.body);
      expect((await ingest(deps, "shop", d.headers, d.body)).status).toBe(202);
      expect((await ingest(deps, "shop", d.headers, d.body)).status).toBe(200); // the partner re-sends
    }
    // One event sent 12 times at once.
    const burst = signed(`fwd-${ctx.backend}-burst`, '{"type":"customer.updated","id":"cus_1"}');
    const answers = await Promise.all(Array.from({ length: 12 }, () => ingest(deps, "shop", burst.headers, burst.body)));
    expect(answers.filter((a) => a.status === 202)).toHaveLength(1);
    expect(answers.every((a) => a.status === 200 || a.status === 202)).toBe(true);

    await relayUntilDone();
    const by = verifiedByEventId(service.got, forwardSecret);
    expect([...by.keys()].sort()).toEqual([...sent.map((s) => s.id), `fwd-${ctx.backend}-burst`].sort());
    for (const [id, requests] of by) expect(requests, id).toHaveLength(1);
    for (const s of sent) {
      const g = by.get(s.id)![0]!;
      expect(g.raw.equals(Buffer.from(s.body))).toBe(true);
      expect(g.headers[FORWARD_HEADERS.partner]).toBe("shop");
      expect(g.headers[FORWARD_HEADERS.eventType]).toBe("invoice.paid");
    }
    expect(by.get(`fwd-${ctx.backend}-burst`)![0]!.raw.equals(burst.body)).toBe(true);
    // The management API lists and shows forwarded events like any other.
    const listed = await listEvents(ctx.db, { type: "webhooks.forward.shop" });
    expect(listed.length).toBeGreaterThanOrEqual(6);
    const detail = await getEvent(ctx.db, listed[0]!.id);
    expect(detail.deliveries.map((d) => d.status)).toEqual(["delivered"]);
    expect([...bodies, burst.body.toString()]).toContain(detail.body);
  });

  it("the cloud processors' path (processInbound, a queue message redelivered and raced): forwarded once, original bytes", async () => {
    const processor = new InboxProcessor({ db: ctx.db, handler: createDispatchHandler([]) });
    const body = Buffer.from('{"id":"evt_cloud_1","type":"invoice.paid" ,"x":"\u00e9"}');
    const outgoing = inlineMessage({ partner: "shop", eventId: `cloud-${ctx.backend}`, eventType: "invoice.paid", receivedAt: new Date() }, body);
    const message = { id: "m-1", body: outgoing.body, attributes: outgoing.attributes ?? {} };
    const cloudDeps = { db: ctx.db, processor, partners: async () => deps.partners };
    const verdicts = await Promise.all(Array.from({ length: 5 }, () => processInbound(cloudDeps, message)));
    expect(verdicts.every((v) => v.action === "ack" || v.action === "fail")).toBe(true);
    expect(verdicts.some((v) => v.action === "ack")).toBe(true);
    await relayUntilDone();
    const by = verifiedByEventId(service.got, forwardSecret);
    expect([...by.keys()]).toEqual([`cloud-${ctx.backend}`]);
    expect(by.get(`cloud-${ctx.backend}`)!).toHaveLength(1);
    expect(by.get(`cloud-${ctx.backend}`)![0]!.raw.equals(body)).toBe(true);
  });

  it("nothing is lost when the relay process is killed while forwarding (PostgreSQL only: PGlite is in-process)", async (t) => {
    if (ctx.backend === "pglite") return t.skip();
    const total = 400;
    const ids = Array.from({ length: total }, (_, i) => `kill-fwd-${i}`);
    for (const id of ids) {
      const d = signed(id, JSON.stringify({ type: "push", n: id }));
      expect((await ingest(deps, "shop", d.headers, d.body)).status).toBe(202);
    }
    let kills = 0;
    while (kills < 3 && service.got.length < total - 100) {
      const child = await spawnRelay(ctx.url!);
      const seen = service.got.length;
      await waitFor("the relay process to forward some", () => service.got.length >= seen + 40, 60_000, 5);
      child.kill("SIGKILL");
      await exited(child);
      kills++;
    }
    const last = await spawnRelay(ctx.url!);
    try {
      await waitFor(`all ${total} forwarded`, async () => (await pendingForwards()) === 0, 120_000, 100);
    } finally {
      last.kill("SIGTERM");
      await exited(last);
    }
    expect(kills).toBeGreaterThanOrEqual(1);
    const by = verifiedByEventId(service.got, forwardSecret);
    expect([...by.keys()].sort()).toEqual([...ids].sort());
    // A request the killed relay sent but could not record is sent again with the same webhook-id,
    // so the receiver de-duplicates it: never two different deliveries of one partner event.
    for (const [id, requests] of by) expect(new Set(requests.map((r) => r.headers["webhook-id"])).size, id).toBe(1);
    // The kills interrupted forwarding: some deliveries were claimed again after a lost lease.
    const reclaimed = (await ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM outbound_deliveries WHERE subscription_id = $1 AND claims > 1", [forwardSubscriptionId("shop")])).rows[0]!.n;
    expect(reclaimed).toBeGreaterThan(0);
    console.log(`forward kill test: ${kills} SIGKILLs, ${total} events, ${service.got.length - total} repeated requests, ${reclaimed} deliveries reclaimed`);
  }, 240_000);
});

describe("forward configuration", () => {
  it("needs an http(s) URL and Standard Webhooks secrets", () => {
    const partner = (forward: unknown) => () => parsePartners(JSON.stringify({ shop: { scheme: "github", secrets: ["s"], forward } }));
    expect(partner({ url: "ftp://x", secrets: [generateSecret()] })).toThrow(/forward\.url: must be an http\(s\) URL/);
    expect(partner({ url: "https://internal.example/hooks", secrets: ["plain"] })).toThrow(/forward\.secrets\[0\]: must be whsec_/);
    expect(partner({ url: "https://internal.example/hooks", secrets: [] })).toThrow(/list at least one signing secret/);
    expect(partner({ url: "https://internal.example/hooks", secrets: [generateSecret()], extra: 1 })).toThrow(/unknown field "extra"/);
  });
});
