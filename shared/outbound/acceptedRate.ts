/**
 * Learning the rate a rate-limited receiver accepts (issue 28; docs/outbound.md, "Rate-limited
 * receivers"). The model, in the database so every relay sharing it paces the endpoint together:
 * - a 429 says we went faster than the endpoint accepts. The completion write sets the endpoint's
 *   learnt rate to RATE_DECREASE × the rate it was accepting just before (the successes per second
 *   this relay saw, times the relays holding its deliveries), or of the rate it was paced at if that
 *   is lower; at most once per RATE_RELEARN_SECONDS (429s of requests already sent at the old pace
 *   are one signal, as TCP takes one reduction per window);
 * - the claim paces the endpoint through the rate limiter's slots (sql/claimDeliveries.ts) at the
 *   learnt rate grown by RATE_PROBE_GROWTH per second since it was learnt: probing upwards slowly,
 *   until the next 429 sets it again;
 * - a 429 holds the endpoint (its Retry-After) only when the receiver refuses most requests
 *   (RATE_REFUSING_SHARE); the delivery that got it waits its Retry-After in any case;
 * - a quota the receiver states (RateLimit-Policy: q per w seconds) caps the pace at
 *   RATE_STATED_SHARE of it, learnt from its first answer: no 429 needed.
 * This module holds the constants, the SQL of the pace, and the relay's window of successes.
 */

/** After a 429, the pace restarts at this share of the rate accepted before it. */
export const RATE_DECREASE = 0.85;
/**
 * The pace grows by this share per second without a 429 (2 %: from 0.85 back to 1 in ~8 s). Slower
 * growth spaces the 429s (each holds the endpoint for its Retry-After) further apart; faster
 * recovers sooner from a low estimate. Measured in bench/ratelimit.ts (docs/outbound.md).
 */
export const RATE_PROBE_GROWTH = 0.02;
/** A stated quota is paced at this share of it (the rest absorbs the network's and our jitter). */
export const RATE_STATED_SHARE = 0.95;
/** The learnt rate is set again at most this often (s): the 429s of one second are one signal. */
export const RATE_RELEARN_SECONDS = 1;
/**
 * A 429 holds the endpoint for its Retry-After only when the receiver is refusing rather than
 * metering: more than this share of the relay's answers from it in the last ACCEPTED_WINDOW_MS
 * were 429s (health.ts, throttleOf). A 429 now and then is the pace going a little too fast (a
 * token bucket refuses the excess only), and the pace comes down at once; holding every request
 * for a second for each cost the backlog most of that second each time (bench/ratelimit.ts: 57 %
 * of a 200/s limit). A receiver whose limit is a window (100 per minute, Retry-After: 37) refuses
 * everything after it: its second 429 in a row holds.
 */
export const RATE_REFUSING_SHARE = 0.5;
/** The lowest learnt rate (per second): an endpoint is never paced to a standstill. */
export const RATE_FLOOR_PER_SECOND = 0.1;
/** The window of successes the accepted rate is measured over (ms), and its shortest span. */
export const ACCEPTED_WINDOW_MS = 1000;
export const ACCEPTED_MIN_SPAN_MS = 250;
/** Fewer successes in the window than this say nothing about a rate: nothing is learnt from them. */
export const ACCEPTED_MIN_SAMPLE = 3;

/**
 * SQL: the rate the learnt rate of subscription row `s` has grown to at time `at`. The exponent is
 * bounded (past 200 s it is ~370 times the learnt rate: no longer a limit in practice) so the
 * power never overflows.
 */
export const grownRate = (s: string, at: string) =>
  `(${s}.learned_rate_per_second * power(${1 + RATE_PROBE_GROWTH}::float8, LEAST(200, GREATEST(0, extract(epoch FROM ${at} - ${s}.learned_at)))::float8))`;

/**
 * The successes per second each endpoint accepted lately, as this relay saw them: those in the last
 * ACCEPTED_WINDOW_MS over the span they cover (at least ACCEPTED_MIN_SPAN_MS, so a first burst of a
 * few quick answers is not read as thousands per second; a receiver's burst of N / 4 then reads as
 * N per second, which is the rate a bucket of that shape refills at), from ACCEPTED_MIN_SAMPLE on;
 * and the share of its answers in the same window that were 429s.
 */
export interface AcceptedRates {
  recordSuccess(subscriptionId: string, now: number): void;
  recordLimited(subscriptionId: string, now: number): void;
  /** Successes per second lately, or null when none were seen in the window. */
  perSecond(subscriptionId: string, now: number): number | null;
  /** Of the successes and 429s in the window, the share of 429s (0 when there were none). */
  limitedShare(subscriptionId: string, now: number): number;
  /** Forgets the windows with no answer in the last ACCEPTED_WINDOW_MS. */
  forgetIdle(now: number): void;
}

/** Times of one kind of answer, oldest first, from `head` on (a queue without shifting). */
interface Times { times: number[]; head: number }

export function createAcceptedRates(): AcceptedRates {
  const successes = new Map<string, Times>();
  const limited = new Map<string, Times>();
  const trim = (w: Times, now: number) => {
    while (w.head < w.times.length && w.times[w.head]! < now - ACCEPTED_WINDOW_MS) w.head += 1;
    if (w.head > 1024 && w.head * 2 > w.times.length) {
      w.times = w.times.slice(w.head);
      w.head = 0;
    }
  };
  const record = (windows: Map<string, Times>, id: string, now: number) => {
    let w = windows.get(id);
    if (!w) windows.set(id, (w = { times: [], head: 0 }));
    trim(w, now);
    w.times.push(now);
  };
  const count = (windows: Map<string, Times>, id: string, now: number) => {
    const w = windows.get(id);
    if (!w) return 0;
    trim(w, now);
    const n = w.times.length - w.head;
    if (n === 0) windows.delete(id);
    return n;
  };
  return {
    recordSuccess: (id, now) => record(successes, id, now),
    recordLimited: (id, now) => record(limited, id, now),
    perSecond(id, now) {
      const n = count(successes, id, now);
      if (n < ACCEPTED_MIN_SAMPLE) return null;
      const w = successes.get(id)!;
      // Over the span the successes cover, not up to now: the 429 may be read long after them (a
      // busy event loop, PGlite's queries on it), and that wait is no measure of the endpoint.
      const span = Math.max(ACCEPTED_MIN_SPAN_MS, w.times[w.times.length - 1]! - w.times[w.head]!);
      return (n * 1000) / span;
    },
    limitedShare(id, now) {
      const refused = count(limited, id, now);
      const all = refused + count(successes, id, now);
      return all === 0 ? 0 : refused / all;
    },
    forgetIdle(now) {
      for (const windows of [successes, limited]) {
        for (const [id, w] of windows) if ((w.times[w.times.length - 1] ?? -Infinity) < now - ACCEPTED_WINDOW_MS) windows.delete(id);
      }
    },
  };
}
