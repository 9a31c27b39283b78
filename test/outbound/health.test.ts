import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { createRelay, createSubscription, enqueue, getDelivery, getSubscription, listAttempts, type Relay } from "../../shared/outbound/index.js";
import type { RetryPolicy } from "../../shared/outbound/retryPolicy.js";
import { createTransport, type Transport } from "../../shared/outbound/transport.js";
import { describeEachBackend } from "../support/databases.js";
import { resetOutbound, startReceiver, waitFor, type Receiver } from "./support/receiver.js";

const FAST: RetryPolicy = { baseSeconds: 0.05, capSeconds: 0.2, maxAttempts: 50, retryAfterCapSeconds: 2 };

describeEachBackend("outbound endpoint health", (ctx) => {
  let transport: Transport;
  let receiver: Receiver;
  beforeAll(() => { transport = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: 5000 }); });
  afterAll(() => transport?.close());
  afterEach(async () => {
    await receiver?.close();
    await resetOutbound(ctx.db);
  });

  const attemptNext = (r: Relay) => waitFor("a due delivery", () => r.runOnce(), 10_000, 10);

  it("degrades, then disables (circuit open); keeps deliveries; probes; resumes on recovery", async () => {
    receiver = await startReceiver(() => ({ status: 503 }));
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    // A long probe interval: the test moves the probe time itself instead of waiting an hour.
    const relay = createRelay({ db: ctx.db, transport, retryPolicy: FAST, healthPolicy: { degradeAfter: 2, disableAfter: 4, probeIntervalSeconds: 3600, openAfterSeconds: 0 } });
    await enqueue(ctx.db, { id: "h1", type: "a.b", data: {} });
    const statusAfter: string[] = [];
    for (let i = 0; i < 4; i++) {
      await attemptNext(relay);
      statusAfter.push((await getSubscription(ctx.db, sub.id)).status);
    }
    expect(statusAfter).toEqual(["active", "degraded", "degraded", "disabled"]);
    const disabled = await getSubscription(ctx.db, sub.id);
    expect(disabled.health.consecutiveFailures).toBe(4);
    expect(disabled.health.disabledReason).toMatch(/^circuit open: 4 consecutive failed attempts over \d+ s; probing periodically$/);
    expect(disabled.health.nextProbeAt!.getTime()).toBeGreaterThan(Date.now() + 3000 * 1000);

    // While disabled: new events are kept, nothing is sent.
    await enqueue(ctx.db, { id: "h2", type: "a.b", data: {} });
    await enqueue(ctx.db, { id: "h3", type: "a.b", data: {} });
    await new Promise((r) => setTimeout(r, 300)); // h1's backoff has passed: only the circuit holds it back
    expect(await relay.runOnce()).toBe(0);
    expect(receiver.received).toHaveLength(4);

    // The probe comes due: exactly one delivery is tried; its failure is logged but not counted.
    await ctx.db.query("UPDATE outbound_subscriptions SET next_probe_at = now() WHERE id = $1", [sub.id]);
    expect(await relay.runOnce()).toBe(1);
    expect(await relay.runOnce()).toBe(0); // the next probe is an interval away
    const afterProbe = await getSubscription(ctx.db, sub.id);
    expect(afterProbe.status).toBe("disabled");
    expect(afterProbe.health.nextProbeAt!.getTime()).toBeGreaterThan(Date.now() + 3000 * 1000);
    const h1 = `h1:${sub.id}`;
    expect((await getDelivery(ctx.db, h1)).attempts).toBe(4);
    expect((await listAttempts(ctx.db, h1)).map((a) => a.probe)).toEqual([false, false, false, false, true]);

    // The endpoint recovers: the next probe closes the circuit and the kept deliveries go out.
    receiver.respond = () => ({ status: 200 });
    await ctx.db.query("UPDATE outbound_subscriptions SET next_probe_at = now() WHERE id = $1", [sub.id]);
    expect(await relay.runOnce()).toBe(1);
    const recovered = await getSubscription(ctx.db, sub.id);
    expect(recovered.status).toBe("active");
    expect(recovered.health).toMatchObject({ consecutiveFailures: 0, disabledReason: null, nextProbeAt: null });
    await waitFor("all kept deliveries delivered", async () => {
      await relay.runOnce();
      const { rows } = await ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM outbound_deliveries WHERE status = 'delivered'");
      return rows[0]!.n === 3;
    });
    expect(receiver.received.slice(0, 6).map((r) => r.webhookId)).toEqual(Array(6).fill(h1)); // 4 attempts, 2 probes
    expect(new Set(receiver.received.slice(6).map((r) => r.webhookId))).toEqual(new Set([`h2:${sub.id}`, `h3:${sub.id}`]));
  });

  it("a success resets the failure count before the thresholds are reached", async () => {
    let n = 0;
    receiver = await startReceiver(() => ({ status: ++n % 2 === 0 ? 200 : 500 }));
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    const transitions: unknown[] = [];
    const relay = createRelay({
      db: ctx.db, transport, retryPolicy: FAST, batchSize: 1, healthPolicy: { degradeAfter: 2, disableAfter: 3, probeIntervalSeconds: 60 },
      onCompleted: (_c, result) => transitions.push(...result.transitions),
    });
    for (let i = 0; i < 3; i++) await enqueue(ctx.db, { id: `alt-${i}`, type: "a.b", data: {} });
    await waitFor("all delivered", async () => {
      await relay.runOnce();
      const { rows } = await ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM outbound_deliveries WHERE status = 'delivered'");
      return rows[0]!.n === 3;
    });
    // Three failures in all, never two in a row: without the reset it would have been disabled.
    expect(receiver.received.length).toBe(6);
    expect(transitions).toEqual([]);
    expect((await getSubscription(ctx.db, sub.id)).status).toBe("active");
  });
});
