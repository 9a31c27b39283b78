/**
 * shared/telemetry/platformGauges.ts on both databases: what each gauge reads from real rows
 * (queue lag among sendable subscriptions only, leases still held, the breaker states, the inbox
 * backlog), and the endpoint label's bound (the 20 busiest named, the rest under `other`).
 */
import { afterEach, describe, expect, it } from "vitest";
import { createSubscription, enqueueMany } from "../../shared/outbound/index.js";
import { pauseSubscription } from "../../shared/outbound/subscriptionChanges.js";
import { storeInboxEntry } from "../../shared/inbound/inbox.js";
import { ENDPOINT_LABEL_LIMIT, OTHER_ENDPOINTS } from "../../shared/telemetry/names.js";
import { boundEndpoints, readPlatformGauges } from "../../shared/telemetry/platformGauges.js";
import { describeEachBackend } from "../support/databases.js";
import { resetOutbound } from "../outbound/support/receiver.js";

/** What a claim writes (shared/outbound/sql/claimDeliveries.ts): a token and the lease's expiry; next_attempt_at stays. */
const LEASED = "lease_token = gen_random_uuid(), lease_expires_at = now() + interval '60 seconds'";
const ZERO = { queueLagSeconds: 0, inFlight: {}, breaker: { closed: 0, degraded: 0, open: 0, disabled: 0 }, inboxBacklog: { pending: 0, deferred: 0, failed: 0 } };

describe("boundEndpoints", () => {
  const counts = (n: number) => Array.from({ length: n }, (_, i) => ({ endpoint: `sub_${String(i).padStart(2, "0")}`, n: i + 1 }));

  it(`names the ${ENDPOINT_LABEL_LIMIT} busiest and sums the rest under "${OTHER_ENDPOINTS}"`, () => {
    const out = boundEndpoints(counts(25));
    expect(Object.keys(out)).toHaveLength(ENDPOINT_LABEL_LIMIT + 1);
    expect(out.sub_24).toBe(25);
    expect(out.sub_05).toBe(6);
    expect(out.sub_04).toBeUndefined();
    expect(out[OTHER_ENDPOINTS]).toBe(1 + 2 + 3 + 4 + 5);
  });

  it("no `other` when they all fit; ties ordered by id, so the named set is stable", () => {
    expect(boundEndpoints(counts(ENDPOINT_LABEL_LIMIT))[OTHER_ENDPOINTS]).toBeUndefined();
    expect(boundEndpoints([{ endpoint: "b", n: 1 }, { endpoint: "a", n: 1 }, { endpoint: "c", n: 1 }], 2)).toEqual({ a: 1, b: 1, other: 1 });
    expect(boundEndpoints([])).toEqual({});
  });
});

describeEachBackend("platform gauges", (ctx) => {
  afterEach(async () => {
    await resetOutbound(ctx.db);
    await ctx.db.query("TRUNCATE inbox_entries CASCADE");
  });

  const subscription = async (tag: string) => {
    const sub = await createSubscription(ctx.db, { url: `http://127.0.0.1:9/${tag}`, eventTypes: [`g.${tag}`] });
    await ctx.db.transaction((tx) => enqueueMany(tx, [1, 2, 3].map((i) => ({ id: `${tag}-${i}`, type: `g.${tag}`, data: { i } }))));
    return sub.id;
  };
  const setDeliveries = (subId: string, set: string, limit = 3) => ctx.db.query(
    `UPDATE outbound_deliveries SET ${set} WHERE id IN (SELECT id FROM outbound_deliveries WHERE subscription_id = $1 ORDER BY id LIMIT $2)`, [subId, limit]);

  it("an empty platform reads zero everywhere", async () => {
    expect(await readPlatformGauges(ctx.db)).toEqual(ZERO);
  });

  it("queue lag: the oldest due delivery's wait, of subscriptions the relay sends to now (not paused, disabled or deleted)", async () => {
    const due = await subscription("due");
    const paused = await subscription("paused");
    const disabled = await subscription("disabled");
    const future = await subscription("future");
    await ctx.db.query("UPDATE outbound_deliveries SET next_attempt_at = now() + interval '1 hour' WHERE subscription_id = $1", [due]);
    await ctx.db.query("UPDATE outbound_deliveries SET next_attempt_at = now() - interval '90 seconds' WHERE id = $1", [`due-1:${due}`]);
    // Older still, but held by a relay: in flight, not waiting.
    await ctx.db.query(`UPDATE outbound_deliveries SET next_attempt_at = now() - interval '1 hour', ${LEASED} WHERE id = $1`, [`due-2:${due}`]);
    await setDeliveries(paused, "next_attempt_at = now() - interval '2 hours'");
    await pauseSubscription(ctx.db, paused);
    await setDeliveries(disabled, "next_attempt_at = now() - interval '3 hours'");
    await ctx.db.query("UPDATE outbound_subscriptions SET status = 'disabled', next_probe_at = now() + interval '1 minute' WHERE id = $1", [disabled]);
    await setDeliveries(future, "next_attempt_at = now() + interval '1 hour'");
    const lag = (await readPlatformGauges(ctx.db)).queueLagSeconds;
    expect(lag).toBeGreaterThanOrEqual(90);
    expect(lag).toBeLessThan(3600); // not the leased one's, the paused one's nor the disabled one's
    // Delivered or dead rows are not waiting.
    await ctx.db.query("UPDATE outbound_deliveries SET status = 'delivered' WHERE subscription_id = $1", [due]);
    const after = (await readPlatformGauges(ctx.db)).queueLagSeconds;
    expect(after).toBeLessThan(90);
  });

  it("in flight: deliveries leased now, per subscription; an expired lease or a released row is not", async () => {
    const a = await subscription("a");
    const b = await subscription("b");
    await setDeliveries(a, LEASED, 2);
    await setDeliveries(b, "lease_token = gen_random_uuid(), lease_expires_at = now() - interval '1 second'", 3); // run out: due again
    expect((await readPlatformGauges(ctx.db)).inFlight).toEqual({ [a]: 2 });
    await setDeliveries(b, LEASED, 1);
    await ctx.db.query("UPDATE outbound_deliveries SET status = 'delivered' WHERE subscription_id = $1 AND lease_token IS NOT NULL AND id = (SELECT min(id) FROM outbound_deliveries WHERE subscription_id = $1)", [a]);
    expect((await readPlatformGauges(ctx.db)).inFlight).toEqual({ [a]: 1, [b]: 1 });
  });

  it(`in flight over ${ENDPOINT_LABEL_LIMIT + 2} subscriptions: ${ENDPOINT_LABEL_LIMIT} named and "${OTHER_ENDPOINTS}"`, async () => {
    const ids: string[] = [];
    for (let i = 0; i < ENDPOINT_LABEL_LIMIT + 2; i += 1) ids.push(await subscription(`many${i}`));
    for (const id of ids) await setDeliveries(id, LEASED, 1);
    const { inFlight } = await readPlatformGauges(ctx.db);
    expect(Object.keys(inFlight)).toHaveLength(ENDPOINT_LABEL_LIMIT + 1);
    expect(inFlight[OTHER_ENDPOINTS]).toBe(2);
    expect(Object.values(inFlight).reduce((s, n) => s + n, 0)).toBe(ENDPOINT_LABEL_LIMIT + 2);
  });

  it("breaker: active is closed, degraded, disabled by the breaker (probing) is open, 410 Gone or an operator's is disabled; deleted ones are left out", async () => {
    const ids = await Promise.all(["c1", "c2", "d", "o", "x", "del"].map(subscription));
    await ctx.db.query("UPDATE outbound_subscriptions SET status = 'degraded' WHERE id = $1", [ids[2]]);
    await ctx.db.query("UPDATE outbound_subscriptions SET status = 'disabled', next_probe_at = now() + interval '1 minute', disabled_reason = 'circuit open: test' WHERE id = $1", [ids[3]]);
    await ctx.db.query("UPDATE outbound_subscriptions SET status = 'disabled', next_probe_at = NULL, disabled_reason = 'gone: test' WHERE id = $1", [ids[4]]);
    await ctx.db.query("UPDATE outbound_subscriptions SET deleted_at = now() WHERE id = $1", [ids[5]]);
    expect((await readPlatformGauges(ctx.db)).breaker).toEqual({ closed: 2, degraded: 1, open: 1, disabled: 1 });
  });

  it("inbox backlog: entries by status not processed yet; processed, quarantined and ignored are not backlog", async () => {
    const statuses = ["pending", "pending", "deferred", "failed", "processed", "quarantined", "ignored"];
    for (const [i, status] of statuses.entries()) {
      await storeInboxEntry(ctx.db, { partnerName: "shop", partnerEventId: `e${i}`, eventType: "order.paid", payload: Buffer.from("{}"), signatureVerified: true, receivedAt: new Date() });
      await ctx.db.query("UPDATE inbox_entries SET status = $2 WHERE partner_event_id = $1", [`e${i}`, status]);
    }
    expect((await readPlatformGauges(ctx.db)).inboxBacklog).toEqual({ pending: 2, deferred: 1, failed: 1 });
  });
});
