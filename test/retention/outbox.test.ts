import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../shared/config.js";
import { createSubscription, enqueue } from "../../shared/outbound/index.js";
import { DEFAULT_HEALTH_POLICY } from "../../shared/outbound/health.js";
import { claimDueDeliveries } from "../../shared/outbound/sql/claimDeliveries.js";
import { completeDeliveries } from "../../shared/outbound/sql/completeDeliveries.js";
import { purgeIfDue, purgeOutbox, startRetention } from "../../shared/retention/index.js";
import { createLogger } from "../../shared/telemetry/log.js";
import { describeEachBackend } from "../support/databases.js";
import { resetOutbound, waitFor } from "../outbound/support/receiver.js";

describeEachBackend("outbox retention", (ctx) => {
  afterEach(() => resetOutbound(ctx.db));

  /** Puts a delivery in a final state reached `daysAgo` days ago (created `createdDaysAgo`), with one logged attempt. */
  const finish = async (id: string, status: "delivered" | "dead", daysAgo: number, createdDaysAgo = daysAgo) => {
    await ctx.db.query(
      `UPDATE outbound_deliveries SET status = $2, created_at = now() - make_interval(days => $4),
         delivered_at = CASE WHEN $2 = 'delivered' THEN now() - make_interval(days => $3) END,
         dead_at = CASE WHEN $2 = 'dead' THEN now() - make_interval(days => $3) END
       WHERE id = $1`,
      [id, status, daysAgo, createdDaysAgo],
    );
    await ctx.db.query("INSERT INTO outbound_attempt_rows (delivery_id, attempt_number, result, status, latency_ms) VALUES ($1, 1, $2, $3, 5)", [
      id, status === "delivered" ? "delivered" : "permanent", status === "delivered" ? 200 : 400,
    ]);
  };
  const age = (eventId: string, daysAgo: number) =>
    ctx.db.query("UPDATE outbound_events SET created_at = now() - make_interval(days => $2) WHERE id = $1", [eventId, daysAgo]);
  const ids = async (table: string, column = "id") =>
    (await ctx.db.query<{ id: string }>(`SELECT ${column} AS id FROM ${table} ORDER BY 1`)).rows.map((r) => r.id);

  it("deletes delivered work past its retention with its attempts; never pending work; an event goes with its last delivery", async () => {
    const a = await createSubscription(ctx.db, { url: "https://a.example/h", eventTypes: ["order.*"] });
    const b = await createSubscription(ctx.db, { url: "https://b.example/h", eventTypes: ["order.*"] });
    for (const id of ["done", "mixed", "recent", "dead", "stuck"]) await enqueue(ctx.db, { id, type: "order.paid", data: { id } });
    await enqueue(ctx.db, { id: "unmatched-old", type: "invoice.sent", data: {} });
    await enqueue(ctx.db, { id: "unmatched-new", type: "invoice.sent", data: {} });
    for (const sub of [a, b]) await finish(`done:${sub.id}`, "delivered", 40);
    await finish(`mixed:${a.id}`, "delivered", 40); // its other delivery is still pending
    for (const sub of [a, b]) await finish(`recent:${sub.id}`, "delivered", 3);
    for (const sub of [a, b]) await finish(`dead:${sub.id}`, "dead", 400);
    await ctx.db.query("UPDATE outbound_deliveries SET created_at = now() - interval '400 days' WHERE event_id IN ('mixed', 'stuck') AND status = 'pending'");
    for (const id of ["done", "mixed", "dead", "stuck", "unmatched-old"]) await age(id, 400);

    // Batches of 2, so the purge has to come back for more.
    const purged = await purgeOutbox(ctx.db, { deliveredDays: 30, deadDays: 0 }, { batchSize: 2 });

    expect(purged).toEqual({ deliveries: 3, attempts: 3, replays: 0, events: 2 });
    expect(await ids("outbound_deliveries")).toEqual([
      `dead:${a.id}`, `dead:${b.id}`, `mixed:${b.id}`, `recent:${a.id}`, `recent:${b.id}`, `stuck:${a.id}`, `stuck:${b.id}`,
    ].sort());
    // Every attempt left belongs to a kept delivery.
    expect(await ids("outbound_attempts", "delivery_id")).toEqual([`dead:${a.id}`, `dead:${b.id}`, `recent:${a.id}`, `recent:${b.id}`].sort());
    expect(await ids("outbound_events")).toEqual(["dead", "mixed", "recent", "stuck", "unmatched-new"]);
  });

  it("cancelled deliveries (a deleted subscription's) go with the delivered retention, counted from their cancellation", async () => {
    const s = await createSubscription(ctx.db, { url: "https://a.example/h", eventTypes: ["order.*"] });
    for (const id of ["cancelled-long-ago", "cancelled-lately"]) await enqueue(ctx.db, { id, type: "order.paid", data: {} });
    const cancel = (eventId: string, daysAgo: number) => ctx.db.query(
      "UPDATE outbound_deliveries SET status = 'cancelled', created_at = now() - interval '400 days', cancelled_at = now() - make_interval(days => $2) WHERE event_id = $1",
      [eventId, daysAgo],
    );
    await cancel("cancelled-long-ago", 40);
    await cancel("cancelled-lately", 3); // created long ago, but cancelled three days ago: kept
    for (const id of ["cancelled-long-ago", "cancelled-lately"]) await age(id, 400);
    expect(await purgeOutbox(ctx.db, { deliveredDays: 30, deadDays: 0 })).toMatchObject({ deliveries: 1, events: 1 });
    expect(await ids("outbound_deliveries")).toEqual([`cancelled-lately:${s.id}`]);
    expect(await purgeOutbox(ctx.db, { deliveredDays: 0, deadDays: 30 })).toMatchObject({ deliveries: 0 });
  });

  it("dead letters go only when their own retention is set, counted from their death, with their replay history", async () => {
    const s = await createSubscription(ctx.db, { url: "https://a.example/h", eventTypes: ["order.*"] });
    await enqueue(ctx.db, { id: "old-dead", type: "order.paid", data: {} });
    await enqueue(ctx.db, { id: "young-dead", type: "order.paid", data: {} });
    await finish(`old-dead:${s.id}`, "dead", 20);
    // Created long ago, dead only since yesterday (retried for weeks, or replayed and dead again):
    // the operator still has the whole retention to act on it.
    await finish(`young-dead:${s.id}`, "dead", 1, 60);
    await ctx.db.query("INSERT INTO outbound_replays (delivery_id, previous_reason, requested_by) VALUES ($1, 'exhausted', 'test')", [`old-dead:${s.id}`]);
    await age("old-dead", 20);
    // Both announced as delivery.exhausted (the marks a scan leaves, migration 024).
    for (const id of [`old-dead:${s.id}`, `young-dead:${s.id}`]) {
      await ctx.db.query("INSERT INTO outbound_delivery_exhaustions (delivery_id, replays, subscription_id, application_id, dead_at, event_id, raised_at) VALUES ($1, 0, $2, 'app_default', now(), 'delivery-exhausted-x', now())", [id, s.id]);
    }

    await enqueue(ctx.db, { id: "unmatched", type: "invoice.sent", data: {} });
    await age("unmatched", 400);
    expect(await purgeOutbox(ctx.db, { deliveredDays: 30, deadDays: 0 })).toEqual({ deliveries: 0, attempts: 0, replays: 0, events: 1 });
    await enqueue(ctx.db, { id: "unmatched", type: "invoice.sent", data: {} });
    await age("unmatched", 400);
    // An event no subscription matched is finished work: aged by the delivered retention only (0 here).
    expect(await purgeOutbox(ctx.db, { deliveredDays: 0, deadDays: 10 })).toEqual({ deliveries: 1, attempts: 1, replays: 1, events: 1 });
    expect(await ids("outbound_deliveries")).toEqual([`young-dead:${s.id}`]);
    expect(await ids("outbound_events")).toEqual(["unmatched", "young-dead"]);
    expect(await ids("outbound_replays", "delivery_id")).toEqual([]);
    // The purged dead letter's delivery.exhausted mark went with it; the kept one's stays.
    expect(await ids("outbound_delivery_exhaustions", "delivery_id")).toEqual([`young-dead:${s.id}`]);
  });

  it("keeps everything when both retentions are 0", async () => {
    const s = await createSubscription(ctx.db, { url: "https://a.example/h", eventTypes: ["*"] });
    await enqueue(ctx.db, { id: "ancient", type: "order.paid", data: {} });
    await finish(`ancient:${s.id}`, "delivered", 5000);
    await age("ancient", 5000);
    expect(await purgeOutbox(ctx.db, { deliveredDays: 0, deadDays: 0 })).toEqual({ deliveries: 0, attempts: 0, replays: 0, events: 0 });
    expect(await ids("outbound_events")).toEqual(["ancient"]);
  });

  it("idempotency by event id lasts as long as the event is kept: once purged, the same id is a new event", async () => {
    const s = await createSubscription(ctx.db, { url: "https://a.example/h", eventTypes: ["*"] });
    await enqueue(ctx.db, { id: "again", type: "order.paid", data: { v: 1 } });
    expect((await enqueue(ctx.db, { id: "again", type: "order.paid", data: { v: 1 } })).created).toBe(false);
    await finish(`again:${s.id}`, "delivered", 31);
    await age("again", 31);
    await purgeOutbox(ctx.db, { deliveredDays: 30, deadDays: 0 });
    const later = await enqueue(ctx.db, { id: "again", type: "order.paid", data: { v: 2 } });
    expect(later).toEqual({ eventId: "again", created: true, deliveries: [{ id: `again:${s.id}`, subscriptionId: s.id, status: "pending" }] });
  });

  it("a late completion for a delivery retention has deleted is logged as stale and does not fail its batch", async () => {
    await createSubscription(ctx.db, { url: "https://a.example/h", eventTypes: ["*"] });
    await enqueue(ctx.db, { id: "kept", type: "order.paid", data: {} });
    await enqueue(ctx.db, { id: "gone", type: "order.paid", data: {} });
    const claimed = await claimDueDeliveries(ctx.db, { limit: 10, leaseSeconds: 60, leaseToken: "00000000-0000-4000-8000-000000000001" });
    expect(claimed).toHaveLength(2);
    // While this relay was stalled, another delivered "gone" and retention has since deleted it.
    const gone = claimed.find((c) => c.eventId === "gone")!;
    await finish(gone.id, "delivered", 40);
    await ctx.db.query("DELETE FROM outbound_attempt_rows WHERE delivery_id = $1", [gone.id]);
    expect((await purgeOutbox(ctx.db, { deliveredDays: 30, deadDays: 0 })).deliveries).toBe(1);

    const outcome = { result: "delivered" as const, status: 200, latencyMs: 3, errorClass: null, responseExcerpt: "", retryAfterSeconds: null };
    const decision = { status: "delivered" as const, delaySeconds: 0, deadReason: null, counted: true };
    const result = await completeDeliveries(ctx.db, claimed.map((delivery) => ({ delivery, outcome, decision })), DEFAULT_HEALTH_POLICY);
    expect(result.stale).toEqual([gone.id]);
    expect(result.accepted).toEqual([claimed.find((c) => c.eventId === "kept")!.id]);
    // The late attempt has no delivery left to belong to: it is not logged, so no orphan row
    // could be picked up later by a new delivery with the same id (the event enqueued again).
    const log = await ctx.db.query<{ delivery_id: string; stale: boolean }>("SELECT delivery_id, stale FROM outbound_attempts");
    expect(log.rows).toEqual([{ delivery_id: claimed.find((c) => c.eventId === "kept")!.id, stale: false }]);
  });

  it("a stale completion whose delivery still exists is logged, flagged stale, and changes nothing", async () => {
    await createSubscription(ctx.db, { url: "https://a.example/h", eventTypes: ["*"] });
    await enqueue(ctx.db, { id: "taken-over", type: "order.paid", data: {} });
    const [mine] = await claimDueDeliveries(ctx.db, { limit: 1, leaseSeconds: 60, leaseToken: "00000000-0000-4000-8000-000000000002" });
    await ctx.db.query("UPDATE outbound_deliveries SET lease_token = '00000000-0000-4000-8000-000000000003'"); // another relay's lease now
    const outcome = { result: "delivered" as const, status: 200, latencyMs: 3, errorClass: null, responseExcerpt: "", retryAfterSeconds: null };
    const result = await completeDeliveries(ctx.db, [{ delivery: mine!, outcome, decision: { status: "delivered", delaySeconds: 0, deadReason: null, counted: true } }], DEFAULT_HEALTH_POLICY);
    expect(result.stale).toEqual([mine!.id]);
    expect((await ctx.db.query("SELECT stale FROM outbound_attempts")).rows).toEqual([{ stale: true }]);
    expect((await ctx.db.query("SELECT status FROM outbound_deliveries")).rows).toEqual([{ status: "pending" }]);
  });

  it("runs at most once per period across callers, and refuses a retention too short for the alert scan", async () => {
    const policy = { deliveredDays: 30, deadDays: 0, inboxProcessedDays: 0 };
    expect(await purgeIfDue(ctx.db, policy)).toEqual({ outbound: { deliveries: 0, attempts: 0, replays: 0, events: 0 }, inbox: { entries: 0 } });
    expect(await purgeIfDue(ctx.db, policy)).toBeNull(); // the hour is not over
    expect(await purgeIfDue(ctx.db, policy, { everySeconds: 0 })).not.toBeNull();
    expect(await purgeIfDue(ctx.db, { deliveredDays: 0, deadDays: 0, inboxProcessedDays: 0 }, { everySeconds: 0 })).toBeNull();
    await expect(purgeOutbox(ctx.db, { deliveredDays: 7, deadDays: 0 })).rejects.toThrow(/deliveredDays must be 0 \(keep forever\) or a whole number of days ≥ 8, got 7/);
    await expect(purgeOutbox(ctx.db, { deliveredDays: 30, deadDays: 0 }, { batchSize: 0 })).rejects.toThrow(/batchSize must be a whole number ≥ 1/);
  });

  it("runs in the background from the configuration, and stops cleanly", async () => {
    const s = await createSubscription(ctx.db, { url: "https://a.example/h", eventTypes: ["*"] });
    await enqueue(ctx.db, { id: "bg", type: "order.paid", data: {} });
    await finish(`bg:${s.id}`, "delivered", 9);
    await age("bg", 9);
    const config = loadConfig({ ADMIN_TOKEN: "retention-test-token", OUTBOUND_RETENTION_DAYS: "8" });
    const job = startRetention({ config, db: ctx.db, logger: createLogger({ level: "silent" }) }, { firstDelayMs: 1, intervalMs: 50, everySeconds: 0 });
    try {
      await waitFor("the purge", async () => (await ids("outbound_events")).length === 0, 5000);
    } finally {
      await job.stop();
    }
    expect(await ids("outbound_deliveries")).toEqual([]);
  });
});

describe("retention configuration", () => {
  const load = (env: Record<string, string>) => loadConfig({ ADMIN_TOKEN: "retention-test-token", ...env });

  it("keeps delivered work and processed inbox entries 30 days, and dead letters until replayed, by default", () => {
    const config = load({});
    expect([config.OUTBOUND_RETENTION_DAYS, config.OUTBOUND_DEAD_LETTER_RETENTION_DAYS, config.INBOX_RETENTION_DAYS]).toEqual([30, 0, 30]);
    expect(load({ OUTBOUND_RETENTION_DAYS: "0", OUTBOUND_DEAD_LETTER_RETENTION_DAYS: "90" }).OUTBOUND_DEAD_LETTER_RETENTION_DAYS).toBe(90);
  });

  it("refuses a retention shorter than the alert scan's 7 days, naming the variable", () => {
    expect(() => load({ OUTBOUND_RETENTION_DAYS: "7" })).toThrow(ConfigError);
    expect(() => load({ OUTBOUND_DEAD_LETTER_RETENTION_DAYS: "3" })).toThrow(/OUTBOUND_DEAD_LETTER_RETENTION_DAYS: use 0 \(keep forever\) or 8 to 36500 days/);
    expect(() => load({ OUTBOUND_RETENTION_DAYS: "thirty" })).toThrow(/OUTBOUND_RETENTION_DAYS/);
    expect(() => load({ INBOX_RETENTION_DAYS: "1" })).toThrow(/INBOX_RETENTION_DAYS: use 0 \(keep forever\) or 8 to 36500 days/);
  });
});
