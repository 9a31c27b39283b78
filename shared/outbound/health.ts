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
 */
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
}

/** How long an answer asks us to leave the endpoint alone, whichever delivery got it. */
export function throttleOf(c: Pick<Completion, "outcome" | "decision">): number {
  // Said for the reader: a delivered attempt's decision waits 0 s and a 2xx is not a 429, so the
  // lines below give 0 too (this test made `false` survives as equivalent, docs/testing.md).
  // Stryker disable next-line StringLiteral: equivalent: `=== ""` is the test made false, as above
  if (c.outcome.result === "delivered") return 0;
  if (c.outcome.retryAfterSeconds !== null) return c.decision.delaySeconds;
  return c.outcome.status === 429 ? 1 : 0;
}

/** Folds a batch of completions, in the order they finished, into one update per subscription. */
export function summariseHealth(completions: readonly Completion[]): HealthUpdate[] {
  const bySub = new Map<string, HealthUpdate>();
  for (const c of completions) {
    const id = c.delivery.subscriptionId;
    let u = bySub.get(id);
    if (!u) bySub.set(id, (u = { subscriptionId: id, succeeded: false, failures: 0, gone: false, throttleSeconds: 0, probeSucceeded: false }));
    u.throttleSeconds = Math.max(u.throttleSeconds, throttleOf(c));
    if (c.outcome.result === "delivered") {
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
