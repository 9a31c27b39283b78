/**
 * The circuit breaker (issue 15, Must-show 5): a burst of concurrent failures does not open it,
 * sustained failure does (a count and a time window), it half-opens with probes, closes only on a
 * probe's success (no flapping), and the endpoint's traffic then comes back gradually.
 */
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { createRelay, createSubscription, enqueueMany, getSubscription, type Relay } from "../../shared/outbound/index.js";
import type { HealthTransition } from "../../shared/outbound/sql/completeDeliveries.js";
import type { RetryPolicy } from "../../shared/outbound/retryPolicy.js";
import { createTransport, type Transport } from "../../shared/outbound/transport.js";
import { describeEachBackend } from "../support/databases.js";
import { resetOutbound, startReceiver, waitFor, type Receiver } from "./support/receiver.js";

const FAST: RetryPolicy = { baseSeconds: 0.05, capSeconds: 0.1, maxAttempts: 100, retryAfterCapSeconds: 2 };
const events = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => ({ id: `${prefix}-${i}`, type: "a.b", data: { i } }));

describeEachBackend("circuit breaker", (ctx) => {
  let transport: Transport;
  let receiver: Receiver | undefined;
  let relay: Relay | undefined;
  beforeAll(() => { transport = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: 5000 }); });
  afterAll(() => transport?.close());
  afterEach(async () => {
    await relay?.stop();
    relay = undefined;
    await receiver?.close();
    receiver = undefined;
    await resetOutbound(ctx.db);
  });

  it("a burst of 64 concurrent failures within ~50 ms does not open it (degraded, then active again on the next success)", async () => {
    receiver = await startReceiver(() => ({ status: 503, delay: 50 }));
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    await ctx.db.transaction((tx) => enqueueMany(tx, events("burst", 64)));
    const transitions: HealthTransition[] = [];
    // The defaults: 20 failures lasting 30 s open it; all 64 attempts at once.
    relay = createRelay({ db: ctx.db, transport, retryPolicy: FAST, batchSize: 64, httpConcurrency: 64, initialHttpConcurrency: 64, onCompleted: (_, r) => transitions.push(...r.transitions) });
    expect(await relay.runOnce()).toBe(64);
    const after = await getSubscription(ctx.db, sub.id);
    expect(after.health.consecutiveFailures).toBe(64);
    expect(after.status).toBe("degraded");
    receiver.respond = () => ({ status: 200 });
    await waitFor("a retry comes due and succeeds", async () => (await relay!.runOnce()) > 0 && (await getSubscription(ctx.db, sub.id)).status === "active", 20_000, 20);
    expect(transitions.map((t) => `${t.from}→${t.to}`)).toEqual(["active→degraded", "degraded→active"]);
  }, 60_000);

  it("sustained failure opens it: the count and the time window both", async () => {
    receiver = await startReceiver(() => ({ status: 503 }));
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    await ctx.db.transaction((tx) => enqueueMany(tx, events("sustained", 3)));
    const started = Date.now();
    relay = createRelay({ db: ctx.db, transport, retryPolicy: FAST, pollIntervalMs: 20, healthPolicy: { degradeAfter: 2, disableAfter: 5, probeIntervalSeconds: 3600, openAfterSeconds: 1 } });
    await relay.start();
    const disabled = await waitFor("the circuit to open", async () => {
      const s = await getSubscription(ctx.db, sub.id);
      return s.status === "disabled" ? s : null;
    }, 30_000, 20);
    // The count was reached long before the window: the window decided.
    expect(disabled!.health.consecutiveFailures).toBeGreaterThan(5);
    expect(disabled!.health.disabledAt!.getTime() - started).toBeGreaterThanOrEqual(1000);
    expect(disabled!.health.disabledReason).toMatch(/^circuit open: \d+ consecutive failed attempts over [1-9]\d* s; probing periodically$/);
  }, 60_000);

  it("open, it half-opens with one probe at a time, closes only on a probe's success, and the traffic comes back gradually", async () => {
    receiver = await startReceiver(() => ({ status: 503 }));
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    await ctx.db.transaction((tx) => enqueueMany(tx, events("recover", 60)));
    const transitions: HealthTransition[] = [];
    relay = createRelay({
      db: ctx.db, transport, retryPolicy: FAST, pollIntervalMs: 20, httpConcurrency: 32, initialHttpConcurrency: 32,
      healthPolicy: { degradeAfter: 2, disableAfter: 5, probeIntervalSeconds: 1, openAfterSeconds: 0.5 },
      onCompleted: (_, r) => transitions.push(...r.transitions),
    });
    await relay.start();
    await waitFor("the circuit to open", async () => (await getSubscription(ctx.db, sub.id)).status === "disabled", 30_000, 20);
    // Attempts the relay held when it opened finish quickly (503); then nothing until the probe (1 s).
    let seen = -1;
    await waitFor("the endpoint to go quiet", async () => {
      const now = receiver!.received.length;
      const quiet = now === seen;
      seen = now;
      return quiet;
    }, 10_000, 300);
    // Now the endpoint recovers; every request is held a little, so arrivals see those in flight.
    const concurrency: number[] = [];
    receiver.respond = () => {
      concurrency.push(receiver!.inFlight + 1);
      return { status: 200, delay: 20 };
    };
    await waitFor("all 60 delivered", async () => (await ctx.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM outbound_deliveries WHERE subscription_id = $1 AND status = 'delivered'", [sub.id])).rows[0]!.n === 60, 60_000, 50);
    const { rows: firstOk } = await ctx.db.query<{ probe: boolean }>(
      `SELECT a.probe FROM outbound_attempts a JOIN outbound_deliveries d ON d.id = a.delivery_id
       WHERE d.subscription_id = $1 AND a.result = 'delivered' ORDER BY a.created_at, a.id LIMIT 1`, [sub.id]);
    expect(firstOk[0]!.probe).toBe(true); // half-open: a probe, alone, was the first to get through
    expect(concurrency[0]).toBe(1);
    // Gradual: the first round trips carry few requests at once; later ones many more.
    expect(Math.max(...concurrency.slice(0, 4))).toBeLessThanOrEqual(3);
    expect(Math.max(...concurrency)).toBeGreaterThan(Math.max(...concurrency.slice(0, 4)));
    // Never flapping: open once, closed once.
    const changes = transitions.map((t) => `${t.from}→${t.to}`);
    expect(changes.filter((c) => c.endsWith("→disabled"))).toHaveLength(1);
    expect(changes.filter((c) => c.startsWith("disabled→"))).toHaveLength(1);
  }, 90_000);
});
