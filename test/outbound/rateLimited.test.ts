/**
 * Rate-limited receivers (issue 28, Must-show 2 and 3): the relay learns a receiver's limit and
 * paces under it; a 429 is the receiver metering us, not failing: it opens no breaker and spends
 * no attempt, yet a receiver that answers 429 forever still ends in a dead letter after the retry
 * policy's `rateLimitedForSeconds` (a day by default).
 */
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { createRelay, createSubscription, enqueueMany, getDeadLetter, getDelivery, getSubscription, listAttempts, type Relay } from "../../shared/outbound/index.js";
import type { RetryPolicy } from "../../shared/outbound/retryPolicy.js";
import { createTransport, type Transport } from "../../shared/outbound/transport.js";
import { describeEachBackend } from "../support/databases.js";
import { startLimitedReceiver } from "./support/limitedReceiver.js";
import { resetOutbound, startReceiver, waitFor, type Receiver } from "./support/receiver.js";
import { countDelivered } from "./support/atLeastOnce.js";

const events = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => ({ id: `${prefix}-${i}`, type: "a.b", data: { i } }));
/** Quick retries; the breaker would open after 3 failures lasting no time at all. */
const POLICY: RetryPolicy = { baseSeconds: 0.05, capSeconds: 0.2, maxAttempts: 3, retryAfterCapSeconds: 2 };
const HAIR_TRIGGER = { degradeAfter: 2, disableAfter: 3, probeIntervalSeconds: 60, openAfterSeconds: 0 };

describeEachBackend("rate-limited receivers", (ctx) => {
  let transport: Transport;
  let receiver: Receiver | undefined;
  let relay: Relay | undefined;
  const stops: (() => Promise<void>)[] = [];
  beforeAll(() => { transport = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: 5000 }); });
  afterAll(() => transport?.close());
  afterEach(async () => {
    await relay?.stop();
    relay = undefined;
    await receiver?.close();
    receiver = undefined;
    await Promise.all(stops.splice(0).map((stop) => stop()));
    await resetOutbound(ctx.db);
  });

  it("a receiver stating its limit in RateLimit-Policy / RateLimit: once learnt, the relay stays under it with few 429s", async () => {
    // 20 per second, burst 5; every answer states the policy. 120 events at once.
    const limited = await startLimitedReceiver({ rate: 20, burst: 5, headers: true });
    stops.push(limited.stop);
    const sub = await createSubscription(ctx.db, { url: limited.url, eventTypes: ["*"] });
    await ctx.db.transaction((tx) => enqueueMany(tx, events("paced", 120)));
    relay = createRelay({ db: ctx.db, transport, pollIntervalMs: 20 });
    await relay.start();
    await waitFor("all 120 delivered", async () => (await countDelivered(ctx.db)) >= 120, 90_000, 100);
    expect((await ctx.db.query<{ stated: number }>("SELECT stated_rate_per_second AS stated FROM outbound_subscriptions WHERE id = $1", [sub.id])).rows[0]!.stated).toBe(20);
    const { arrivals, rejected } = await limited.stats();
    // Before its first answer is written the relay knows nothing: a first claim may overrun the
    // burst. Once learnt (the last 100 requests), at most 5 are turned away, and no one-second
    // window holds more than the limit plus the burst the receiver allows.
    const learnt = arrivals.slice(-100);
    expect(learnt.filter((a) => !a.ok).length, `429s overall: ${rejected}`).toBeLessThanOrEqual(5);
    const most = Math.max(...learnt.map((a) => learnt.filter((b) => b.at >= a.at && b.at < a.at + 1000).length));
    expect(most).toBeLessThanOrEqual(25);
    // The health of the endpoint is untouched by the 429s it sent.
    expect(await getSubscription(ctx.db, sub.id)).toMatchObject({ status: "active" });
  }, 120_000);

  it("429s neither open the breaker nor spend attempts; a 503 does both", async () => {
    receiver = await startReceiver(() => ({ status: 429, headers: { "retry-after": "1" } }));
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    await ctx.db.transaction((tx) => enqueueMany(tx, events("metered", 1)));
    const id = `metered-0:${sub.id}`;
    relay = createRelay({ db: ctx.db, transport, retryPolicy: POLICY, healthPolicy: HAIR_TRIGGER, pollIntervalMs: 20 });
    // Five 429s, each retried after its Retry-After: more than the maximum of attempts (3) and the
    // breaker's count (3), were they counted.
    for (let n = 1; n <= 5; n++) await waitFor(`429 number ${n}`, async () => (await relay!.runOnce()) > 0, 10_000, 50);
    expect((await listAttempts(ctx.db, id)).map((a) => a.status)).toEqual([429, 429, 429, 429, 429]);
    expect(await getDelivery(ctx.db, id)).toMatchObject({ status: "pending", attempts: 0 });
    expect(await getSubscription(ctx.db, sub.id)).toMatchObject({ status: "active", health: { consecutiveFailures: 0 } });

    // The same endpoint failing for real: counted, and the breaker moves.
    receiver.respond = () => ({ status: 503 });
    await waitFor("a 503", async () => (await relay!.runOnce()) > 0, 10_000, 50);
    expect(await getDelivery(ctx.db, id)).toMatchObject({ status: "pending", attempts: 1 });
    expect(await getSubscription(ctx.db, sub.id)).toMatchObject({ health: { consecutiveFailures: 1 } });
  }, 60_000);

  it("a receiver that always answers 429 ends in a dead letter once the delivery has been rate-limited for rateLimitedForSeconds", async () => {
    receiver = await startReceiver(() => ({ status: 429, headers: { "retry-after": "1" } }));
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    await ctx.db.transaction((tx) => enqueueMany(tx, events("forever", 1)));
    const id = `forever-0:${sub.id}`;
    relay = createRelay({ db: ctx.db, transport, retryPolicy: { ...POLICY, rateLimitedForSeconds: 2 }, healthPolicy: HAIR_TRIGGER, pollIntervalMs: 20 });
    await relay.start();
    await waitFor("the dead letter", async () => (await getDelivery(ctx.db, id)).status === "dead", 30_000, 100);
    const dead = await getDeadLetter(ctx.db, id);
    expect(dead.deadReason).toMatch(/^rate limited: answered 429 for \d+ s \(bound 2 s\)$/);
    // Not before the bound: the first 429 and the last are at least 2 s apart (the database's clock).
    const log = await ctx.db.query<{ span: number; n: number }>(
      "SELECT extract(epoch FROM max(created_at) - min(created_at))::float8 AS span, count(*)::int AS n FROM outbound_attempts WHERE delivery_id = $1", [id]);
    expect(log.rows[0]!.span).toBeGreaterThanOrEqual(2);
    expect(log.rows[0]!.n).toBeGreaterThanOrEqual(2);
    // Only the last, the one that gave up, is counted; the breaker never moved.
    expect(dead.attempts).toBe(1);
    expect(await getSubscription(ctx.db, sub.id)).toMatchObject({ status: "active" });
  }, 60_000);
});
