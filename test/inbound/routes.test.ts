/**
 * The inbound routes over real HTTP, on the assembled platform (its inbox processor running).
 */
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadConfig } from "../../shared/config.js";
import { mapPlatformError, startPlatform, type Platform } from "../../shared/platform.js";
import orderHandlers from "../../examples/orders/handlers.js";
import { createHttpServer } from "../../shared/server/router.js";
import { createLogger } from "../../shared/telemetry/log.js";
import { describeEachBackend } from "../support/databases.js";
import { orderEvent, PARTNERS_JSON, signed } from "./helpers.js";

const TOKEN = "inbound-route-test-token";

/** Polls `read` until `done` holds (bounded); the assertion after it says what was expected. */
async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, tries = 400): Promise<T> {
  let v = await read();
  for (let i = 0; i < tries && !done(v); i++) {
    await new Promise((r) => setTimeout(r, 25));
    v = await read();
  }
  return v;
}

describeEachBackend("inbound routes over HTTP", (ctx) => {
  let platform: Platform;
  let server: Server;
  let base: string;

  beforeAll(async () => {
    const config = loadConfig({ ADMIN_TOKEN: TOKEN, PARTNERS: PARTNERS_JSON, LOG_LEVEL: "silent", MAX_PAYLOAD_BYTES: "2048", INBOX_POLL_MS: "50" });
    platform = await startPlatform(config, { db: ctx.db, logger: createLogger({ level: "silent" }), handlers: orderHandlers });
    server = createHttpServer({ routes: platform.routes, adminToken: TOKEN, maxBodyBytes: config.MAX_PAYLOAD_BYTES, mapError: mapPlatformError });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    await platform?.stop();
  });

  const admin = (path: string, init: RequestInit = {}) =>
    fetch(base + path, { ...init, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", ...(init.headers as Record<string, string>) } });
  const post = (partner: string, d: { headers: Record<string, string>; body: Buffer }) =>
    fetch(`${base}/webhooks/${partner}`, { method: "POST", headers: d.headers, body: new Uint8Array(d.body) });

  it("accepts a signed webhook on its exact bytes (202), stores them, and the processor applies it", async () => {
    // Unicode escapes, odd spacing and a trailing newline: re-serialising would break the signature.
    const body = '{"type":"order.created",  "data":{"order_id":"http-1","note":"caf\\u00e9 ✓"}}\n';
    const res = await post("shop", signed("h-1", body));
    expect(res.status).toBe(202);
    const { inboxId } = (await res.json()) as { inboxId: string };

    const again = await post("shop", signed("h-1", body));
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ duplicate: true, inboxId });

    const order = await until(() => admin("/entities/order/http-1"), (r) => r.status === 200);
    expect(order.status).toBe(200);
    expect(await order.json()).toMatchObject({ machine: "order", id: "http-1", state: "created" });
    const entry = await (await admin(`/inbox/${inboxId}`)).json();
    expect(entry).toMatchObject({ id: inboxId, status: "processed", outcome: "applied", payloadText: body, signatureVerified: true });
  });

  it("answers 404, 413, 401 and 400 with JSON errors and stores nothing", async () => {
    const before = (await (await admin("/inbox?limit=1000")).json()) as { entries: unknown[] };
    const ok = signed("h-x", orderEvent("http-x", "order.created"));
    const unknown = await post("nobody", ok);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: "unknown_partner" } });
    const big = await post("shop", signed("h-big", JSON.stringify({ pad: "x".repeat(3000) })));
    expect(big.status).toBe(413);
    const bad = await post("shop", { headers: ok.headers, body: Buffer.from(ok.body.toString().replace("http-x", "http-y")) });
    expect(bad.status).toBe(401);
    expect(await bad.json()).toMatchObject({ error: { code: "signature_mismatch" } });
    const notObject = await post("shop", signed("h-arr", "[1,2]"));
    expect(notObject.status).toBe(400);
    const get = await fetch(`${base}/webhooks/shop`);
    expect(get.status).toBe(405);
    const after = (await (await admin("/inbox?limit=1000")).json()) as { entries: unknown[] };
    expect(after.entries).toHaveLength(before.entries.length);
  });

  it("protects the inbox and orders with the admin token and validates parameters", async () => {
    expect((await fetch(`${base}/inbox`)).status).toBe(401);
    expect((await fetch(`${base}/entities/order/http-1`)).status).toBe(401);
    expect((await fetch(`${base}/inbox/replay`, { method: "POST" })).status).toBe(401);
    const badStatus = await admin("/inbox?status=lost");
    expect(badStatus.status).toBe(400);
    expect(((await badStatus.json()) as { error: { message: string } }).error.message).toMatch(/status: .*"pending"/);
    expect((await admin("/inbox?limit=0")).status).toBe(400);
    expect((await admin("/inbox/not-a-uuid")).status).toBe(400);
    expect((await admin("/inbox/00000000-0000-0000-0000-000000000000")).status).toBe(404);
    expect((await admin("/entities/order/none")).status).toBe(404);
    expect((await admin("/inbox/replay", { method: "POST", body: '{"status":"pending"}' })).status).toBe(400);
    expect((await admin("/inbox/replay", { method: "POST", body: '{"stauts":"quarantined"}' })).status).toBe(400);
    expect((await admin("/inbox/replay", { method: "POST", body: "{oops" })).status).toBe(400);
  });

  it("lists quarantined entries with their reason, replays one and in bulk, each replay recorded", async () => {
    const res = await post("shop", signed("h-q", JSON.stringify({ type: "order.created", data: { id: "wrong-field" } })));
    const { inboxId } = (await res.json()) as { inboxId: string };
    type Listing = { entries: { id: string; quarantineReason: string | null; replays: number }[] };
    const listed = await until(
      async () => (await (await admin("/inbox?status=quarantined")).json()) as Listing,
      (l) => l.entries.some((e) => e.id === inboxId),
    );
    const q = listed.entries.find((e) => e.id === inboxId);
    expect(q?.quarantineReason).toContain("no order id in this event");

    const single = await admin(`/inbox/${inboxId}/replay`, { method: "POST" });
    expect(single.status).toBe(202);
    expect(await single.json()).toEqual({ replayed: [inboxId], previousStatus: "quarantined" });
    // Through the normal path: the processor looks at it again and, still malformed, quarantines it.
    const back = await until(
      async () => (await (await admin(`/inbox/${inboxId}`)).json()) as { status: string; replays: number; replayLog: unknown[] },
      (e) => e.status === "quarantined",
    );
    expect(back).toMatchObject({ status: "quarantined", replays: 1 });
    expect(back.replayLog).toHaveLength(1);

    const bulk = await admin("/inbox/replay", { method: "POST", body: JSON.stringify({ status: "quarantined", partner: "shop" }) });
    expect(bulk.status).toBe(202);
    expect(((await bulk.json()) as { replayed: string[] }).replayed).toContain(inboxId);
    const twice = await until(
      async () => (await (await admin(`/inbox/${inboxId}`)).json()) as { status: string; replays: number },
      (e) => e.status === "quarantined" && e.replays === 2,
    );
    expect(twice).toMatchObject({ status: "quarantined", replays: 2 });
  });
});
