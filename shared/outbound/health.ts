/**
 * Endpoint health, a circuit breaker per subscription:
 * consecutive failures mark it `degraded`, then `disabled` (circuit open). A disabled endpoint gets
 * no normal traffic; every `probeIntervalSeconds` one of its pending deliveries is sent as a probe.
 * A success (probe or not) closes the circuit: status back to active, and its kept deliveries resume.
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
}

export const DEFAULT_HEALTH_POLICY: HealthPolicy = { degradeAfter: 5, disableAfter: 20, probeIntervalSeconds: 60 };

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
}

/** How long an answer asks us to leave the endpoint alone, whichever delivery got it. */
export function throttleOf(c: Pick<Completion, "outcome" | "decision">): number {
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
    if (!u) bySub.set(id, (u = { subscriptionId: id, succeeded: false, failures: 0, gone: false, throttleSeconds: 0 }));
    u.throttleSeconds = Math.max(u.throttleSeconds, throttleOf(c));
    if (c.outcome.result === "delivered") {
      u.succeeded = true;
      u.failures = 0;
      u.gone = false;
    } else {
      u.failures += 1;
      if (c.outcome.result === "gone") u.gone = true;
    }
  }
  return [...bySub.values()];
}
