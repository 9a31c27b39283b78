/**
 * Adaptive concurrency per subscription, inside one relay: how many HTTP attempts to one endpoint
 * may run at once. The model is TCP's congestion control (AIMD with slow start), with one attempt
 * standing for one packet:
 * - an answer that shows the endpoint coping (2xx, or any 4xx but 408/429) raises the limit: by 1
 *   per answer below `ssthresh` (slow start: the limit doubles each round trip), by 1/limit above
 *   it (one more per round trip);
 * - a sign of overload (network error, 5xx, 408) halves it, at most once per round trip: failures
 *   of attempts that started before the last decrease were in flight together and count as one
 *   signal (TCP's one reduction per window). So a burst of 64 concurrent failures halves the limit
 *   once;
 * - a timeout drops it to 1 (halving `ssthresh`), as TCP's retransmission timeout drops its window
 *   to one segment (RFC 5681, 3.1): nothing came back at all. Halving let 100 endpoints that hang
 *   start 400-500 new attempts at each wave of timeouts (8 → 4 → 2), every one of them a new
 *   connection the relay's one event loop opened between the healthy endpoints' attempts (issue
 *   28); a slow endpoint that timed out once climbs back by slow start, doubling per round trip;
 * - a 429 does neither: the receiver is metering requests per second, not short of capacity, and
 *   the pace (acceptedRate.ts) is what answers it; halving here restarted the endpoint low after
 *   every hold, most of the next second wasted (issue 28);
 * - it never drops below 1 (an endpoint that hangs keeps one attempt going, and so a way back)
 *   nor rises above `max`.
 * A new subscription starts at `initial`, low, so an endpoint that hangs from its first attempt
 * holds few turns (and so few of the relay's held deliveries) before its limit falls; a healthy one
 * reaches `max` after about `max - initial` answers (a few milliseconds at speed).
 */
import type { DeliveryOutcome } from "./transport.js";

export interface AdaptiveConcurrencyOptions {
  /** Limit of a subscription this relay has not seen yet. Default: 8. */
  initial?: number;
  /** Highest limit (the transport's connections per origin). Default: 64. */
  max?: number;
}

export interface ConcurrencyLimits {
  /** The current limit of `subscriptionId` (a whole number ≥ 1). */
  limitOf(subscriptionId: string): number;
  /** Recent attempt latency of `subscriptionId` in ms (a moving average), or null before its first. */
  latencyOf(subscriptionId: string): number | null;
  /** Records an attempt's outcome; `startedAt` is when it started (performance.now()). */
  record(subscriptionId: string, outcome: Pick<DeliveryOutcome, "result" | "status"> & { errorClass?: string | null }, startedAt: number, now?: number): void;
  /** Subscriptions with a state (seen recently). */
  known(): IterableIterator<string>;
  /** Forgets subscriptions untouched for `idleMs` (their next attempt starts from `initial`). */
  forgetIdle(idleMs: number, now?: number): void;
}

interface State {
  limit: number;
  latencyMs: number | null;
  ssthresh: number;
  lastDecreaseAt: number;
  touchedAt: number;
}

/** Whether an outcome says the endpoint is overloaded (or down), rather than coping. */
export function isOverload(outcome: Pick<DeliveryOutcome, "result" | "status">): boolean {
  if (outcome.result === "delivered") return false;
  if (outcome.status === null) return outcome.result === "retryable"; // timeouts, resets, refused
  return outcome.status >= 500 || outcome.status === 408;
}

export function createConcurrencyLimits(options: AdaptiveConcurrencyOptions = {}): ConcurrencyLimits {
  const max = Math.max(1, options.max ?? 64);
  const initial = Math.min(max, Math.max(1, options.initial ?? 8));
  const states = new Map<string, State>();
  const stateOf = (id: string, now: number) => {
    let s = states.get(id);
    if (!s) states.set(id, (s = { limit: initial, latencyMs: null, ssthresh: max, lastDecreaseAt: -Infinity, touchedAt: now }));
    return s;
  };
  return {
    limitOf(id) {
      const s = states.get(id);
      return s ? Math.max(1, Math.floor(s.limit)) : initial;
    },
    latencyOf: (id) => states.get(id)?.latencyMs ?? null,
    record(id, outcome, startedAt, now = performance.now()) {
      const s = stateOf(id, now);
      s.touchedAt = now;
      const took = Math.max(0, now - startedAt);
      s.latencyMs = s.latencyMs === null ? took : s.latencyMs * 0.8 + took * 0.2;
      if (outcome.status === 429) return; // metering, not overload: neither raises nor lowers
      if (!isOverload(outcome)) {
        s.limit = Math.min(max, s.limit + (s.limit < s.ssthresh ? 1 : 1 / s.limit));
        return;
      }
      if (startedAt < s.lastDecreaseAt) return; // in flight with the failures that already counted
      s.ssthresh = Math.max(1, s.limit / 2);
      s.limit = outcome.errorClass === "timeout" ? 1 : s.ssthresh;
      s.lastDecreaseAt = now;
    },
    known: () => states.keys(),
    forgetIdle(idleMs, now = performance.now()) {
      for (const [id, s] of states) if (now - s.touchedAt > idleMs) states.delete(id);
    },
  };
}
