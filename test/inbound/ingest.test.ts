import { beforeEach, expect, it } from "vitest";
import { ingest, type IngestDeps } from "../../shared/inbound/ingest.js";
import { InboxProcessor } from "../../shared/inbound/processor.js";
import { sha256Hex } from "../../shared/inbound/inbox.js";
import { describeEachBackend } from "../support/databases.js";
import { orderEvent, orderHandler, orderState, partners, resetInbound, signed, TestClock } from "./helpers.js";

const count = async (db: { query: IngestDeps["db"]["query"] }, sql: string, values: unknown[] = []) =>
  Number((await db.query<{ n: number }>(sql, values)).rows[0]?.n);

describeEachBackend("ingest", (ctx) => {
  const clock = new TestClock(new Date("2026-03-01T12:00:00Z"));
  const deps = (): IngestDeps => ({ db: ctx.db, partners, maxBodyBytes: 4096, now: clock.now });

  beforeEach(async () => {
    await resetInbound(ctx.db);
  });

  it("stores a verified event durably before answering 202: raw bytes, hash, received_at, pending", async () => {
    // Odd spacing and key order on purpose: the bytes must be kept exactly, not re-serialised.
    const body = '{ "type":"order.created",  "data": {"order_id":"o-1"} }';
    const d = signed("msg_1", body, clock.now());
    const r = await ingest(deps(), "shop", d.headers, d.body);
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ received: true, duplicate: false });
    const row = (await ctx.db.query<Record<string, unknown>>("SELECT * FROM inbox_entries")).rows;
    expect(row).toHaveLength(1);
    expect(Buffer.from(row[0]!.payload as Uint8Array).equals(d.body)).toBe(true);
    expect(row[0]).toMatchObject({
      partner_name: "shop",
      partner_event_id: "msg_1",
      event_type: "order.created",
      payload_sha256: sha256Hex(d.body),
      signature_verified: true,
      status: "pending",
    });
    expect(new Date(row[0]!.received_at as string).toISOString()).toBe(clock.now().toISOString());
    expect((r.body as { inboxId: string }).inboxId).toBe(row[0]!.id);
  });

  it("answers a duplicate with 200 and changes nothing", async () => {
    const d = signed("msg_dup", orderEvent("o-2", "order.created"), clock.now());
    const first = await ingest(deps(), "shop", d.headers, d.body);
    const before = (await ctx.db.query("SELECT * FROM inbox_entries")).rows;
    const again = await ingest(deps(), "shop", d.headers, d.body);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ duplicate: true, inboxId: (first.body as { inboxId: string }).inboxId });
    expect(again.body).not.toHaveProperty("payloadMismatch");
    expect((await ctx.db.query("SELECT * FROM inbox_entries")).rows).toEqual(before);
  });

  it("flags the same event id with different bytes: kept aside, counted, never replacing the original", async () => {
    const original = signed("msg_m", orderEvent("o-3", "order.created", { amount_cents: 100 }), clock.now());
    const altered = signed("msg_m", orderEvent("o-3-altered", "order.created", { amount_cents: 100 }), clock.now());
    await ingest(deps(), "shop", original.headers, original.body);
    const r1 = await ingest(deps(), "shop", altered.headers, altered.body);
    const r2 = await ingest(deps(), "shop", altered.headers, altered.body);
    expect(r1.status).toBe(200);
    expect(r1.body).toMatchObject({ duplicate: true, payloadMismatch: true });
    expect(r2.body).toMatchObject({ payloadMismatch: true });
    const entry = (await ctx.db.query<{ payload: Uint8Array; payload_mismatches: number }>("SELECT payload, payload_mismatches FROM inbox_entries")).rows;
    expect(entry).toHaveLength(1);
    expect(Buffer.from(entry[0]!.payload).equals(original.body)).toBe(true);
    expect(Number(entry[0]!.payload_mismatches)).toBe(2);
    const conflicts = (await ctx.db.query<{ payload: Uint8Array; deliveries: number; payload_sha256: string }>("SELECT payload, deliveries, payload_sha256 FROM inbox_payload_conflicts")).rows;
    expect(conflicts).toHaveLength(1);
    expect(Buffer.from(conflicts[0]!.payload).equals(altered.body)).toBe(true);
    expect(Number(conflicts[0]!.deliveries)).toBe(2);

    // The processor applies the original bytes only.
    await new InboxProcessor({ db: ctx.db, handler: orderHandler(), now: clock.now }).drain();
    expect(await orderState(ctx.db, "o-3")).toBe("created");
    expect(await orderState(ctx.db, "o-3-altered")).toBe(null);
  });

  it("stores nothing for an unknown partner (404), an oversized body (413), a bad signature (401), a non-JSON body (400)", async () => {
    const ok = signed("msg_x", orderEvent("o-4", "order.created"), clock.now());
    const unknown = await ingest(deps(), "nobody", ok.headers, ok.body);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: { code: "unknown_partner" } });

    const huge = signed("msg_big", JSON.stringify({ type: "order.created", pad: "x".repeat(5000) }), clock.now());
    expect((await ingest(deps(), "shop", huge.headers, huge.body)).status).toBe(413);

    const tampered = await ingest(deps(), "shop", ok.headers, Buffer.from(ok.body.toString().replace("o-4", "o-5")));
    expect(tampered.status).toBe(401);
    expect(tampered.body).toMatchObject({ error: { code: "signature_mismatch" } });

    const stale = signed("msg_old", orderEvent("o-4", "order.created"), new Date(clock.now().getTime() - 3600_000));
    const staleR = await ingest(deps(), "shop", stale.headers, stale.body);
    expect(staleR.status).toBe(401);

    const notJson = signed("msg_nj", "{not json", clock.now());
    const nj = await ingest(deps(), "shop", notJson.headers, notJson.body);
    expect(nj.status).toBe(400);

    expect(await count(ctx.db, "SELECT count(*)::int AS n FROM inbox_entries")).toBe(0);
  });

  it("20 concurrent deliveries of one event: one inbox row, one side effect, even with 3 processors racing", async () => {
    const d = signed("msg_race", orderEvent("o-race", "order.created", { amount_cents: 500, currency: "EUR" }), clock.now());
    const responses = await Promise.all(Array.from({ length: 20 }, () => ingest(deps(), "shop", d.headers, d.body)));
    expect(responses.every((r) => r.status === 200 || r.status === 202)).toBe(true);
    expect(responses.filter((r) => r.status === 202)).toHaveLength(1);
    expect(new Set(responses.map((r) => (r.body as { inboxId: string }).inboxId)).size).toBe(1);
    expect(await count(ctx.db, "SELECT count(*)::int AS n FROM inbox_entries")).toBe(1);

    const handler = orderHandler();
    const processors = [1, 2, 3].map(() => new InboxProcessor({ db: ctx.db, handler, now: clock.now }));
    // Deliveries keep arriving while the processors run: still one row, one transition.
    await Promise.all([
      ...processors.map((p) => p.drain()),
      ...Array.from({ length: 20 }, () => ingest(deps(), "shop", d.headers, d.body)),
    ]);
    await processors[0]!.drain();
    expect(await count(ctx.db, "SELECT count(*)::int AS n FROM inbox_entries WHERE status = 'processed'")).toBe(1);
    expect(await count(ctx.db, "SELECT count(*)::int AS n FROM inbound_entities")).toBe(1);
    expect(await count(ctx.db, "SELECT count(*)::int AS n FROM inbound_transitions WHERE entity_id = 'o-race' AND outcome = 'applied'")).toBe(1);
    expect(await count(ctx.db, "SELECT count(*)::int AS n FROM outbound_events WHERE type = 'order.created' AND body::jsonb -> 'data' ->> 'order_id' = 'o-race'")).toBe(1);
  });
});
