/**
 * Per-subscription rate limit across relays, 429/Retry-After slowing the whole endpoint when the
 * receiver refuses (and only the refused delivery when it meters: issue 28), and the
 * per-subscription attempt timeout (issue 15, Must-show 3).
 */
import { performance } from "node:perf_hooks";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { createRelay, createSubscription, enqueueMany, getSubscription, listAttempts, OutboundValidationError } from "../../shared/outbound/index.js";
import { createTransport, type Transport } from "../../shared/outbound/transport.js";
import type { Database } from "../../shared/db/port.js";
import { describeEachBackend } from "../support/databases.js";
import { countDelivered, expectEachSentOnceUnlessRetried } from "./support/atLeastOnce.js";
import { relayFleet } from "./support/relayFleet.js";
import { startReceiver, waitFor, type Receiver } from "./support/receiver.js";
import { startTimingReceiver } from "./support/timingReceiver.js";

const events = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => ({ id: `${prefix}-${i}`, type: "a.b", data: { i } }));

describeEachBackend("rate limits and attempt timeouts", (ctx) => {
  let transport: Transport;
  let receiver: Receiver | undefined;
  const fleet = relayFleet(ctx);
  const { relays, dbForRelay } = fleet;
  const stops: (() => Promise<void>)[] = [];
  beforeAll(() => { transport = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: 5000 }); });
  afterAll(() => transport?.close());
  afterEach(async () => {
    await fleet.stopAll();
    await Promise.all(stops.splice(0).map((stop) => stop()));
    await receiver?.close();
    receiver = undefined;
    await fleet.reset();
  });

  it("validates the flow-control fields and reads them back", async () => {
    const sub = await createSubscription(ctx.db, { url: "https://example.com/h", eventTypes: ["*"], maxInFlight: 3, rateLimitPerSecond: 2.5, attemptTimeoutMs: 1500, ordered: true });
    expect(await getSubscription(ctx.db, sub.id)).toMatchObject({ maxInFlight: 3, rateLimitPerSecond: 2.5, attemptTimeoutMs: 1500, ordered: true });
    const plain = await getSubscription(ctx.db, (await createSubscription(ctx.db, { url: "https://example.com/p", eventTypes: ["*"] })).id);
    expect(plain).toMatchObject({ maxInFlight: null, rateLimitPerSecond: null, attemptTimeoutMs: null, ordered: false });
    for (const bad of [{ maxInFlight: 0 }, { maxInFlight: 1.5 }, { rateLimitPerSecond: 0 }, { attemptTimeoutMs: 50 }, { attemptTimeoutMs: 200_000 }, { ordered: "yes" }]) {
      await expect(createSubscription(ctx.db, { url: "https://example.com/h", eventTypes: ["*"], ...bad })).rejects.toThrow(OutboundValidationError);
    }
  });

  // Four relays on PostgreSQL. PGlite is embedded in one process, where a deployment runs one
  // relay; its queries run on the test process's own event loop, so four relays' queries held it
  // past the last check before the write, and requests spaced correctly left together (5 in one
  // millisecond seen at load 5). Two relays there still share the limit through the database.
  it(`several relays (four on PostgreSQL), a subscription limited to 10 per second: no one-second window at the receiver holds more than 10`, { timeout: 90_000, retry: 2 }, async () => {
    // The receiver runs in a process of its own, so this one's work cannot bunch its arrivals up.
    const timing = await startTimingReceiver();
    stops.push(timing.stop);
    await createSubscription(ctx.db, { url: timing.url, eventTypes: ["*"], rateLimitPerSecond: 10 });
    await ctx.db.transaction((tx) => enqueueMany(tx, events("rated", 30)));
    const relayCount = ctx.db.kind === "pglite" ? 2 : 4;
    for (let i = 0; i < relayCount; i++) {
      relays.push(createRelay({ db: await dbForRelay(), transport, pollIntervalMs: 20 }));
    }
    await Promise.all(relays.map((r) => r.start()));
    await waitFor("all 30 delivered", async () => (await countDelivered(ctx.db)) >= 30, 60_000, 100);
    // Each once, unless an attempt logged as failed was retried (at-least-once; support/atLeastOnce.ts).
    await expectEachSentOnceUnlessRetried(ctx.db, await timing.ids(), 30);
    // Every request counts toward the limit, a retried one too. Every window [t, t + 1 s) starting
    // at an arrival (the fullest windows start at one).
    const arrivals = await timing.times();
    const most = Math.max(...arrivals.map((t) => arrivals.filter((u) => u >= t && u < t + 1000).length));
    expect(most, `arrivals (ms): ${arrivals.map((t) => Math.round(t - arrivals[0]!)).join(" ")}`).toBeLessThanOrEqual(10);
    expect(most).toBeGreaterThanOrEqual(5); // limited, not stalled (the spacing keeps a margin below 10: ~7.7 per second)
    // Retried: the relays run in this test process, and on a loaded machine its event loop can hold
    // a request that passed its slot's lateness check for longer than RATE_JITTER_SECONDS before it
    // is written (11 arrivals in 922 ms, seen in clean-clone runs at load 3-7 with other files
    // testing in parallel, 2 of 5 runs alone at load 7). A relay that broke the limit fails every try.
  });

  it("a relay whose claim waits for its connection starts no attempt before its slot: two relays still keep every one-second window within the limit", async () => {
    // A relay's transactions wait 700 ms before they start, as they do for a pool's or PGlite's one
    // connection that others hold. The slots a claim hands out are times on the database's clock;
    // placed on the relay's clock from a reading taken before that wait, they came out 700 ms early
    // (12 in one second here). Deterministic: no load needed, the wait is what a loaded machine adds.
    const timing = await startTimingReceiver();
    stops.push(timing.stop);
    await createSubscription(ctx.db, { url: timing.url, eventTypes: ["*"], rateLimitPerSecond: 10 });
    await ctx.db.transaction((tx) => enqueueMany(tx, events("waited", 16)));
    const waiting: Database = {
      kind: ctx.db.kind,
      query: (text, values) => ctx.db.query(text, values),
      transaction: async (fn) => { await new Promise((r) => setTimeout(r, 700)); return ctx.db.transaction(fn); },
      listen: (channel, on) => ctx.db.listen(channel, on),
      close: async () => {},
    };
    const prompt = createRelay({ db: ctx.db, transport });
    const late = createRelay({ db: waiting, transport });
    // The prompt relay takes the first second's slots; the waiting one claims the next ones 700 ms later.
    await Promise.all([prompt.runOnce(), late.runOnce()]);
    const arrivals = await timing.times();
    expect(arrivals.length).toBeGreaterThan(8); // the waiting relay sent some too (a slot it can no longer keep is given back)
    const most = Math.max(...arrivals.map((t) => arrivals.filter((u) => u >= t && u < t + 1000).length));
    expect(most, `arrivals (ms): ${arrivals.map((t) => Math.round(t - arrivals[0]!)).join(" ")}`).toBeLessThanOrEqual(10);
  }, 60_000);

  it("a 429 with Retry-After slows the whole endpoint, not only the delivery that got it", async () => {
    const arrivals: { id: string; at: number }[] = [];
    receiver = await startReceiver((r) => {
      arrivals.push({ id: r.webhookId, at: performance.now() });
      return arrivals.length === 1 ? { status: 429, headers: { "retry-after": "1" } } : { status: 200 };
    });
    await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    await ctx.db.transaction((tx) => enqueueMany(tx, events("slow", 3)));
    let delivered = 0;
    // One attempt at a time, so the other deliveries are still waiting when the 429 comes back.
    relays.push(createRelay({ db: ctx.db, transport, pollIntervalMs: 20, httpConcurrency: 1, onCompleted: (cs) => { delivered += cs.filter((c) => c.decision.status === "delivered").length; } }));
    await relays[0]!.start();
    await waitFor("all 3 delivered", () => delivered >= 3, 30_000);
    expect(arrivals.length).toBe(4);
    // Nothing reached the endpoint within the second it asked for, whichever delivery.
    expect(arrivals[1]!.at - arrivals[0]!.at).toBeGreaterThanOrEqual(1000);
  }, 60_000);

  it("a 429 among successes is the receiver metering us: the endpoint goes on, only the delivery that got it waits its Retry-After", async () => {
    const arrivals: { id: string; at: number; status: number }[] = [];
    receiver = await startReceiver((r) => {
      const status = arrivals.length === 10 ? 429 : 200;
      arrivals.push({ id: r.webhookId, at: performance.now(), status });
      return status === 429 ? { status, headers: { "retry-after": "3" } } : { status };
    });
    await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    await ctx.db.transaction((tx) => enqueueMany(tx, events("metered", 30)));
    let delivered = 0;
    relays.push(createRelay({ db: ctx.db, transport, pollIntervalMs: 20, httpConcurrency: 1, onCompleted: (cs) => { delivered += cs.filter((c) => c.decision.status === "delivered").length; } }));
    await relays[0]!.start();
    await waitFor("all 30 delivered", () => delivered >= 30, 30_000);
    const refused = arrivals.find((a) => a.status === 429)!;
    // The others were not held for the 3 s the 429 asked for: every one of them arrived before the
    // refused delivery's retry, which came no sooner than it was asked to.
    const retry = arrivals.find((a) => a.id === refused.id && a !== refused)!;
    expect(retry.at - refused.at).toBeGreaterThanOrEqual(3000);
    expect(arrivals.filter((a) => a.at > refused.at && a.at < retry.at && a.id !== refused.id).length).toBe(19);
    expect(arrivals.length).toBe(31);
  }, 60_000);

  it("a subscription's attemptTimeoutMs cuts its attempts short; it never lengthens the transport's", async () => {
    receiver = await startReceiver(() => ({ status: 200, delay: 3000 }));
    const short = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["short.*"], attemptTimeoutMs: 200 });
    await ctx.db.transaction((tx) => enqueueMany(tx, [{ id: "t1", type: "short.x", data: {} }]));
    await createRelay({ db: ctx.db, transport }).runOnce();
    const [attempt] = await listAttempts(ctx.db, `t1:${short.id}`);
    expect(attempt).toMatchObject({ result: "retryable", errorClass: "timeout" });
    expect(attempt!.latencyMs).toBeLessThan(2000);

    const quick = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: 200 });
    try {
      const long = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["long.*"], attemptTimeoutMs: 60_000 });
      await ctx.db.transaction((tx) => enqueueMany(tx, [{ id: "t2", type: "long.x", data: {} }]));
      await createRelay({ db: ctx.db, transport: quick }).runOnce();
      const [capped] = await listAttempts(ctx.db, `t2:${long.id}`);
      expect(capped).toMatchObject({ errorClass: "timeout" });
      expect(capped!.latencyMs).toBeLessThan(2000);
    } finally {
      await quick.close();
    }
  }, 60_000);
});
