/**
 * The lease and completion guards, each clause of their WHERE on its own, against the real
 * databases (PGlite and PostgreSQL). Stryker does not mutate inside SQL text (an emptied statement
 * fails every test), so these tests are the mutants by hand: each case is a row that one clause
 * alone keeps out, and fails if that clause is dropped (docs/testing.md).
 *
 * - renewLeases: the token matches, the delivery is pending, a row another transaction holds is
 *   skipped (not waited for), and the new expiry is `leaseSeconds` from now.
 * - releaseDeliveries: the token matches, the delivery is pending; released, it is claimable at once.
 * - completeDeliveries: the token matches, the delivery is pending (cancelled: stale and cancelled).
 * - claimDueDeliveries: only due, pending deliveries that no live lease holds, of subscriptions
 *   neither disabled, paused nor throttled.
 */
import { randomUUID } from "node:crypto";
import { afterEach, expect, it } from "vitest";
import { createSubscription, enqueue, type Completion } from "../../shared/outbound/index.js";
import { DEFAULT_HEALTH_POLICY } from "../../shared/outbound/health.js";
import { claimDueDeliveries } from "../../shared/outbound/sql/claimDeliveries.js";
import { completeDeliveries } from "../../shared/outbound/sql/completeDeliveries.js";
import { releaseDeliveries } from "../../shared/outbound/sql/releaseDeliveries.js";
import { renewLeases } from "../../shared/outbound/sql/renewLeases.js";
import { deleteSubscription, pauseSubscription } from "../../shared/outbound/subscriptionChanges.js";
import type { DeliveryOutcome } from "../../shared/outbound/transport.js";
import type { ClaimedDelivery } from "../../shared/outbound/types.js";
import { describeEachBackend } from "../support/databases.js";
import { resetOutbound } from "./support/receiver.js";

const ok: DeliveryOutcome = { result: "delivered", status: 200, latencyMs: 3, errorClass: null, responseExcerpt: "", retryAfterSeconds: null };

describeEachBackend("lease and completion guards", (ctx) => {
  afterEach(() => resetOutbound(ctx.db));

  /** One subscription with `n` due deliveries, claimed under one lease. */
  async function claimed(n = 1, leaseSeconds = 60): Promise<{ subscriptionId: string; deliveries: ClaimedDelivery[] }> {
    const sub = await createSubscription(ctx.db, { url: "https://example.com/hook", eventTypes: ["*"] });
    for (let i = 0; i < n; i++) await enqueue(ctx.db, { id: `g-${randomUUID()}`, type: "a.b", data: { i } });
    const deliveries = await claimDueDeliveries(ctx.db, { limit: 100, leaseSeconds, leaseToken: randomUUID() });
    expect(deliveries).toHaveLength(n);
    return { subscriptionId: sub.id, deliveries };
  }
  const lease = async (id: string) =>
    (await ctx.db.query<{ lease_token: string | null; left: number | null; status: string }>(
      "SELECT lease_token, extract(epoch FROM lease_expires_at - now())::float8 AS left, status FROM outbound_deliveries WHERE id = $1", [id],
    )).rows[0]!;
  const someoneElse = (d: ClaimedDelivery): ClaimedDelivery => ({ ...d, leaseToken: randomUUID() });
  const completion = (d: ClaimedDelivery): Completion => ({ delivery: d, outcome: ok, decision: { status: "delivered", delaySeconds: 0, deadReason: null, counted: true } });
  const claimAgain = () => claimDueDeliveries(ctx.db, { limit: 100, leaseSeconds: 60, leaseToken: randomUUID() });

  /** One subscription with one due, unclaimed delivery. */
  async function due(): Promise<{ subscriptionId: string; deliveryId: string }> {
    const sub = await createSubscription(ctx.db, { url: "https://example.com/hook", eventTypes: ["*"] });
    const id = `g-${randomUUID()}`;
    await enqueue(ctx.db, { id, type: "a.b", data: {} });
    return { subscriptionId: sub.id, deliveryId: `${id}:${sub.id}` };
  }

  it("claimDueDeliveries: a due, pending, unleased delivery of an active subscription is claimed", async () => {
    const { deliveryId } = await due();
    expect((await claimAgain()).map((d) => d.id)).toEqual([deliveryId]);
  });

  it.each([
    ["its subscription is disabled", (s: string) => ctx.db.query("UPDATE outbound_subscriptions SET status = 'disabled', disabled_at = now() WHERE id = $1", [s])],
    ["its subscription is paused", (s: string) => pauseSubscription(ctx.db, s)],
    ["its subscription is throttled", (s: string) => ctx.db.query("UPDATE outbound_subscriptions SET throttled_until = now() + interval '1 hour' WHERE id = $1", [s])],
    ["it is not due yet", (s: string) => ctx.db.query("UPDATE outbound_deliveries SET next_attempt_at = now() + interval '1 hour' WHERE subscription_id = $1", [s])],
    ["it is dead", (s: string) => ctx.db.query("UPDATE outbound_deliveries SET status = 'dead', dead_at = now(), dead_reason = 'test' WHERE subscription_id = $1", [s])],
  ])("claimDueDeliveries: nothing is claimed when %s", async (_why, change) => {
    const { subscriptionId } = await due();
    await change(subscriptionId);
    expect(await claimAgain()).toEqual([]);
  });

  it("claimDueDeliveries: a throttle that has passed no longer holds", async () => {
    const { subscriptionId, deliveryId } = await due();
    await ctx.db.query("UPDATE outbound_subscriptions SET throttled_until = now() - interval '1 second' WHERE id = $1", [subscriptionId]);
    expect((await claimAgain()).map((d) => d.id)).toEqual([deliveryId]);
  });

  it("claimDueDeliveries: a live lease hides the delivery; once expired, another claim takes it", async () => {
    const { deliveries: [a] } = await claimed(1);
    expect(await claimAgain()).toEqual([]);
    await ctx.db.query("UPDATE outbound_deliveries SET lease_expires_at = now() - interval '1 second' WHERE id = $1", [a!.id]);
    const [b] = await claimAgain();
    expect(b?.id).toBe(a!.id);
    expect(b!.leaseToken).not.toBe(a!.leaseToken);
  });

  it("renewLeases: nothing to renew asks nothing", async () => {
    expect(await renewLeases(ctx.db, [], 30)).toEqual([]);
  });

  it("renewLeases: pushes the expiry of its own pending leases to leaseSeconds from now, and says which", async () => {
    const { deliveries: [a, b] } = await claimed(2, 5);
    expect((await renewLeases(ctx.db, [a!, b!], 300)).sort()).toEqual([a!.id, b!.id].sort());
    for (const d of [a!, b!]) {
      const l = await lease(d.id);
      expect(l.lease_token).toBe(d.leaseToken);
      expect(l.left).toBeGreaterThan(290);
      expect(l.left).toBeLessThanOrEqual(300);
    }
  });

  it("renewLeases: another token's lease is not renewed (a lease taken over stays lost)", async () => {
    const { deliveries: [a] } = await claimed(1, 5);
    expect(await renewLeases(ctx.db, [someoneElse(a!)], 300)).toEqual([]);
    expect((await lease(a!.id)).left).toBeLessThanOrEqual(5);
  });

  it("renewLeases: a delivery no longer pending (cancelled by its subscription's deletion) is not renewed", async () => {
    const { subscriptionId, deliveries: [a] } = await claimed(1, 5);
    await deleteSubscription(ctx.db, subscriptionId);
    expect((await lease(a!.id)).status).not.toBe("pending");
    expect(await renewLeases(ctx.db, [a!], 300)).toEqual([]);
  });

  it("renewLeases: a row another transaction is writing is skipped at once, not waited for", async () => {
    if (ctx.backend === "pglite") return; // one connection: no second transaction to hold the row
    const { deliveries: [a, b] } = await claimed(2, 5);
    let release!: () => void;
    const holding = new Promise<void>((r) => { release = r; });
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => { locked = r; });
    const writer = ctx.db.transaction(async (tx) => {
      await tx.query("SELECT 1 FROM outbound_deliveries WHERE id = $1 FOR UPDATE", [a!.id]);
      locked();
      await holding;
    });
    await isLocked;
    const started = Date.now();
    expect(await renewLeases(ctx.db, [a!, b!], 300)).toEqual([b!.id]);
    expect(Date.now() - started).toBeLessThan(5000);
    release();
    await writer;
  });

  it("releaseDeliveries: nothing to release asks nothing", async () => {
    expect(await releaseDeliveries(ctx.db, [])).toBe(0);
  });

  it("releaseDeliveries: its own leases are given back and claimable at once", async () => {
    const { deliveries } = await claimed(2);
    expect(await claimAgain()).toEqual([]);
    expect(await releaseDeliveries(ctx.db, deliveries)).toBe(2);
    for (const d of deliveries) expect(await lease(d.id)).toMatchObject({ lease_token: null, left: null, status: "pending" });
    expect((await claimAgain()).map((d) => d.id).sort()).toEqual(deliveries.map((d) => d.id).sort());
  });

  it("releaseDeliveries: another token's lease is left alone", async () => {
    const { deliveries: [a] } = await claimed(1);
    expect(await releaseDeliveries(ctx.db, [someoneElse(a!)])).toBe(0);
    expect((await lease(a!.id)).lease_token).toBe(a!.leaseToken);
    expect(await claimAgain()).toEqual([]);
  });

  it("releaseDeliveries: a delivery no longer pending is not touched", async () => {
    const { subscriptionId, deliveries: [a] } = await claimed(1);
    await deleteSubscription(ctx.db, subscriptionId);
    const before = await lease(a!.id);
    expect(await releaseDeliveries(ctx.db, [a!])).toBe(0);
    expect((await lease(a!.id)).status).toBe(before.status);
  });

  it("completeDeliveries: its own lease's outcome is written", async () => {
    const { deliveries: [a] } = await claimed(1);
    const r = await completeDeliveries(ctx.db, [completion(a!)], DEFAULT_HEALTH_POLICY);
    expect(r).toMatchObject({ accepted: [a!.id], stale: [], cancelled: [] });
    expect(await lease(a!.id)).toMatchObject({ status: "delivered", lease_token: null });
  });

  it("completeDeliveries: an outcome under another token is stale and changes nothing", async () => {
    const { deliveries: [a] } = await claimed(1);
    const r = await completeDeliveries(ctx.db, [completion(someoneElse(a!))], DEFAULT_HEALTH_POLICY);
    expect(r).toMatchObject({ accepted: [], stale: [a!.id], cancelled: [] });
    expect(await lease(a!.id)).toMatchObject({ status: "pending", lease_token: a!.leaseToken });
  });

  it("completeDeliveries: a delivery cancelled during its attempt stays cancelled: stale, and said to be cancelled", async () => {
    const { subscriptionId, deliveries: [a] } = await claimed(1);
    await deleteSubscription(ctx.db, subscriptionId);
    const status = (await lease(a!.id)).status;
    const r = await completeDeliveries(ctx.db, [completion(a!)], DEFAULT_HEALTH_POLICY);
    expect(r).toMatchObject({ accepted: [], stale: [a!.id], cancelled: [a!.id] });
    expect((await lease(a!.id)).status).toBe(status);
  });
});
