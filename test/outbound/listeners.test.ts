/**
 * Listeners (`webhooks listen`, shared/outbound/listeners.ts) against the relay's own claim, on both
 * backends: while one is attached the relay's claim skips the subscription; what a listener pulls
 * is signed as the relay signs it; its answers are attempts decided as the relay decides, without
 * touching the endpoint's health; leases, heartbeats, expiry and detach give nothing away twice and
 * lose nothing; two listeners share the deliveries; ordered keys, pauses and transformations hold.
 */
import { randomUUID } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { afterEach, expect, it } from "vitest";
import { createSubscription, enqueue, getDelivery, getSubscription, listAttempts } from "../../shared/outbound/index.js";
import {
  attachListener, claimForListener, detachListener, ListenerGoneError, recordListenerAnswers, renewListener, type ListenerPolicy,
} from "../../shared/outbound/listeners.js";
import { DEFAULT_RETRY_POLICY } from "../../shared/outbound/retryPolicy.js";
import { claimDueDeliveries } from "../../shared/outbound/sql/claimDeliveries.js";
import { pauseSubscription, resumeSubscription } from "../../shared/outbound/subscriptionChanges.js";
import { describeEachBackend } from "../support/databases.js";
import { resetOutbound, waitFor } from "./support/receiver.js";

const policy: ListenerPolicy = { retry: DEFAULT_RETRY_POLICY };
const relayClaim = (db: Parameters<typeof claimDueDeliveries>[0]) => claimDueDeliveries(db, { limit: 100, leaseSeconds: 60, leaseToken: randomUUID() });

describeEachBackend("listeners", (ctx) => {
  afterEach(() => resetOutbound(ctx.db));

  it("the relay's claim skips a subscription while a listener is attached; the listener gets its deliveries, signed as the relay signs them", async () => {
    const sub = await createSubscription(ctx.db, { url: "https://example.com/h", eventTypes: ["l.*"], headers: { "x-team": "a" } });
    const other = await createSubscription(ctx.db, { url: "https://example.com/o", eventTypes: ["l.*"] });
    const listener = await attachListener(ctx.db, sub.id, { forwardTo: "http://localhost:3000/hooks" });
    expect(listener).toMatchObject({ subscriptionId: sub.id, leaseSeconds: 30, otherListeners: 0, subscription: { eventTypes: ["l.*"], paused: false } });
    await enqueue(ctx.db, { id: "l1", type: "l.a", data: { n: 1 } });

    // The relay takes the other subscription's delivery only.
    expect((await relayClaim(ctx.db)).map((d) => d.subscriptionId)).toEqual([other.id]);
    const [got] = await claimForListener(ctx.db, sub.id, listener.id, 10, policy);
    expect(got).toMatchObject({ id: `l1:${sub.id}`, eventId: "l1", eventType: "l.a", attempt: 1 });
    expect(got!.headers).toMatchObject({ "content-type": "application/json", "x-team": "a", "webhook-id": `l1:${sub.id}` });
    expect(new Webhook(sub.secrets![0]!).verify(got!.body, got!.headers)).toMatchObject({ id: "l1", type: "l.a", data: { n: 1 } });
    // Leased: neither another pull nor the relay gets it again.
    expect(await claimForListener(ctx.db, sub.id, listener.id, 10, policy)).toEqual([]);

    // Detached: what it held is due at once, and the relay takes the subscription again.
    expect(await detachListener(ctx.db, sub.id, listener.id)).toEqual({ detached: true, released: 1 });
    expect((await relayClaim(ctx.db)).map((d) => d.id)).toEqual([`l1:${sub.id}`]);
    await expect(claimForListener(ctx.db, sub.id, listener.id, 10, policy)).rejects.toBeInstanceOf(ListenerGoneError);
  });

  it("a local 500 is a counted, retried attempt and a 400 a dead letter, logged with the listener; the endpoint's health is untouched", async () => {
    const sub = await createSubscription(ctx.db, { url: "https://example.com/h", eventTypes: ["l.*"], maxAttempts: 2 });
    const listener = await attachListener(ctx.db, sub.id);
    await enqueue(ctx.db, { id: "r1", type: "l.a", data: 1 });
    await enqueue(ctx.db, { id: "r2", type: "l.a", data: 2 });
    const pulled = await claimForListener(ctx.db, sub.id, listener.id, 10, policy);
    expect(pulled.map((d) => d.eventId).sort()).toEqual(["r1", "r2"]);
    const recorded = await recordListenerAnswers(ctx.db, sub.id, listener.id, [
      { deliveryId: `r1:${sub.id}`, status: 500, durationMs: 7, responseExcerpt: "boom", responseHeaders: { "X-Trace": "t1", "Retry-After": "3" } },
      { deliveryId: `r2:${sub.id}`, status: 400, durationMs: 2, responseExcerpt: "bad" },
    ], policy);
    expect(recorded).toEqual([
      { deliveryId: `r1:${sub.id}`, outcome: "retrying", retryInSeconds: 3, deadReason: null }, // its Retry-After
      { deliveryId: `r2:${sub.id}`, outcome: "dead", retryInSeconds: null, deadReason: "permanent failure: HTTP 400" },
    ]);
    expect(await getDelivery(ctx.db, `r1:${sub.id}`)).toMatchObject({ status: "pending", attempts: 1 });
    expect(await listAttempts(ctx.db, `r1:${sub.id}`)).toMatchObject([
      { attemptNumber: 1, status: 500, result: "retryable", latencyMs: 7, responseExcerpt: "boom", listenerId: listener.id, responseHeaders: { "x-trace": "t1", "retry-after": "3" }, stale: false },
    ]);
    const health = (await getSubscription(ctx.db, sub.id)).health;
    expect(health.consecutiveFailures).toBe(0);
    expect((await getSubscription(ctx.db, sub.id)).status).toBe("active");

    // Due again (3 s), it comes back to the listener; no answer (connection refused) spends its last attempt.
    const again = await waitFor("the retry due", async () => (await claimForListener(ctx.db, sub.id, listener.id, 10, policy))[0] ?? null, 15_000);
    expect(again).toMatchObject({ id: `r1:${sub.id}`, attempt: 2 });
    const [last] = await recordListenerAnswers(ctx.db, sub.id, listener.id, [{ deliveryId: `r1:${sub.id}`, status: null, error: "connection_refused", durationMs: 1 }], policy);
    expect(last).toMatchObject({ outcome: "dead", deadReason: "exhausted: 2 attempts, last connection_refused" });
    expect((await getSubscription(ctx.db, sub.id)).health.consecutiveFailures).toBe(0);
  });

  it("an answer after the listener gave its lease back is logged stale and changes nothing; one for another subscription's delivery is refused", async () => {
    const sub = await createSubscription(ctx.db, { url: "https://example.com/h", eventTypes: ["l.*"] });
    const other = await createSubscription(ctx.db, { url: "https://example.com/o", eventTypes: ["x.*"] });
    const listener = await attachListener(ctx.db, sub.id);
    await enqueue(ctx.db, { id: "s1", type: "l.a", data: 1 });
    await enqueue(ctx.db, { id: "x1", type: "x.a", data: 1 });
    await claimForListener(ctx.db, sub.id, listener.id, 10, policy);
    await detachListener(ctx.db, sub.id, listener.id);
    const [relayHas] = await relayClaim(ctx.db);
    expect(relayHas?.id).toBe(`s1:${sub.id}`);
    expect(await recordListenerAnswers(ctx.db, sub.id, listener.id, [{ deliveryId: `s1:${sub.id}`, status: 200, durationMs: 1 }], policy))
      .toEqual([{ deliveryId: `s1:${sub.id}`, outcome: "stale", retryInSeconds: null, deadReason: null }]);
    expect(await getDelivery(ctx.db, `s1:${sub.id}`)).toMatchObject({ status: "pending", attempts: 0 });
    expect((await listAttempts(ctx.db, `s1:${sub.id}`)).map((a) => a.stale)).toEqual([true]);
    await expect(recordListenerAnswers(ctx.db, sub.id, listener.id, [{ deliveryId: `x1:${other.id}`, status: 200, durationMs: 1 }], policy))
      .rejects.toThrow(`answers[0].deliveryId: no delivery "x1:${other.id}" of this subscription`);
  });

  it("heartbeats keep a listener and the deliveries it holds; without them both run out, the relay resumes and nothing is lost", async () => {
    const sub = await createSubscription(ctx.db, { url: "https://example.com/h", eventTypes: ["l.*"] });
    const listener = await attachListener(ctx.db, sub.id, { leaseSeconds: 5 });
    await enqueue(ctx.db, { id: "h1", type: "l.a", data: 1 });
    const [held] = await claimForListener(ctx.db, sub.id, listener.id, 10, policy);
    // 7 s of heartbeats naming it: past its first 5 s lease, nobody else gets it.
    for (let i = 0; i < 4; i++) {
      await new Promise((r) => setTimeout(r, 1800));
      await renewListener(ctx.db, sub.id, listener.id, [held!.id]);
    }
    expect(await relayClaim(ctx.db)).toEqual([]);
    // Then the listener vanishes: after its lease the relay takes the subscription and the delivery.
    const taken = await waitFor("the relay to take the delivery over", async () => (await relayClaim(ctx.db))[0] ?? null, 15_000);
    expect(taken!.id).toBe(held!.id);
    await expect(renewListener(ctx.db, sub.id, listener.id)).rejects.toBeInstanceOf(ListenerGoneError);
  }, 40_000);

  it("two listeners share a subscription's deliveries, each delivery to one of them", async () => {
    const sub = await createSubscription(ctx.db, { url: "https://example.com/h", eventTypes: ["l.*"] });
    const a = await attachListener(ctx.db, sub.id);
    const b = await attachListener(ctx.db, sub.id);
    expect(b.otherListeners).toBe(1);
    for (let n = 0; n < 4; n++) await enqueue(ctx.db, { id: `t${n}`, type: "l.a", data: n });
    const toA = await claimForListener(ctx.db, sub.id, a.id, 2, policy);
    const toB = await claimForListener(ctx.db, sub.id, b.id, 10, policy);
    expect(toA).toHaveLength(2);
    expect(toB).toHaveLength(2);
    expect(new Set([...toA, ...toB].map((d) => d.id)).size).toBe(4);
    // One detaching leaves the other attached: the relay still keeps away.
    await detachListener(ctx.db, sub.id, a.id);
    expect(await relayClaim(ctx.db)).toEqual([]);
    expect((await claimForListener(ctx.db, sub.id, b.id, 10, policy)).map((d) => d.id).sort()).toEqual(toA.map((d) => d.id).sort());
  });

  it("an ordered key goes one at a time through a listener too; a paused subscription gives it nothing", async () => {
    const sub = await createSubscription(ctx.db, { url: "https://example.com/h", eventTypes: ["l.*"], ordered: true });
    const listener = await attachListener(ctx.db, sub.id);
    await enqueue(ctx.db, { id: "o1", type: "l.a", data: 1, orderingKey: "k" });
    await enqueue(ctx.db, { id: "o2", type: "l.a", data: 2, orderingKey: "k" });
    expect((await claimForListener(ctx.db, sub.id, listener.id, 10, policy)).map((d) => d.eventId)).toEqual(["o1"]);
    await recordListenerAnswers(ctx.db, sub.id, listener.id, [{ deliveryId: `o1:${sub.id}`, status: 204, durationMs: 1 }], policy);
    await pauseSubscription(ctx.db, sub.id);
    expect(await claimForListener(ctx.db, sub.id, listener.id, 10, policy)).toEqual([]);
    await resumeSubscription(ctx.db, sub.id);
    expect((await claimForListener(ctx.db, sub.id, listener.id, 10, policy)).map((d) => d.eventId)).toEqual(["o2"]);
  });

  it("the subscription's transformation: its body is what the listener gets, signed; a skipped event is done without being handed out", async () => {
    const sub = await createSubscription(ctx.db, {
      url: "https://example.com/h", eventTypes: ["l.*"],
      transformation: `(e) => e.type === "l.skip" ? null : ({ body: { wrapped: e.data }, headers: { "x-shape": "wrapped" } })`,
    });
    const listener = await attachListener(ctx.db, sub.id);
    await enqueue(ctx.db, { id: "w1", type: "l.keep", data: 5 });
    await enqueue(ctx.db, { id: "w2", type: "l.skip", data: 6 });
    const got = await claimForListener(ctx.db, sub.id, listener.id, 10, policy);
    expect(got.map((d) => d.eventId)).toEqual(["w1"]);
    expect(JSON.parse(got[0]!.body)).toEqual({ wrapped: 5 });
    expect(got[0]!.headers["x-shape"]).toBe("wrapped");
    expect(new Webhook(sub.secrets![0]!).verify(got[0]!.body, got[0]!.headers)).toEqual({ wrapped: 5 });
    expect(await getDelivery(ctx.db, `w2:${sub.id}`)).toMatchObject({ status: "delivered" });
    expect((await listAttempts(ctx.db, `w2:${sub.id}`))[0]).toMatchObject({ errorClass: "skipped_by_transformation", status: null });
  });
});
