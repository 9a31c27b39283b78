import { beforeEach, expect, it } from "vitest";
import type { Database } from "../../shared/db/port.js";
import { ingest } from "../../shared/inbound/ingest.js";
import { getInboxEntry } from "../../shared/inbound/inbox.js";
import { orderEventId, orderIdOf, orderMachine, orders } from "../../examples/orders/handlers.js";
import { createDispatchHandler } from "../../shared/inbound/dispatch.js";
import { getEntity } from "../../shared/inbound/entities.js";
import { defineHandler, type HandlerContext } from "../../shared/inbound/handlers.js";
import { InboxProcessor, type InboxHandler } from "../../shared/inbound/processor.js";
import { replayEntries, replayEntry } from "../../shared/inbound/replay.js";
import { describeEachBackend } from "../support/databases.js";
import { orderEvent, orderHandler, orderProcessor, orderState, partners, resetInbound, signed, TestClock } from "./helpers.js";

/** The example order handler, whose own write fails for `currency: "euros"` (a poison message). */
const poisonable = (extra: (ctx: HandlerContext) => Promise<void> = async () => {}) => createDispatchHandler([defineHandler({
  name: "orders-with-own-writes",
  machine: orderMachine,
  entityId: (e) => orderIdOf(e.body),
  handle: async (ctx) => {
    if (ctx.event.body?.data?.currency === "euros") await ctx.tx.query("SELECT $1::int", ["euros"]);
    await extra(ctx);
    await orders.handle!(ctx);
  },
})]);
const POISON_ERROR = 'invalid input syntax for type integer: "euros"';

async function deliver(db: Database, clock: TestClock, id: string, body: string): Promise<string> {
  const d = signed(id, body, clock.now());
  const r = await ingest({ db, partners, maxBodyBytes: 65536, now: clock.now }, "shop", d.headers, d.body);
  if (r.status >= 300) throw new Error(`ingest answered ${r.status}: ${JSON.stringify(r.body)}`);
  return (r.body as { inboxId: string }).inboxId;
}

const entry = async (db: Database, id: string) => (await getInboxEntry(db, id))!;

describeEachBackend("inbox processor", (ctx) => {
  let clock: TestClock;
  beforeEach(async () => {
    await resetInbound(ctx.db);
    clock = new TestClock(new Date("2026-03-01T12:00:00Z"));
  });

  it("applies in order, records duplicates and stale events as no-ops", async () => {
    const p = orderProcessor(ctx.db, clock);
    await deliver(ctx.db, clock, "e1", orderEvent("o1", "order.created", { amount_cents: 1000, currency: "EUR" }));
    await deliver(ctx.db, clock, "e2", orderEvent("o1", "order.paid"));
    await p.drain();
    const dup = await deliver(ctx.db, clock, "e3", orderEvent("o1", "order.paid")); // another id, same fact
    const stale = await deliver(ctx.db, clock, "e4", orderEvent("o1", "order.created"));
    await p.drain();
    const order = (await getEntity(ctx.db, "order", "o1"))!;
    expect(order.state).toBe("paid");
    expect(order.transitions.map((t) => `${t.eventType}:${t.outcome}`)).toEqual(["order.created:applied", "order.paid:applied", "order.paid:duplicate", "order.created:stale"]);
    expect(await entry(ctx.db, dup)).toMatchObject({ status: "processed", outcome: "duplicate" });
    expect(await entry(ctx.db, stale)).toMatchObject({ status: "processed", outcome: "stale" });
  });

  it("defers an event whose prerequisite is missing, and applies it by itself once the prerequisite arrives", async () => {
    const p = orderProcessor(ctx.db, clock, { deferDelaySeconds: 30 });
    await deliver(ctx.db, clock, "c", orderEvent("o2", "order.created"));
    const shipped = await deliver(ctx.db, clock, "s", orderEvent("o2", "order.shipped"));
    await p.drain();
    const waiting = await entry(ctx.db, shipped);
    expect(waiting).toMatchObject({ status: "deferred", deferrals: 1, entityKey: "order:o2" });
    expect(waiting.lastError).toContain("needs state paid");
    expect(waiting.nextAttemptAt).toBe(new Date(clock.now().getTime() + 30_000).toISOString());

    // "paid" arrives; applying it wakes the deferred "shipped" at once: no clock change needed.
    await deliver(ctx.db, clock, "p", orderEvent("o2", "order.paid"));
    await p.drain();
    expect(await orderState(ctx.db, "o2")).toBe("shipped");
    expect(await entry(ctx.db, shipped)).toMatchObject({ status: "processed", outcome: "applied" });
  });

  it("quarantines a deferral whose prerequisite never arrives, after the deadline; replay after the fix applies it", async () => {
    const p = orderProcessor(ctx.db, clock, { deferDelaySeconds: 60, deferDeadlineSeconds: 600 });
    await deliver(ctx.db, clock, "c", orderEvent("o3", "order.created"));
    const delivered = await deliver(ctx.db, clock, "d", orderEvent("o3", "order.delivered"));
    await p.drain();
    const deadline = (await entry(ctx.db, delivered)).deferDeadlineAt;
    expect(deadline).toBe(new Date(clock.now().getTime() + 600_000).toISOString());

    for (let i = 0; i < 20 && (await entry(ctx.db, delivered)).status === "deferred"; i++) {
      clock.advance(60);
      await p.drain();
    }
    const q = await entry(ctx.db, delivered);
    expect(q.status).toBe("quarantined");
    expect(q.outcome).toBe("deferral_deadline");
    expect(q.quarantineReason).toContain("prerequisite missing until the deferral deadline");
    expect(q.quarantineReason).toContain("order.delivered needs state shipped");
    expect(q.deferrals).toBeGreaterThanOrEqual(9);
    // Quarantined means nobody looks at it again, however long we wait.
    clock.advance(86_400);
    expect((await p.drain()).claimed).toBe(0);

    // The fix: the missing events are delivered (paid, shipped), then the entry is replayed.
    await deliver(ctx.db, clock, "p", orderEvent("o3", "order.paid"));
    await deliver(ctx.db, clock, "s", orderEvent("o3", "order.shipped"));
    await p.drain();
    expect(await orderState(ctx.db, "o3")).toBe("shipped");
    const r = await replayEntry(ctx.db, delivered, { by: "test", now: clock.now() });
    expect(r).toEqual({ kind: "replayed", id: delivered, previousStatus: "quarantined" });
    await p.drain();
    expect(await orderState(ctx.db, "o3")).toBe("delivered");
    const after = await entry(ctx.db, delivered);
    expect(after).toMatchObject({ status: "processed", outcome: "applied", replays: 1 });
    expect(after.replayLog).toEqual([
      { requestedAt: clock.now().toISOString(), requestedBy: "test", previousStatus: "quarantined", previousReason: q.quarantineReason },
    ]);
  });

  it("retries a failing entry on the schedule (60 s, 300 s, 900 s), then quarantines it; it never blocks the others", async () => {
    const p = orderProcessor(ctx.db, clock, { retrySchedule: [60, 300, 900], handler: poisonable() });
    await deliver(ctx.db, clock, "c", orderEvent("o4", "order.created"));
    await p.drain();
    // Poison: the handler's own write fails for this event, so every attempt fails.
    const poison = await deliver(ctx.db, clock, "bad", orderEvent("o4", "order.paid", { currency: "euros" }));
    const start = clock.now().getTime();
    const expectedWaits = [60, 300, 900];
    for (const [i, wait] of expectedWaits.entries()) {
      // Healthy events delivered behind the poison are processed in the same round.
      const healthy = await deliver(ctx.db, clock, `h${i}`, orderEvent(`other-${i}`, "order.created"));
      const round = await p.runOnce();
      expect(round).toMatchObject({ failed: 1, processed: 1 });
      expect(await entry(ctx.db, healthy)).toMatchObject({ status: "processed" });
      const e = await entry(ctx.db, poison);
      expect(e).toMatchObject({ status: "failed", failures: i + 1 });
      expect(e.lastError).toContain(POISON_ERROR);
      expect(new Date(e.nextAttemptAt!).getTime() - clock.now().getTime()).toBe(wait * 1000);
      // Not due a moment before its time; due exactly at it.
      clock.advance(wait - 1);
      expect((await p.runOnce()).claimed).toBe(0);
      clock.advance(1);
    }
    const last = await p.runOnce();
    expect(last).toMatchObject({ claimed: 1, quarantined: 1 });
    const q = await entry(ctx.db, poison);
    expect(q).toMatchObject({ status: "quarantined", outcome: "failed", failures: 4 });
    expect(q.quarantineReason).toMatch(/^failed 4 times \(retry schedule exhausted\); last error: .*invalid input syntax/);
    expect(clock.now().getTime() - start).toBe((60 + 300 + 900) * 1000);
    expect(await orderState(ctx.db, "o4")).toBe("created"); // the failed change left no trace
  });

  it("a lease keeps other processors off an entry until it expires; a stale lease cannot complete", async () => {
    await deliver(ctx.db, clock, "c", orderEvent("o5", "order.created"));
    let release!: () => void;
    let claimed!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const started = new Promise<void>((r) => (claimed = r));
    const slow: InboxHandler = async (tx, e, c) => {
      claimed();
      await gate;
      return orderHandler()(tx, e, c);
    };
    const a = new InboxProcessor({ db: ctx.db, handler: slow, now: clock.now, leaseSeconds: 60 });
    const b = orderProcessor(ctx.db, clock, { leaseSeconds: 60 });
    const aRun = a.runOnce();
    await started;
    // PGlite runs one transaction at a time, so only look while A waits if it is a server.
    if (ctx.backend === "postgres") expect((await b.runOnce()).claimed).toBe(0);
    release();
    expect(await aRun).toMatchObject({ processed: 1 });

    // A claim whose lease expired is taken over; the first holder's completion is then refused.
    const e2 = await deliver(ctx.db, clock, "p", orderEvent("o5", "order.paid"));
    const holder = await ctx.db.query<{ lease_token: string }>(
      "UPDATE inbox_entries SET lease_token = gen_random_uuid(), next_attempt_at = $2::timestamptz WHERE id = $1 RETURNING lease_token",
      [e2, new Date(clock.now().getTime() + 60_000).toISOString()],
    );
    expect(holder.rows[0]?.lease_token).toBeTruthy();
    expect((await b.runOnce()).claimed).toBe(0); // still leased
    clock.advance(61);
    expect(await b.runOnce()).toMatchObject({ claimed: 1, processed: 1 });
    const stale = await ctx.db.query("UPDATE inbox_entries SET status = 'failed' WHERE id = $1 AND lease_token = $2", [e2, holder.rows[0]!.lease_token]);
    expect(stale.rowCount).toBe(0);
  });

  it("runEntry processes one given entry (the cloud path): processed, then settled; deferred with its time; a failed entry waits for its retry's due time; busy while leased", async () => {
    const p = orderProcessor(ctx.db, clock, { deferDelaySeconds: 45, retrySchedule: [60], handler: poisonable() });
    const c = await deliver(ctx.db, clock, "c", orderEvent("o7", "order.created"));
    expect(await p.runEntry(c)).toEqual({ result: "processed", status: "processed", nextAttemptAt: null, lastError: null });
    expect((await p.runEntry(c)).result).toBe("settled");

    const s = await deliver(ctx.db, clock, "s", orderEvent("o7", "order.shipped"));
    const deferred = await p.runEntry(s);
    expect(deferred).toMatchObject({ result: "deferred", status: "deferred" });
    expect(deferred.nextAttemptAt?.getTime()).toBe(clock.now().getTime() + 45_000);
    // A queue may redeliver before the time: the entry is looked at again anyway, still deferred.
    expect((await p.runEntry(s)).result).toBe("deferred");

    const bad = await deliver(ctx.db, clock, "bad", orderEvent("o7", "order.paid", { currency: "euros" }));
    const failed = await p.runEntry(bad);
    expect(failed).toMatchObject({ result: "failed", status: "failed" });
    expect(failed.lastError).toContain(POISON_ERROR);
    // A queue's redelivery before the retry is due does not run it (issue 24 #3): INBOX_RETRY_SCHEDULE decides.
    expect(await p.runEntry(bad)).toMatchObject({ result: "waiting", status: "failed", nextAttemptAt: failed.nextAttemptAt });
    clock.advance(60);
    expect((await p.runEntry(bad)).result).toBe("quarantined");

    const leased = await deliver(ctx.db, clock, "p", orderEvent("o7", "order.paid"));
    await ctx.db.query("UPDATE inbox_entries SET lease_token = gen_random_uuid(), next_attempt_at = $2::timestamptz WHERE id = $1", [leased, new Date(clock.now().getTime() + 60_000).toISOString()]);
    expect((await p.runEntry(leased)).result).toBe("busy");
    await expect(p.runEntry("00000000-0000-0000-0000-000000000000")).rejects.toThrow(/No inbox entry/);
  });

  it("bulk replay puts matching quarantined entries back on the normal path, each logged", async () => {
    const p = orderProcessor(ctx.db, clock);
    const rejected = [
      await deliver(ctx.db, clock, "r1", JSON.stringify({ type: "order.created", data: {} })),
      await deliver(ctx.db, clock, "r2", JSON.stringify({ type: "order.created", data: {} })),
    ];
    await p.drain();
    for (const id of rejected) {
      const e = await entry(ctx.db, id);
      expect(e.status).toBe("quarantined");
      expect(e.quarantineReason).toContain("no order id in this event");
    }
    const r = await replayEntries(ctx.db, { status: "quarantined", partner: "shop" }, { by: "bulk-test", now: clock.now() });
    expect(r.ids.sort()).toEqual([...rejected].sort());
    for (const id of rejected) {
      const e = await entry(ctx.db, id);
      expect(e).toMatchObject({ status: "pending", replays: 1 });
      expect(e.replayLog).toHaveLength(1);
      expect(e.replayLog[0]).toMatchObject({ requestedBy: "bulk-test", previousStatus: "quarantined" });
    }
    // Through the normal path again: still malformed, so quarantined again, now with two replays logged.
    await p.drain();
    expect((await entry(ctx.db, rejected[0]!)).status).toBe("quarantined");
    expect(await replayEntry(ctx.db, "00000000-0000-0000-0000-000000000000", { by: "t" })).toEqual({ kind: "not_found" });
    await replayEntry(ctx.db, rejected[0]!, { by: "t" });
    expect(await replayEntry(ctx.db, rejected[0]!, { by: "t" })).toEqual({ kind: "already_pending" });
  });

  it("enqueues order.<state> through the outbox in the same transaction; a failing hook rolls everything back", async () => {
    const p = orderProcessor(ctx.db, clock);
    const c = await deliver(ctx.db, clock, "c", orderEvent("o6", "order.created"));
    const paid = await deliver(ctx.db, clock, "p", orderEvent("o6", "order.paid"));
    await deliver(ctx.db, clock, "p2", orderEvent("o6", "order.paid")); // a no-op: enqueues nothing
    await p.drain();
    const events = await ctx.db.query<{ id: string; type: string; body: string }>("SELECT id, type, body FROM outbound_events WHERE id = ANY($1::text[]) ORDER BY type", [[orderEventId(c), orderEventId(paid)]]);
    expect(events.rows.map((e) => e.type)).toEqual(["order.created", "order.paid"]);
    expect(JSON.parse(events.rows[1]!.body).data).toMatchObject({ order_id: "o6", state: "paid", previous_state: "created" });
    expect(Number((await ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM outbound_events WHERE body::jsonb -> 'data' ->> 'order_id' = 'o6'")).rows[0]?.n)).toBe(2);

    const failing = orderProcessor(ctx.db, clock, { handler: poisonable(async () => { throw new Error("outbox down"); }) });
    const shipped = await deliver(ctx.db, clock, "s", orderEvent("o6", "order.shipped"));
    expect(await failing.runOnce()).toMatchObject({ failed: 1 });
    expect(await orderState(ctx.db, "o6")).toBe("paid");
    expect((await getEntity(ctx.db, "order", "o6"))!.transitions.filter((t) => t.eventType === "order.shipped")).toEqual([]);
    expect((await entry(ctx.db, shipped)).lastError).toContain("outbox down");
  });
});
