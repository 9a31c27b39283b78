/**
 * The pace of a rate-limited endpoint (issue 28, docs/outbound.md "Rate-limited receivers"): after
 * a 429 the claim paces the endpoint at the learnt rate (RATE_DECREASE of the rate the 429 came at)
 * and climbs back quickly to RATE_RECOVER_SHARE of that rate, then slowly beyond it.
 */
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import {
  grownRate, RATE_DECREASE, RATE_FLOOR_PER_SECOND, RATE_MOST_DECREASE, RATE_PROBE_GROWTH, RATE_PROBE_SPEEDUP_SECONDS, RATE_RECOVER_SHARE, RATE_RECOVERY_GROWTH,
} from "../../shared/outbound/acceptedRate.js";
import { createRelay, createSubscription, enqueueMany, type Relay } from "../../shared/outbound/index.js";
import { createTransport, type Transport } from "../../shared/outbound/transport.js";
import { claimDueDeliveries } from "../../shared/outbound/sql/claimDeliveries.js";
import { completeDeliveries } from "../../shared/outbound/sql/completeDeliveries.js";
import { decideNext } from "../../shared/outbound/decide.js";
import { DEFAULT_RETRY_POLICY } from "../../shared/outbound/retryPolicy.js";
import { DEFAULT_HEALTH_POLICY } from "../../shared/outbound/health.js";
import type { ClaimedDelivery } from "../../shared/outbound/types.js";
import { describeEachBackend } from "../support/databases.js";
import { startLimitedReceiver } from "./support/limitedReceiver.js";
import { resetOutbound, waitFor } from "./support/receiver.js";

/** The probe's growth x seconds into it: RATE_PROBE_GROWTH a second, speeding up each second. */
const probed = (x: number) => (1 + RATE_PROBE_GROWTH) ** Math.min(200, x + (x * x) / (2 * RATE_PROBE_SPEEDUP_SECONDS));

/** The model in plain arithmetic: what the SQL must agree with. */
const expectedPace = (learned: number, limitedAt: number | null, seconds: number) => {
  if (limitedAt === null) return learned * probed(seconds);
  const target = Math.max(learned, RATE_RECOVER_SHARE * limitedAt);
  const reached = Math.log(target / learned) / Math.log(1 + RATE_RECOVERY_GROWTH);
  return seconds <= reached ? learned * (1 + RATE_RECOVERY_GROWTH) ** seconds : target * probed(seconds - reached);
};

describeEachBackend("the pace of a rate-limited endpoint", (ctx) => {
  let transport: Transport;
  let relay: Relay | undefined;
  const stops: (() => Promise<void>)[] = [];
  beforeAll(() => { transport = createTransport({ allowedDestinations: ["127.0.0.1"], timeoutMs: 5000 }); });
  afterAll(() => transport?.close());
  afterEach(async () => {
    await relay?.stop();
    relay = undefined;
    await Promise.all(stops.splice(0).map((stop) => stop()));
    await resetOutbound(ctx.db);
  });

  const paceAfter = async (id: string, seconds: number) =>
    Number((await ctx.db.query<{ pace: number }>(
      `SELECT ${grownRate("s", `s.learned_at + ${seconds} * interval '1 second'`)} AS pace FROM outbound_subscriptions s WHERE s.id = $1`, [id])).rows[0]!.pace);

  it("climbs quickly back to just below the rate the 429 came at, then slowly beyond it; without that rate, slowly from the start", async () => {
    const sub = await createSubscription(ctx.db, { url: "http://127.0.0.1:9/paced", eventTypes: ["*"] });
    await ctx.db.query("UPDATE outbound_subscriptions SET learned_rate_per_second = 85, limited_at_rate_per_second = 100, learned_at = now() WHERE id = $1", [sub.id]);
    for (const seconds of [0, 0.2, 0.4, 1, 3, 10, 30]) {
      expect(await paceAfter(sub.id, seconds), `after ${seconds} s`).toBeCloseTo(expectedPace(85, 100, seconds), 6);
    }
    // Within half a second it is back at 95 of the 100 the 429 came at (the slow climb alone would
    // take 5.6 s), and from there it climbs slowly.
    const reached = Math.log(95 / 85) / Math.log(1 + RATE_RECOVERY_GROWTH);
    expect(reached).toBeLessThan(0.5);
    expect(await paceAfter(sub.id, reached)).toBeCloseTo(95, 6);
    // Slowly at first (2 % and a little), faster the longer no 429 comes: a rate learnt too low
    // is left behind in seconds. Back from 0.8 of a limit to it in under 4 s, where 2 % a second
    // took 11 s.
    const first = (await paceAfter(sub.id, reached + 1)) / 95;
    expect(first).toBeGreaterThan(1 + RATE_PROBE_GROWTH);
    expect(first).toBeLessThan(1 + 2 * RATE_PROBE_GROWTH);
    expect(await paceAfter(sub.id, reached + 5)).toBeCloseTo(95 * (1 + RATE_PROBE_GROWTH) ** (5 + 25 / 2), 4);
    expect(Math.log(1.25) / Math.log(1 + RATE_PROBE_GROWTH)).toBeGreaterThan(11);
    expect(probed(4)).toBeGreaterThan(1.25);
    // Learnt before the rate at the 429 was kept (or never limited there): the slow climb alone.
    await ctx.db.query("UPDATE outbound_subscriptions SET limited_at_rate_per_second = NULL WHERE id = $1", [sub.id]);
    expect(await paceAfter(sub.id, 1)).toBeCloseTo(85 * (1 + RATE_PROBE_GROWTH) ** 1.5, 6);
    await ctx.db.query("UPDATE outbound_subscriptions SET learned_rate_per_second = NULL, learned_at = NULL WHERE id = $1", [sub.id]);
    expect((await ctx.db.query<{ pace: number | null }>(`SELECT ${grownRate("s", "now()")} AS pace FROM outbound_subscriptions s WHERE s.id = $1`, [sub.id])).rows[0]!.pace).toBeNull();
  });

  it.each([
    // [what the relay saw, its successes per second, its share of 429s lately, whether another relay reported a 429 from the endpoint just before, the rate the 429 is taken to have come at, as a share of the pace (200/s)]
    ["alone there, its successes, when they are the lower", 150, 0.1, false, 0.75],
    ["the pace less the share refused, when that is the lower (every relay sees the same share)", 190, 0.1, false, 0.9],
    ["alone there, few successes: RATE_MOST_DECREASE of the pace at most", 5, 0.1, false, RATE_MOST_DECREASE],
    ["not alone there: the pace less the share refused, whatever part of the successes it saw", 5, 0.1, true, 0.9],
    ["no share known: its successes", 150, undefined, false, 0.75],
  ] as const)("a 429, %s", async (_what, acceptedPerSecond, limitedShare, others, share) => {
    const relayId = randomUUID();
    const sub = await createSubscription(ctx.db, { url: "http://127.0.0.1:9/few", eventTypes: ["*"] });
    // Paced at 200 per second (so the next 429 also teaches again).
    await pacedAt200(sub.id);
    const paceNow = Number((await ctx.db.query<{ pace: number }>(`SELECT ${grownRate("s", "now()")} AS pace FROM outbound_subscriptions s WHERE s.id = $1`, [sub.id])).rows[0]!.pace);
    await ctx.db.transaction((tx) => enqueueMany(tx, [{ id: `few-${randomUUID()}`, type: "a.b", data: {} }]));
    const [claimed] = await claimDueDeliveries(ctx.db, { limit: 1, leaseSeconds: 60, leaseToken: randomUUID(), relayId });
    if (others) {
      await ctx.db.query("INSERT INTO outbound_rate_reports (subscription_id, relay_id, accepted_per_second, reported_at) VALUES ($1, $2, 40, now())", [sub.id, randomUUID()]);
    }
    const outcome = { result: "retryable" as const, status: 429, latencyMs: 3, errorClass: "http_429", responseExcerpt: null, retryAfterSeconds: 1 };
    await completeDeliveries(ctx.db, [{
      delivery: claimed!, outcome, decision: decideNext(claimed!, outcome, DEFAULT_RETRY_POLICY), acceptedPerSecond, ...(limitedShare === undefined ? {} : { limitedShare }),
    }], DEFAULT_HEALTH_POLICY, { relayId });
    const { rows: [row] } = await ctx.db.query<{ learned: number; limited_at: number }>(
      "SELECT learned_rate_per_second AS learned, limited_at_rate_per_second AS limited_at FROM outbound_subscriptions WHERE id = $1", [sub.id]);
    expect(paceNow).toBeCloseTo(200, 6);
    expect(Number(row!.limited_at) / paceNow).toBeCloseTo(share, 6);
    expect(Number(row!.learned)).toBeCloseTo(RATE_DECREASE * Number(row!.limited_at), 6);
  });

  /** A delivery claimed by each relay given, in that order (before any answer, so the answers that follow come within the second). */
  const claimFor = async (subscriptionId: string, ...relayIds: string[]) => {
    await ctx.db.transaction((tx) => enqueueMany(tx, relayIds.map(() => ({ id: `r-${randomUUID()}`, type: "a.b", data: {} }))));
    const claimed = [];
    for (const relayId of relayIds) {
      const [d] = await claimDueDeliveries(ctx.db, { limit: 1, leaseSeconds: 60, leaseToken: randomUUID(), relayId });
      expect(d!.subscriptionId).toBe(subscriptionId);
      claimed.push({ delivery: d!, relayId });
    }
    return claimed;
  };
  /** The delivery's answer is a 429; `acceptedPerSecond`: what its relay saw the endpoint accept. */
  const answer429 = async ({ delivery, relayId }: { delivery: ClaimedDelivery; relayId: string }, acceptedPerSecond: number, extra: { limitedShare?: number; teaches?: boolean } = {}) => {
    const outcome = { result: "retryable" as const, status: 429, latencyMs: 3, errorClass: "http_429", responseExcerpt: null, retryAfterSeconds: 1 };
    await completeDeliveries(ctx.db, [{ delivery, outcome, decision: decideNext(delivery, outcome, DEFAULT_RETRY_POLICY), acceptedPerSecond, ...extra }],
      DEFAULT_HEALTH_POLICY, { relayId });
  };
  const rates = async (id: string) => {
    const { rows: [row] } = await ctx.db.query<{ learned: number | null; limited_at: number | null; learned_at: Date | null }>(
      "SELECT learned_rate_per_second AS learned, limited_at_rate_per_second AS limited_at, learned_at FROM outbound_subscriptions WHERE id = $1", [id]);
    return { learned: row!.learned === null ? null : Number(row!.learned), limitedAt: row!.limited_at === null ? null : Number(row!.limited_at), learnedAt: row!.learned_at };
  };
  /** Paced at 200 per second, and still while the test runs (learnt an hour ago, past where the climb stops). */
  const pacedAt200 = (id: string) => ctx.db.query(
    "UPDATE outbound_subscriptions SET learned_rate_per_second = $2, limited_at_rate_per_second = NULL, learned_at = now() - interval '1 hour' WHERE id = $1",
    [id, 200 / (1 + RATE_PROBE_GROWTH) ** 200]);

  it("the first 429s of several relays add up what each saw accepted: the rate learnt is raised by each other relay's first report", async () => {
    const sub = await createSubscription(ctx.db, { url: "http://127.0.0.1:9/shared", eventTypes: ["*"] });
    const [ra, rb, rc] = [randomUUID(), randomUUID(), randomUUID()];
    const [a, b, c, bAgain] = await claimFor(sub.id, ra, rb, rc, rb);
    // Relay a took most of the receiver's first burst, b and c a little: 120 + 50 + 30 = 200.
    await answer429(a!, 120, { limitedShare: 0.3 });
    const first = await rates(sub.id);
    expect(first.limitedAt).toBeCloseTo(120, 6);
    await answer429(b!, 50, { limitedShare: 0.3 });
    expect((await rates(sub.id)).limitedAt).toBeCloseTo(170, 6);
    await answer429(c!, 30, { limitedShare: 0.3 });
    const summed = await rates(sub.id);
    expect(summed.limitedAt).toBeCloseTo(200, 6);
    expect(summed.learned).toBeCloseTo(RATE_DECREASE * 200, 6);
    // The climb goes on from when the first 429 taught it.
    expect(summed.learnedAt!.getTime()).toBe(first.learnedAt!.getTime());
    // Each relay raises it once: b's second 429 in the same second does not add b again.
    await answer429(bAgain!, 60, { limitedShare: 0.3 });
    expect((await rates(sub.id)).limitedAt).toBeCloseTo(200, 6);
  });

  it("a rate learnt from a paced endpoint's share refused is not raised by reports after it", async () => {
    const sub = await createSubscription(ctx.db, { url: "http://127.0.0.1:9/paced-share", eventTypes: ["*"] });
    await pacedAt200(sub.id);
    const [a, b] = await claimFor(sub.id, randomUUID(), randomUUID());
    await answer429(a!, 300, { limitedShare: 0.2 });
    expect((await rates(sub.id)).limitedAt).toBeCloseTo(160, 6);
    await answer429(b!, 500, { limitedShare: 0.2 });
    expect((await rates(sub.id)).limitedAt).toBeCloseTo(160, 6);
  });

  it("a paced endpoint's 429 that teaches nothing (too few 429s seen to measure a share) leaves its rate as it was", async () => {
    const sub = await createSubscription(ctx.db, { url: "http://127.0.0.1:9/few-429s", eventTypes: ["*"] });
    await pacedAt200(sub.id);
    const before = await rates(sub.id);
    const [a, b] = await claimFor(sub.id, randomUUID(), randomUUID());
    await answer429(a!, 10, { limitedShare: 0.5, teaches: false });
    expect(await rates(sub.id)).toEqual(before);
    await answer429(b!, 10, { limitedShare: 0.5 });
    expect((await rates(sub.id)).limitedAt).toBeCloseTo(100, 6);
  });

  it("a 429 keeps the rate it came at beside the learnt rate, which is RATE_DECREASE of it", async () => {
    // 30 per second, burst 5, no RateLimit headers: the relay learns only from the 429s.
    const limited = await startLimitedReceiver({ rate: 30, burst: 5 });
    stops.push(limited.stop);
    const sub = await createSubscription(ctx.db, { url: limited.url, eventTypes: ["*"] });
    await ctx.db.transaction((tx) => enqueueMany(tx, Array.from({ length: 60 }, (_, i) => ({ id: `p-${i}`, type: "a.b", data: { i } }))));
    relay = createRelay({ db: ctx.db, transport, pollIntervalMs: 20 });
    await relay.start();
    const learnt = await waitFor("a rate learnt from a 429", async () => {
      const { rows: [row] } = await ctx.db.query<{ learned: number | null; limited_at: number | null }>(
        "SELECT learned_rate_per_second AS learned, limited_at_rate_per_second AS limited_at FROM outbound_subscriptions WHERE id = $1", [sub.id]);
      return row!.learned !== null ? row! : null;
    }, 60_000, 20);
    expect(learnt!.limited_at).not.toBeNull();
    expect(Number(learnt!.learned)).toBeCloseTo(Math.max(RATE_FLOOR_PER_SECOND, RATE_DECREASE * Number(learnt!.limited_at)), 6);
  }, 90_000);
});
