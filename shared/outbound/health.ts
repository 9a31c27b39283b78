/**
 * Endpoint health, a circuit breaker per subscription:
 * consecutive failures mark it `degraded`; `disableAfter` of them that have lasted at least
 * `openAfterSeconds` open the circuit (`disabled`): sustained failure, not one burst of concurrent
 * failures (64 within 50 ms reach the count in no time, never the window). A disabled endpoint gets
 * no normal traffic; every `probeIntervalSeconds` one of its pending deliveries is sent as a probe
 * (half-open). Only a probe's success closes the circuit (a late success of an attempt in flight
 * when it opened does not: no flapping); its kept deliveries then resume gradually, since every
 * relay's adaptive limit for it (adaptiveConcurrency.ts) is low after the failures and grows back
 * by slow start (1, 2, 4, … per round trip).
 * A 410 Gone disables at once and is not probed: the receiver said the endpoint is gone, so it
 * stays disabled until an operator re-enables it.
 * A 429 is neither: the receiver is metering us, not failing. It does not count toward the breaker
 * nor wipe the failures before it; it teaches the rate the endpoint is paced at (docs/outbound.md,
 * "Rate-limited receivers").
 */
import { RATE_REFUSING_SHARE } from "./acceptedRate.js";
import type { Completion } from "./types.js";

export interface HealthPolicy {
  /** Consecutive failures that mark a subscription degraded. Default: 5. */
  degradeAfter: number;
  /** Consecutive failures that disable it (circuit open). Default: 20. */
  disableAfter: number;
  /** Seconds between probes of a disabled endpoint. Default: 60. */
  probeIntervalSeconds: number;
  /** Seconds the failures must have lasted (from the first of the run) before they open the circuit. Default: 30. */
  openAfterSeconds?: number;
}

export const DEFAULT_HEALTH_POLICY: HealthPolicy = { degradeAfter: 5, disableAfter: 20, probeIntervalSeconds: 60, openAfterSeconds: 30 };

/** The net effect of a batch of attempts on one subscription. */
export interface HealthUpdate {
  subscriptionId: string;
  /** At least one attempt succeeded: the failure count restarts from `failures`. */
  succeeded: boolean;
  /** Failures after the last success (or all of them when none succeeded). */
  failures: number;
  /** The endpoint answered 410 Gone. */
  gone: boolean;
  /**
   * Seconds the whole endpoint is slowed down for (no claims): it sent `Retry-After` (as bounded
   * by the retry policy), or 429 without one (1 s). 0: not throttled.
   */
  throttleSeconds: number;
  /** A probe succeeded: the only way an open circuit closes. */
  probeSucceeded: boolean;
  /** An attempt was answered 429: the endpoint's accepted rate is learnt again (at most once a second). */
  rateLimited: boolean;
  /** Of the 429s, the highest rate this relay saw the endpoint accept just before one; null: none seen. */
  acceptedPerSecond: number | null;
  /** The quota the receiver stated (RateLimit-Policy), the batch's last; null: it stated none. */
  statedPerSecond: number | null;
  /** Of the 429s, the highest share of 429s among this relay's recent answers from the endpoint; null: none known. */
  limitedShare: number | null;
}

/** Longest the receiver's "quota spent, resets in t s" holds the endpoint (as Retry-After's default bound). */
export const RATE_RESET_HOLD_CAP_SECONDS = 3600;

/**
 * The receiver says its quota is spent (remaining 0) and when it resets: no request before then,
 * whatever this answer was. Only as long as it says.
 */
function spentOf(outcome: Completion["outcome"]): number {
  const limit = outcome.rateLimit;
  return limit?.remaining === 0 && limit.resetSeconds !== null ? Math.min(RATE_RESET_HOLD_CAP_SECONDS, limit.resetSeconds) : 0;
}

/**
 * How long an answer asks us to leave the endpoint alone, whichever delivery got it.
 * A 429 holds the endpoint for its Retry-After (or 1 s) only when the receiver is refusing rather
 * than metering: more than RATE_REFUSING_SHARE of this relay's answers from it lately were 429s
 * (acceptedRate.ts), or it broke a limit configured here (kept strictly). Otherwise it is a signal
 * about the pace, which comes down at once; the delivery that got it still waits its Retry-After.
 */
export function throttleOf(c: Pick<Completion, "outcome" | "decision" | "limitedShare"> & { delivery?: Pick<Completion["delivery"], "slot"> }): number {
  const spent = spentOf(c.outcome);
  // Said for the reader: a delivered attempt's decision waits 0 s and a 2xx is not a 429, so the
  // lines below give 0 too (this test made `false` survives as equivalent, docs/testing.md).
  // Stryker disable next-line StringLiteral: equivalent: `=== ""` is the test made false, as above
  if (c.outcome.result === "delivered") return spent;
  const metering = c.outcome.status === 429 && c.limitedShare !== undefined && c.limitedShare <= RATE_REFUSING_SHARE && !c.delivery?.slot?.strict;
  if (metering) return spent;
  if (c.outcome.retryAfterSeconds !== null) return Math.max(spent, c.decision.delaySeconds);
  return Math.max(spent, c.outcome.status === 429 ? 1 : 0);
}

/**
 * The attempt sent nothing: the subscription's transformation failed or skipped the delivery
 * (relay.ts, issue 30). The endpoint was not contacted, so it says nothing about the endpoint.
 */
export function wasNotSent(outcome: Pick<Completion["outcome"], "errorClass">): boolean {
  return outcome.errorClass === "transformation_failed" || outcome.errorClass === "skipped_by_transformation";
}

/**
 * Folds a batch of completions, in the order they finished, into one update per subscription.
 * An attempt that sent nothing (wasNotSent) is left out: neither a failure (a bad transformation
 * must not degrade or disable a working endpoint) nor a success (a skipped probe must not close
 * an open circuit without contacting the endpoint).
 */
export function summariseHealth(completions: readonly Completion[]): HealthUpdate[] {
  const bySub = new Map<string, HealthUpdate>();
  for (const c of completions) {
    if (wasNotSent(c.outcome)) continue;
    const id = c.delivery.subscriptionId;
    let u = bySub.get(id);
    if (!u) {
      u = { subscriptionId: id, succeeded: false, failures: 0, gone: false, throttleSeconds: 0, probeSucceeded: false, rateLimited: false, acceptedPerSecond: null, statedPerSecond: null, limitedShare: null };
      bySub.set(id, u);
    }
    u.throttleSeconds = Math.max(u.throttleSeconds, throttleOf(c));
    u.statedPerSecond = c.outcome.rateLimit?.quotaPerSecond ?? u.statedPerSecond;
    if (c.outcome.status === 429) {
      // Not a failure, not a success: the breaker's count is left as it was. Only a 429 that
      // teaches (types.ts) sets the learnt rate again.
      if (c.teaches !== false) {
        u.rateLimited = true;
        const accepted = c.acceptedPerSecond ?? null;
        if (accepted !== null) u.acceptedPerSecond = Math.max(u.acceptedPerSecond ?? 0, accepted);
        if (c.limitedShare !== undefined) u.limitedShare = Math.max(u.limitedShare ?? 0, c.limitedShare);
      }
    } else if (c.outcome.result === "delivered") {
      u.succeeded = true;
      if (c.delivery.probe) u.probeSucceeded = true;
      u.failures = 0;
      u.gone = false;
    } else {
      u.failures += 1;
      if (c.outcome.result === "gone") u.gone = true;
    }
  }
  return [...bySub.values()];
}
