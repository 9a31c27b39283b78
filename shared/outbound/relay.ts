/**
 * The relay: claims due deliveries, sends them through the transport, records each attempt and
 * applies the retry policy and endpoint health. Any number may run against one database.
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import { isUnavailable, type Database } from "../db/port.js";
import { decideNext } from "./decide.js";
import { DEFAULT_HEALTH_POLICY, throttleOf, wasNotSent, type HealthPolicy } from "./health.js";
import { NOTIFY_CHANNEL } from "./notify.js";
import { createRelayLoop, GIVE_BACK, type RelayLoop } from "./relayLoop.js";
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retryPolicy.js";
import { createLeaseKeeper } from "./leaseKeeper.js";
import { claimDueDeliveries, claimProbeDeliveries, DEFAULT_MAX_IN_FLIGHT, forgetHolds, leaseWrite, reportDone } from "./sql/claimDeliveries.js";
import { createConcurrencyLimits } from "./adaptiveConcurrency.js";
import { ACCEPTED_MIN_SAMPLE, createAcceptedRates } from "./acceptedRate.js";
import { completeDeliveries, type CompletionResult } from "./sql/completeDeliveries.js";
import { releaseDeliveries } from "./sql/releaseDeliveries.js";
import { deferUnsent, UNREADABLE_SECRET_RETRY_SECONDS } from "./sql/deferUnsent.js";
import { isUnreadableSecretError, openHeaders, openSecrets } from "../crypto/subscriptionSecrets.js";
import type { DeliveryOutcome, Transport } from "./transport.js";
import type { ClaimedDelivery, Completion } from "./types.js";
import { SPANS, withSpan } from "../telemetry/telemetry.js";
import { failuresOf } from "../telemetry/repeatedFailures.js";
import { runTransformation, TransformationError, type TransformationLimits } from "./transformations.js";
import { createEndpointAuth, type EndpointAuth } from "./endpointAuth/index.js";
import { isHttpUrl } from "./destinations/config.js";
import { createDestinationSenders, type DestinationSenders } from "./destinations/senders.js";

/** HTTP attempts a relay has in flight at once to one subscription, at most: the transport's connections per origin. */
export const DEFAULT_HTTP_CONCURRENCY = 64;

export { DEFAULT_MAX_IN_FLIGHT };

/**
 * How far ahead a relay claims a subscription's deliveries: what the endpoint gets through in this
 * long at its current limit and latency (Little's law), plus one round of its turns. Enough to keep
 * a fast endpoint's turns busy while the next claims run (a claim every few to tens of ms), and
 * next to nothing for an endpoint that hangs (limit 1, latency the timeout).
 */
const CLAIM_AHEAD_MS = 250;
/** How soon a claim that skipped subscriptions another transaction held looks again (ms). */
const BUSY_RETRY_MS = 10;
/** When the loop is woken after an endpoint's hold ends (ms after it, on this clock; see `attempt`). */
const WAKES_AFTER_HOLD_MS = [5, 60, 200];
/**
 * Deliveries claimed for a subscription whose latency is not known yet (new to this relay): one,
 * until it answers. A round of its turns (8) made 100 new endpoints that hang open 800 connections
 * in the relay's first ~300 ms, and hold 800 of its 1 024 deliveries until their timeouts, the
 * healthy endpoints' deliveries claimed and sent behind them (issue 28); four rounds held 2 000.
 * A healthy endpoint answers in milliseconds and is claimed again with a latency, at its turns.
 */
const FIRST_CLAIM_UNKNOWN = 1;

export interface RelayOptions {
  db: Database;
  transport: Transport;
  /** Backoff, Retry-After bound and default maximum of attempts. Default: DEFAULT_RETRY_POLICY. */
  retryPolicy?: RetryPolicy;
  /** Degrade/disable thresholds and probe interval. Default: DEFAULT_HEALTH_POLICY (5, 20, 60 s). */
  healthPolicy?: HealthPolicy;
  /** Most deliveries claimed per query. Default: 500. */
  batchSize?: number;
  /**
   * Most deliveries held at once: HTTP requests (queued for a connection or in flight) plus results
   * awaiting their completion write. Also the most a crash holds up for a lease (of them, only
   * those in flight or awaiting their write are sent twice). Default: 1024.
   * A bound well above `httpConcurrency` keeps the connections busy while claims and writes run
   * (measured in bench/outbound.ts).
   */
  concurrency?: number;
  /** Most completion writes (transactions) running at once; each takes all results gathered. Default: 2. */
  completionWriters?: number;
  /**
   * Most HTTP attempts in flight at once to one subscription; its other held deliveries wait
   * unstarted, so none waits in the connection pool while its deadline runs. The actual limit adapts
   * between 1 and this (adaptiveConcurrency.ts). Match it to the transport's `connectionsPerOrigin`.
   * Default: min(64, concurrency).
   */
  httpConcurrency?: number;
  /** Most HTTP attempts in flight at once in all (every subscription). Default: `concurrency`. */
  totalHttpConcurrency?: number;
  /** The adaptive limit of a subscription not seen yet (see adaptiveConcurrency.ts). Default: min(8, httpConcurrency). */
  initialHttpConcurrency?: number;
  /**
   * Deliveries of one subscription leased at once across every relay sharing the database, for
   * subscriptions that set no `maxInFlight` (the platform: OUTBOUND_MAX_IN_FLIGHT). Default: 1024.
   */
  maxInFlight?: number;
  /**
   * Lease length. A relay renews the leases it still holds once a third of it has passed (checked
   * every sixth), so a lease runs out only when its relay has died, or lost the database for about
   * half a lease: then another relay takes the deliveries over (a crash delays them that long).
   * Default: 60.
   */
  leaseSeconds?: number;
  /**
   * Longest a relay keeps renewing the lease of one delivery, from its claim. Past it the lease is
   * left to run out, so a relay alive but stuck (a completion write failing over and over) gives
   * its deliveries up to the others, as a dead one does. Keep it above the longest legitimate hold:
   * concurrency ÷ httpConcurrency attempt timeouts (160 s with the defaults). Default: 600.
   */
  maxHoldSeconds?: number;
  /** Backstop poll when no NOTIFY arrives (retries coming due, missed wake-ups). Default: 1000 ms. */
  pollIntervalMs?: number;
  /** How long `stop` waits for in-flight attempts. Default: 30 000 ms. */
  shutdownTimeoutMs?: number;
  logger?: Logger;
  /** Time and memory limits of subscriptions' transformations. Default: DEFAULT_TRANSFORMATION_LIMITS (100 ms, 16 MiB). */
  transformationLimits?: TransformationLimits;
  /** Endpoint authentication (OAuth 2.0, mTLS, Basic; docs/endpointAuth.md). Default: one on `db` and `transport`. */
  endpointAuth?: EndpointAuth;
  /** Queue and broker destinations (issue 31, docs/destinations.md). Default: senders on `db`, closed by `stop`. */
  destinations?: DestinationSenders;
  /** Called after each batch of completions is written (tests, metrics). */
  onCompleted?: (completions: readonly Completion[], result: CompletionResult) => void;
}

export interface Relay {
  readonly name: string;
  /** Starts the loop: LISTEN for new work, claim, deliver, complete. */
  start(): Promise<void>;
  /** Stops claiming, finishes in-flight attempts and writes them; resolves when done. */
  stop(): Promise<void>;
  /**
   * One pass without the loop: claims up to `batchSize` due deliveries (and due probes), sends them
   * (up to `httpConcurrency` at a time), writes the outcomes. Returns how many were attempted.
   * For scheduled runs (a cloud timer) and tests; do not mix with a started loop.
   */
  runOnce(): Promise<number>;
}

/**
 * @example
 * const relay = createRelay({ db, transport: createTransport({}) });
 * await relay.start();
 * // … later
 * await relay.stop();
 */
export function createRelay(options: RelayOptions): Relay {
  const { db, transport, logger } = options;
  const retry = options.retryPolicy ?? DEFAULT_RETRY_POLICY;
  const health = options.healthPolicy ?? DEFAULT_HEALTH_POLICY;
  const batchSize = options.batchSize ?? 500;
  const concurrency = options.concurrency ?? 1024;
  const httpConcurrency = Math.min(options.httpConcurrency ?? DEFAULT_HTTP_CONCURRENCY, concurrency);
  const leaseSeconds = options.leaseSeconds ?? 60;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  // Probes are rare; looking for them on every claim would double the queries of the hot path.
  const probeCheckMs = Math.min(1000, Math.max(pollIntervalMs, 50));
  let nextProbeCheck = 0;
  const relayId = randomUUID();
  const endpointAuth = options.endpointAuth ?? createEndpointAuth({ db, transport, logger });
  const destinations = options.destinations ?? createDestinationSenders({ db, logger });
  const maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
  /** What each endpoint accepted lately (successes per second), for learning its rate at a 429. */
  const accepted = createAcceptedRates();
  const limits = createConcurrencyLimits({ max: httpConcurrency, initial: options.initialHttpConcurrency ?? Math.min(8, httpConcurrency) });
  /** Deliveries claimed under the in-flight count (id → token), and those finished since the last claim, per subscription. */
  const counted = new Map<string, string>();
  let done = new Map<string, number>();
  const finished = (deliveries: readonly ClaimedDelivery[]) => {
    for (const d of deliveries) {
      if (counted.get(d.id) !== d.leaseToken) continue;
      counted.delete(d.id);
      done.set(d.subscriptionId, (done.get(d.subscriptionId) ?? 0) + 1);
    }
  };
  /** Set by a pass (runOnce): it claims one round of each subscription's turns, all it sends. */
  let oneRound = false;
  /** How many more of a subscription's deliveries this relay takes now (see CLAIM_AHEAD_MS). */
  const shareOf = (subscriptionId: string) => {
    const limit = limits.limitOf(subscriptionId);
    if (oneRound) return limit;
    const latency = limits.latencyOf(subscriptionId);
    const ahead = latency === null ? FIRST_CLAIM_UNKNOWN : Math.ceil(limit * (1 + CLAIM_AHEAD_MS / Math.max(1, latency)));
    return Math.min(concurrency, ahead) - loop.unfinished(subscriptionId);
  };

  /** Rate-limited deliveries: their slot on this process's clock, and the latest start still within it. */
  const slots = new Map<string, NonNullable<ClaimedDelivery["slot"]>>();
  /** Whether a claim giving subscriptions this relay has not seen their first round is under way. */
  let firstRoundClaim = false;
  /** Claims in a row that skipped held subscriptions (onBusy) since one last claimed something. */
  let busyStreak = 0;
  const claim = async (limit: number): Promise<ClaimedDelivery[]> => {
    const leaseToken = randomUUID();
    const report = done;
    done = new Map();
    const shares = new Map<string, number>();
    for (const id of new Set([...limits.known(), ...loop.groups()])) shares.set(id, shareOf(id));
    // A subscription this relay has not seen gets its first round from one claim at a time: two
    // claims running together each gave it one (100 new endpoints that hang: 16 each, the relay's
    // 1 024 slots full of attempts that could not start, a healthy endpoint's delivery unclaimed
    // until their timeouts; issue 28). Those it already holds are in `shares`. The claim that
    // gives first rounds hands the turn on when it ends: "no other claim running" gave none while
    // claims overlapped back to back, and a new healthy endpoint's delivery waited ~800 ms.
    const firstRound = !firstRoundClaim;
    const perSubscription = firstRound ? shareOf("") : 0;
    firstRoundClaim = true;
    let claimed: ClaimedDelivery[];
    try {
      claimed = await leaseWrite(db, (tx) => claimDueDeliveries(tx, {
        limit, leaseSeconds, leaseToken, relayId, defaultMaxInFlight: maxInFlight, perSubscription, shares, done: report,
        // Due work held by another claim or a completion: look again once that has likely ended
        // (a completion commits in a few ms), not at the next poll; backing off while a row stays
        // held (an operator's open transaction) so the claims do not spin.
        onBusy: () => {
          busyStreak += 1;
          setTimeout(() => loop.wake(), Math.min(pollIntervalMs, BUSY_RETRY_MS * 2 ** Math.min(busyStreak - 1, 10))).unref();
        },
      }));
    } catch (error) {
      for (const [id, n] of report) done.set(id, (done.get(id) ?? 0) + n); // not written: report them next time
      throw error;
    } finally {
      if (firstRound) firstRoundClaim = false;
    }
    if (claimed.length > 0) busyStreak = 0;
    for (const d of claimed) {
      counted.set(d.id, d.leaseToken);
      if (d.slot) slots.set(d.id, d.slot);
    }
    if (claimed.length < limit && Date.now() >= nextProbeCheck) {
      nextProbeCheck = Date.now() + probeCheckMs;
      limits.forgetIdle(10 * 60_000);
      accepted.forgetIdle(performance.now());
      await forgetHolds(db).catch((error) => logger?.warn({ err: error }, "forgetting old relay holds failed; retrying later"));
      const probes = await claimProbeDeliveries(db, {
        limit: limit - claimed.length, leaseSeconds, leaseToken, probeIntervalSeconds: health.probeIntervalSeconds,
      });
      claimed.push(...probes);
    }
    return claimed;
  };

  const leases = createLeaseKeeper({ db, leaseSeconds, maxHoldMs: (options.maxHoldSeconds ?? 600) * 1000, logger, relayId });

  /**
   * Endpoints that answered 429 or Retry-After, until when (this process's clock). The completion
   * write throttles them for every relay (no claims); the deliveries this relay already holds are
   * given back unsent rather than sent meanwhile.
   */
  const throttled = new Map<string, number>();
  /** Holds the endpoint on this relay until `until` (this process's clock), if that is later than it is held. */
  const holdUntil = (subscriptionId: string, until: number) => {
    if (until <= (throttled.get(subscriptionId) ?? 0)) return;
    throttled.set(subscriptionId, until);
    // Claimed again the moment the hold ends, not at the next poll (up to a second later: a
    // rate-limited endpoint's hold then wasted twice what it asked for). The database's hold
    // started when the completion was written, a little after this answer: wake again after
    // the usual delay of that write too.
    const wait = until - performance.now();
    for (const after of WAKES_AFTER_HOLD_MS) setTimeout(() => loop.wake(), wait + after).unref();
  };
  /** Waits for a rate-limited delivery's slot; false when it must not be sent now (given back). */
  const awaitSlot = async (delivery: ClaimedDelivery): Promise<boolean> => {
    const until = throttled.get(delivery.subscriptionId);
    if (until !== undefined) {
      if (performance.now() < until) {
        slots.delete(delivery.id);
        return false;
      }
      throttled.delete(delivery.subscriptionId);
    }
    const slot = slots.get(delivery.id);
    if (!slot) return true;
    slots.delete(delivery.id);
    const wait = slot.at - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    return performance.now() <= slot.latest && !((throttled.get(delivery.subscriptionId) ?? 0) > performance.now());
  };

  /**
   * The delivery's secrets and header values, decrypted (they are stored encrypted, docs/secrets.md).
   * When they cannot be (a key id missing from ENCRYPTION_KEYS, an altered value), the delivery is
   * put back unsent and uncounted, due again in a minute, and null is returned: it waits for the
   * key rather than being dead-lettered for something the endpoint did not do.
   */
  const unsealed = async (delivery: ClaimedDelivery): Promise<{ secrets: string[]; headers: Record<string, string> } | null> => {
    try {
      return { secrets: openSecrets(delivery.subscriptionId, delivery.secrets), headers: openHeaders(delivery.subscriptionId, delivery.headers) };
    } catch (error) {
      if (!isUnreadableSecretError(error)) throw error;
      slots.delete(delivery.id);
      failuresOf(logger).record(`relay:secrets:${delivery.subscriptionId}`, "error", { err: error, deliveryId: delivery.id, subscriptionId: delivery.subscriptionId, retryInSeconds: UNREADABLE_SECRET_RETRY_SECONDS },
        "delivery not sent: its subscription's secrets cannot be decrypted here; it waits (pending, uncounted) and is tried again");
      // The delivery says why it waits (GET /deliveries/:id, the admin page; /healthz counts them).
      const why = `${(error as Error).message} Every process writing to this database (servers, relays, your own code) needs the same ENCRYPTION_KEYS. Not sent and not counted; tried again every ${UNREADABLE_SECRET_RETRY_SECONDS} s.`;
      await deferUnsent(db, delivery, why).catch((e) => logger?.warn({ err: e, deliveryId: delivery.id }, "could not defer the delivery; its lease runs out"));
      return null;
    }
  };

  const transformationOf = async (delivery: ClaimedDelivery): Promise<{ outcome: DeliveryOutcome } | { body: string; headers?: Record<string, string>; url?: string }> => {
    const startedAt = performance.now();
    const no = (result: DeliveryOutcome["result"], errorClass: string, excerpt: string): { outcome: DeliveryOutcome } =>
      ({ outcome: { result, status: null, latencyMs: Math.round(performance.now() - startedAt), errorClass, responseExcerpt: excerpt, retryAfterSeconds: null } });
    try {
      const result = await runTransformation(delivery.transformation!, JSON.parse(delivery.body), options.transformationLimits);
      if (result.skip) return no("delivered", "skipped_by_transformation", "not sent: the subscription's transformation returned null for this event");
      return result;
    } catch (error) {
      if (!(error instanceof TransformationError)) throw error;
      logger?.warn({ deliveryId: delivery.id, subscriptionId: delivery.subscriptionId, reason: error.message }, "transformation failed; the delivery fails permanently");
      return no("permanent", "transformation_failed", error.message);
    }
  };

  const attempt = async (delivery: ClaimedDelivery, open: { secrets: string[]; headers: Record<string, string> }): Promise<Completion> => {
    let outcome: DeliveryOutcome;
    const startedAt = performance.now();
    try {
      // The subscription's transformation (issue 30) decides what is sent: its body is what is
      // signed. Its failure is this delivery's (permanent, with the reason), never the relay's.
      const transformed = delivery.transformation ? await transformationOf(delivery) : null;
      if (transformed && "outcome" in transformed) {
        outcome = transformed.outcome;
      } else {
        // A subscription without authentication (as the claim read it) goes straight to the
        // transport: endpointAuth would read its configuration to find nothing.
        // A queue or broker destination (its url is `<kind>:…`, never http) goes to its sender, which
        // answers the same outcomes: everything after this point is the same for every kind.
        const send = !isHttpUrl(delivery.url)
          ? (id: string, req: Parameters<typeof transport.deliver>[0], subscriptionUrl?: string) => destinations.deliver(id, req, { orderingKey: delivery.orderingKey ?? null, subscriptionUrl })
          : delivery.hasAuth === false ? (_id: string, req: Parameters<typeof transport.deliver>[0]) => transport.deliver(req) : endpointAuth.deliver;
        outcome = await send(delivery.subscriptionId, {
          url: transformed?.url ?? delivery.url,
          webhookId: delivery.id,
          timestamp: Math.floor(Date.now() / 1000),
          body: transformed?.body ?? delivery.body,
          secrets: open.secrets,
          headers: transformed?.headers ? { ...open.headers, ...transformed.headers } : open.headers,
          ...(delivery.timeoutMs != null ? { timeoutMs: delivery.timeoutMs } : {}),
        }, transformed?.url !== undefined ? delivery.url : undefined);
      }
    } catch (error) {
      // The transport should classify everything; if it throws anyway, retry rather than lose.
      logger?.error({ err: error, deliveryId: delivery.id }, "transport threw; treating the attempt as retryable");
      outcome = { result: "retryable", status: null, latencyMs: 0, errorClass: "relay_error", responseExcerpt: null, retryAfterSeconds: null };
    }
    // An attempt that sent nothing (a transformation failed or skipped it) says nothing about the
    // endpoint: it moves neither the adaptive limit nor the accepted rate (health.ts, wasNotSent).
    const sent = !wasNotSent(outcome);
    if (sent) limits.record(delivery.subscriptionId, outcome, startedAt);
    const now = performance.now();
    if (sent && outcome.result === "delivered") accepted.recordSuccess(delivery.subscriptionId, now);
    if (outcome.status === 429) accepted.recordLimited(delivery.subscriptionId, now);
    const decision = decideNext(delivery, outcome, retry);
    // The share of 429s lately tells a receiver metering us (a 429 now and then: the pace comes
    // down, nothing is held) from one refusing everything (held for its Retry-After): health.ts.
    const limitedShare = outcome.status === 429 ? accepted.limitedShare(delivery.subscriptionId, now) : undefined;
    const throttle = throttleOf({ outcome, decision, limitedShare, delivery });
    if (throttle > 0) holdUntil(delivery.subscriptionId, now + throttle * 1000);
    if (outcome.status === 429) {
      // Paced already, a 429 teaches once this relay has seen enough of them to tell the share of
      // the pace refused; the first one of an endpoint not paced yet teaches at once (acceptedRate.ts).
      const teaches = !delivery.slot || accepted.limitedCount(delivery.subscriptionId, now) >= ACCEPTED_MIN_SAMPLE;
      return { delivery, outcome, decision, acceptedPerSecond: accepted.perSecond(delivery.subscriptionId, now), limitedShare, teaches };
    }
    return { delivery, outcome, decision };
  };

  const complete = async (completions: Completion[]) => {
    const result = await completeDeliveries(db, completions, health, { relayId });
    const lost = result.stale.length - result.cancelled.length;
    if (lost > 0) logger?.warn({ stale: lost }, "completions not applied: the lease was lost to another relay (this relay held the deliveries past their lease)");
    if (result.cancelled.length > 0) logger?.info({ cancelled: result.cancelled.length }, "completions not applied: the deliveries were cancelled (their subscription deleted) during the attempt");
    for (const t of result.transitions) logger?.warn(t, "subscription health changed");
    // The holds the write left (another relay's among them), on this relay's clock.
    for (const h of result.holds) holdUntil(h.subscriptionId, performance.now() + (h.until - Date.now()));
    for (const c of completions) {
      if (c.decision.status === "dead") logger?.warn({ deliveryId: c.delivery.id, reason: c.decision.deadReason }, "delivery dead-lettered");
    }
    const deliveries = completions.map((c) => c.delivery);
    leases.letGo(deliveries);
    finished(deliveries);
    options.onCompleted?.(completions, result);
  };

  /** A claim whose leases are then renewed until the deliveries are written or released. */
  const claimHeld = async (limit: number) => {
    const claimed = await claim(limit);
    leases.hold(claimed);
    return claimed;
  };

  const loop: RelayLoop = createRelayLoop<ClaimedDelivery, Completion>(
    {
      claim: claimHeld,
      process: async (delivery) => {
        const open = await unsealed(delivery);
        return open && (await awaitSlot(delivery)) ? attempt(delivery, open) : GIVE_BACK;
      },
      complete,
      release: async (items) => {
        // Forgotten even if the release fails: a lease no longer renewed runs out by itself.
        try {
          await releaseDeliveries(db, items);
        } finally {
          leases.letGo(items);
          finished(items);
        }
      },
      onError: (error, stage) => failuresOf(logger).record(`relay:${stage}`, isUnavailable(error) ? "warn" : "error", { err: error, stage }, "relay error; retrying"),
    },
    {
      batchSize, concurrency, pollIntervalMs, shutdownTimeoutMs: options.shutdownTimeoutMs ?? 30_000, completionWriters: options.completionWriters,
      processConcurrency: options.totalHttpConcurrency ?? concurrency,
      keyOf: (d) => d.subscriptionId,
      turnsFor: (id) => limits.limitOf(id),
    },
  );
  /** Takes what this relay finished off its holds (at a stop or the end of a pass: no claim follows). */
  const reportFinished = async () => {
    const report = done;
    done = new Map();
    await reportDone(db, relayId, report).catch((error) => logger?.warn({ err: error }, "could not take finished deliveries off this relay's holds; they run out with its leases"));
  };

  /** A pass's attempts: every subscription's at once, each within its concurrency limit. */
  const attemptAll = async (claimed: readonly ClaimedDelivery[]): Promise<Completion[]> => {
    const groups = new Map<string, ClaimedDelivery[]>();
    for (const d of claimed) {
      const group = groups.get(d.subscriptionId);
      if (group) group.push(d);
      else groups.set(d.subscriptionId, [d]);
    }
    const completions: Completion[] = [];
    await Promise.all([...groups].map(async ([id, items]) => {
      let next = 0;
      const late: ClaimedDelivery[] = [];
      const worker = async () => {
        while (next < items.length) {
          const d = items[next++]!;
          const open = await unsealed(d);
          if (open && (await awaitSlot(d))) completions.push(await attempt(d, open));
          else late.push(d);
        }
      };
      await Promise.all(Array.from({ length: Math.min(items.length, limits.limitOf(id)) }, worker));
      if (late.length > 0) {
        await releaseDeliveries(db, late).catch((error) => logger?.warn({ err: error }, "could not release deliveries past their rate slot; their leases run out"));
        leases.letGo(late);
        finished(late);
      }
    }));
    return completions;
  };

  let unlisten: (() => Promise<void>) | null = null;
  let stopRenewing: () => Promise<void> = async () => {};

  return {
    name: "outbound-relay",
    async start() {
      if (unlisten) return; // already started
      unlisten = await db.listen(NOTIFY_CHANNEL, () => loop.wake());
      stopRenewing = leases.renewWhileHeld();
      loop.start();
    },
    async stop() {
      await loop.stop();
      await reportFinished();
      await stopRenewing();
      if (!options.destinations) await destinations.close();
      const u = unlisten;
      unlisten = null;
      await u?.();
    },
    runOnce() {
      return withSpan(SPANS.relayBatch, {}, async (span) => {
        nextProbeCheck = 0;
        // A pass may take several HTTP turns of up to the timeout each: its leases are renewed meanwhile.
        const done = leases.renewWhileHeld();
        let claimed: ClaimedDelivery[];
        try {
          oneRound = true; // a pass lasts one attempt timeout at most: one round of each subscription's turns
          claimed = await claimHeld(batchSize);
          await complete(await attemptAll(claimed));
          await reportFinished();
        } finally {
          await done();
        }
        span.setAttribute("webhooks.batch.size", claimed.length);
        return claimed.length;
      });
    },
  };
}
