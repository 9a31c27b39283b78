/**
 * Ordered delivery (issue 15, migration 013): for a subscription created with `ordered: true`, the
 * deliveries of one ordering key go one at a time, in enqueue order; a dead letter holds its key
 * until it is replayed or skipped; other keys never wait. Driven through the relay's own SQL
 * (claim, complete) with outcomes chosen by the test; both backends.
 */
import { afterEach, expect, it } from "vitest";
import {
  createSubscription, enableSubscription, enqueue, enqueueMany, EventConflictError, getDelivery, KeyNotBlockedError,
  OutboundValidationError, pauseSubscription, replayDeadLetter, replayDeadLetters, resumeSubscription,
} from "../../shared/outbound/index.js";
import { getOrderingKey, listOrderingKeys, skipOrderingKey } from "../../shared/outbound/ordering.js";
import { claimProbeDeliveries } from "../../shared/outbound/sql/claimDeliveries.js";
import { describeEachBackend } from "../support/databases.js";
import { claim, complete, completion, drain, expireLeases, resetOrdering, timePasses } from "./support/orderingDriver.js";

const ev = (id: string, orderingKey?: string, type = "order.changed") => ({ id, type, data: { id }, ...(orderingKey ? { orderingKey } : {}) });
const ids = (ds: { id: string }[]) => ds.map((d) => d.id).sort();

describeEachBackend("ordered delivery", (ctx) => {
  afterEach(() => resetOrdering(ctx.db));

  const ordered = () => createSubscription(ctx.db, { url: "https://example.com/o", eventTypes: ["*"], ordered: true });

  it("one key goes one at a time in enqueue order; other keys, unkeyed events and unordered subscriptions do not wait", async () => {
    const sub = await ordered();
    const plain = await createSubscription(ctx.db, { url: "https://example.com/p", eventTypes: ["*"] });
    // Ids deliberately not in enqueue order: the order is the enqueue's, not the ids'.
    await enqueue(ctx.db, ev("z1", "order-1"));
    await enqueue(ctx.db, ev("a2", "order-1"));
    await enqueueMany(ctx.db, [ev("m3", "order-1"), ev("b4", "order-1"), ev("k1", "order-2"), ev("free")]);
    const first = await claim(ctx.db);
    expect(ids(first)).toEqual([
      `free:${plain.id}`, `free:${sub.id}`, `k1:${plain.id}`, `k1:${sub.id}`, `z1:${plain.id}`, `z1:${sub.id}`,
      `a2:${plain.id}`, `m3:${plain.id}`, `b4:${plain.id}`,
    ].sort());
    // Nothing more of order-1 while its head is held, whatever else happens.
    expect(await claim(ctx.db)).toEqual([]);
    await complete(ctx.db, first.map((d) => completion(d, "ok")));
    const sent = await drain(ctx.db);
    expect(sent).toEqual([`a2:${sub.id}`, `m3:${sub.id}`, `b4:${sub.id}`]);
    expect(await listOrderingKeys(ctx.db, sub.id)).toEqual([]); // every key idle again
    // A waiting delivery is pending with no due time (the API shows null).
    await enqueueMany(ctx.db, [ev("w1", "k"), ev("w2", "k")]);
    expect(await getDelivery(ctx.db, `w2:${sub.id}`)).toMatchObject({ status: "pending", nextAttemptAt: null });
    expect((await getDelivery(ctx.db, `w1:${sub.id}`)).nextAttemptAt).toBeInstanceOf(Date);
  });

  it("a retry keeps the key waiting through the retry schedule; a crashed relay's lease running out gives the same head to another relay, never the next", async () => {
    const sub = await ordered();
    await enqueueMany(ctx.db, [ev("e1", "k"), ev("e2", "k"), ev("e3", "k")]);
    const [head] = await claim(ctx.db);
    expect(head!.id).toBe(`e1:${sub.id}`);
    expect(head!.orderingKey).toBe("k");
    await complete(ctx.db, [completion(head!, "retry", 3600)]); // retried in an hour
    expect(await claim(ctx.db)).toEqual([]); // e2 does not overtake the retrying e1
    await timePasses(ctx.db);
    const [again] = await claim(ctx.db);
    expect(again!.id).toBe(`e1:${sub.id}`);
    // That relay dies holding it; its lease runs out; another relay gets e1 again, not e2.
    expect(await claim(ctx.db)).toEqual([]);
    await expireLeases(ctx.db, [again!]);
    const [takeover] = await claim(ctx.db);
    expect(takeover!.id).toBe(`e1:${sub.id}`);
    // The dead relay's late completion is stale: it moves nothing.
    const late = await complete(ctx.db, [completion(again!, "ok")]);
    expect(late.stale).toEqual([again!.id]);
    expect(await claim(ctx.db)).toEqual([]);
    await complete(ctx.db, [completion(takeover!, "ok")]);
    expect(await drain(ctx.db)).toEqual([`e2:${sub.id}`, `e3:${sub.id}`]);
  });

  it("a dead letter blocks its key (listed as blocked) until skipped: it stays dead, the next goes; other keys never wait", async () => {
    const sub = await ordered();
    await enqueueMany(ctx.db, [ev("a1", "a"), ev("a2", "a"), ev("a3", "a"), ev("b1", "b"), ev("b2", "b")]);
    const sent = await drain(ctx.db, (d) => (d.id.startsWith("a1") ? "dead" : "ok"));
    expect(sent.filter((id) => id.startsWith("b"))).toEqual([`b1:${sub.id}`, `b2:${sub.id}`]);
    expect(sent.filter((id) => id.startsWith("a"))).toEqual([`a1:${sub.id}`]);
    const keys = await listOrderingKeys(ctx.db, sub.id);
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ orderingKey: "a", blocked: true, waiting: 2, head: { id: `a1:${sub.id}`, status: "dead", deadReason: "permanent: HTTP 400" } });
    expect(keys[0]!.blockedAt).toBeInstanceOf(Date);
    expect(await listOrderingKeys(ctx.db, sub.id, { blocked: false })).toEqual([]);
    // A later event of the blocked key waits too.
    await enqueue(ctx.db, ev("a4", "a"));
    expect(await claim(ctx.db)).toEqual([]);
    // A skip naming another delivery is refused (a second click must not skip the next one).
    await expect(skipOrderingKey(ctx.db, sub.id, "a", { deliveryId: `a2:${sub.id}` })).rejects.toBeInstanceOf(KeyNotBlockedError);
    expect(await skipOrderingKey(ctx.db, sub.id, "a", { deliveryId: `a1:${sub.id}` })).toEqual({ orderingKey: "a", skipped: `a1:${sub.id}`, released: `a2:${sub.id}` });
    expect((await getDelivery(ctx.db, `a1:${sub.id}`)).status).toBe("dead");
    expect(await getOrderingKey(ctx.db, sub.id, "a")).toMatchObject({ blocked: false, waiting: 2, head: { id: `a2:${sub.id}`, status: "pending" } });
    // Not blocked now: nothing to skip.
    await expect(skipOrderingKey(ctx.db, sub.id, "a")).rejects.toThrow(/not blocked: its current delivery is pending/);
    expect(await drain(ctx.db)).toEqual([`a2:${sub.id}`, `a3:${sub.id}`, `a4:${sub.id}`]);
    await expect(skipOrderingKey(ctx.db, sub.id, "a")).rejects.toThrow(/nothing waiting/);
    await expect(skipOrderingKey(ctx.db, sub.id, "nope")).rejects.toThrow(/No ordering key/);
    await expect(listOrderingKeys(ctx.db, "sub_missing")).rejects.toThrow(/No subscription/);
  });

  it("replaying the blocking dead letter sends it first, then the rest in order; a skipped one replayed re-joins its key at the end", async () => {
    const sub = await ordered();
    await enqueueMany(ctx.db, [ev("k1", "k"), ev("k2", "k"), ev("k3", "k")]);
    expect(await drain(ctx.db, () => "dead")).toEqual([`k1:${sub.id}`]);
    await replayDeadLetter(ctx.db, `k1:${sub.id}`);
    expect((await getOrderingKey(ctx.db, sub.id, "k")).blocked).toBe(false);
    // k1 goes again, first; k2 dies and blocks; skipped, k3 goes on; then k2 replayed comes after k4.
    const dieOnce = new Set([`k2:${sub.id}`]);
    expect(await drain(ctx.db, (d) => (dieOnce.delete(d.id) ? "dead" : "ok"))).toEqual([`k1:${sub.id}`, `k2:${sub.id}`]);
    await skipOrderingKey(ctx.db, sub.id, "k");
    const [k3] = await claim(ctx.db);
    expect(k3!.id).toBe(`k3:${sub.id}`);
    await enqueue(ctx.db, ev("k4", "k"));
    // Replayed while k3 is in flight: it must not go beside k3 (nor before k4).
    expect((await replayDeadLetters(ctx.db, { ids: [`k2:${sub.id}`] })).replayed).toEqual([`k2:${sub.id}`]);
    expect(await claim(ctx.db)).toEqual([]);
    await complete(ctx.db, [completion(k3!, "ok")]);
    expect(await drain(ctx.db)).toEqual([`k4:${sub.id}`, `k2:${sub.id}`]);
    // Replayed into an idle key, it goes at once.
    await enqueue(ctx.db, ev("k5", "k"));
    expect(await drain(ctx.db, () => "dead")).toEqual([`k5:${sub.id}`]);
    await skipOrderingKey(ctx.db, sub.id, "k");
    expect(await listOrderingKeys(ctx.db, sub.id)).toEqual([]);
    await replayDeadLetter(ctx.db, `k5:${sub.id}`);
    expect(await drain(ctx.db)).toEqual([`k5:${sub.id}`]);
  });

  it("probes, enable and resume never release a delivery waiting its turn", async () => {
    const sub = await ordered();
    await enqueueMany(ctx.db, [ev("p1", "k"), ev("p2", "k")]);
    await ctx.db.query("UPDATE outbound_subscriptions SET status = 'disabled', next_probe_at = now() - interval '1 second', disabled_reason = 'circuit open: test' WHERE id = $1", [sub.id]);
    const probes = await claimProbeDeliveries(ctx.db, { limit: 10, leaseSeconds: 60, leaseToken: "00000000-0000-4000-8000-000000000001", probeIntervalSeconds: 0 });
    expect(probes.map((d) => d.id)).toEqual([`p1:${sub.id}`]);
    await expireLeases(ctx.db, probes);
    const again = await claimProbeDeliveries(ctx.db, { limit: 10, leaseSeconds: 60, leaseToken: "00000000-0000-4000-8000-000000000002", probeIntervalSeconds: 0 });
    expect(again.map((d) => d.id)).toEqual([`p1:${sub.id}`]);
    await expireLeases(ctx.db, again);
    await enableSubscription(ctx.db, sub.id);
    await pauseSubscription(ctx.db, sub.id);
    await resumeSubscription(ctx.db, sub.id);
    expect(await drain(ctx.db)).toEqual([`p1:${sub.id}`, `p2:${sub.id}`]);
  });

  it("validates the ordering key, stores it on the event, and counts it in a repeat's identity", async () => {
    await ordered();
    for (const bad of ["", "a b", "x".repeat(201), "ü", 7]) {
      await expect(enqueue(ctx.db, { type: "a.b", data: 1, orderingKey: bad as string })).rejects.toBeInstanceOf(OutboundValidationError);
    }
    await expect(enqueue(ctx.db, { type: "a.b", data: 1, orderingKey: "a b" })).rejects.toThrow(/orderingKey: must be 1 to 200 letters/);
    await enqueue(ctx.db, { id: "r1", type: "a.b", data: 1, orderingKey: "customer/42:v=1+x@y_z.-" });
    const { rows } = await ctx.db.query<{ ordering_key: string }>("SELECT ordering_key FROM outbound_events WHERE id = 'r1'");
    expect(rows[0]!.ordering_key).toBe("customer/42:v=1+x@y_z.-");
    expect((await enqueue(ctx.db, { id: "r1", type: "a.b", data: 1, orderingKey: "customer/42:v=1+x@y_z.-" })).created).toBe(false);
    await expect(enqueue(ctx.db, { id: "r1", type: "a.b", data: 1, orderingKey: "other" })).rejects.toBeInstanceOf(EventConflictError);
    await expect(enqueue(ctx.db, { id: "r1", type: "a.b", data: 1 })).rejects.toBeInstanceOf(EventConflictError);
    await expect(enqueueMany(ctx.db, [{ id: "r2", type: "a.b", data: 1, orderingKey: "a" }, { id: "r2", type: "a.b", data: 1, orderingKey: "b" }])).rejects.toBeInstanceOf(EventConflictError);
  });

  it("a transaction rolled back gives no place away: the key's next delivery still goes", async () => {
    const sub = await ordered();
    await ctx.db.transaction(async (tx) => {
      await enqueue(tx, ev("gone", "k"));
      throw new Error("rollback");
    }).catch(() => {});
    await enqueue(ctx.db, ev("kept", "k"));
    expect(await drain(ctx.db)).toEqual([`kept:${sub.id}`]);
  });
});
