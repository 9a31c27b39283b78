/**
 * Learning the rate a rate-limited receiver accepts (issue 28; docs/outbound.md, "Rate-limited
 * receivers"). The model, in the database so every relay sharing it paces the endpoint together:
 * - a 429 says we went faster than the endpoint accepts. The completion write takes the rate it
 *   came at (paced: the pace less the share of it refused lately, or this relay's successes per
 *   second when it sends there alone; not paced yet: the successes per second each relay saw,
 *   added up from their reports; never below RATE_MOST_DECREASE of the pace) and sets the
 *   endpoint's learnt rate to RATE_DECREASE × it; at most once per RATE_RELEARN_SECONDS (429s of
 *   requests already sent at the old pace are one signal, as TCP takes one reduction per window),
 *   but a rate learnt from reports is raised by the other relays' reports in the second after it;
 * - the claim paces the endpoint through the rate limiter's slots (sql/claimDeliveries.ts) at the
 *   learnt rate grown since it was learnt: quickly (RATE_RECOVERY_GROWTH) back to RATE_RECOVER_SHARE
 *   of the rate the 429 came at, then probing upwards, slowly at first (RATE_PROBE_GROWTH) and
 *   faster the longer no 429 comes (RATE_PROBE_SPEEDUP_SECONDS), until the next 429 sets it again;
 * - a 429 holds the endpoint (its Retry-After) only when the receiver refuses most requests
 *   (RATE_REFUSING_SHARE); the delivery that got it waits its Retry-After in any case;
 * - a quota the receiver states (RateLimit-Policy: q per w seconds) caps the pace at
 *   RATE_STATED_SHARE of it, learnt from its first answer: no 429 needed.
 * This module holds the constants, the SQL of the pace, and the relay's window of successes.
 */

/** After a 429, the pace restarts at this share of the rate the 429 came at. */
export const RATE_DECREASE = 0.85;
/**
 * The pace grows by this share per second without a 429 once it is back near the rate the last
 * one came at (RATE_RECOVER_SHARE). Slower growth spaces the 429s further apart; faster recovers
 * sooner from an estimate that came out low. 5 % was tried against 2 % (bench/ratelimit.ts, one
 * run each at load 6-7): no clear gain in the share of the limit reached, up to twice the 429s
 * per delivered with four relays (0.34 and 0.40 against 0.19 and 0.23).
 */
export const RATE_PROBE_GROWTH = 0.02;
/**
 * The probe speeds up the longer no 429 comes (CUBIC's convex part): its growth per second is
 * RATE_PROBE_GROWTH × (1 + t / RATE_PROBE_SPEEDUP_SECONDS) t seconds into it, 2 %, 4 %, 6 %... a
 * second, so the pace is multiplied by (1 + RATE_PROBE_GROWTH) to the power t + t² / 2. Near the
 * rate the last 429 came at it is as slow as before (2.6 % in its first second); a rate learnt too
 * low (four relays each seeing a part of the endpoint's successes) is left behind in seconds:
 * 0.8 of the limit back to it in 3.9 s, where 2 % a second took 11 s (bench/ratelimit.ts).
 */
export const RATE_PROBE_SPEEDUP_SECONDS = 1;
/**
 * After a 429, the pace climbs back by this share per second (fast) until it reaches
 * RATE_RECOVER_SHARE of the rate the 429 came at, and from there by RATE_PROBE_GROWTH (slow): the
 * concave-then-convex probing of TCP CUBIC, in two straight pieces. The 429 says the limit is near
 * the rate accepted just before it; climbing 2 % a second from 0.85 of it kept a 200/s backlog
 * below 0.9 of the limit for the 8 s the climb took (bench/ratelimit.ts), and a receiver whose
 * limit is below that rate answers 429 again, which sets both rates lower.
 */
export const RATE_RECOVERY_GROWTH = 0.3;
/**
 * The most one 429 lowers the rate it is taken to have come at, as a share of the pace then: as
 * TCP halves its window at most per loss. Several relays each see a part of the endpoint's
 * successes; one that saw few (four relays at 200/s: 16/s) took the pace from 239 to 54.
 */
export const RATE_MOST_DECREASE = 0.5;
/** The share of the rate a 429 came at that the fast climb goes back to. */
export const RATE_RECOVER_SHARE = 0.95;
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
 * everything after it: its fifth 429 in a row after a success holds. Half was tried: the share of
 * one relay's answers is noisy, and with four relays most seconds after a pace that overshot
 * held (200/s: ten seconds in a row, 63 % of the limit; 0.8: 75-88 % in three runs).
 */
export const RATE_REFUSING_SHARE = 0.8;
/** The lowest learnt rate (per second): an endpoint is never paced to a standstill. */
export const RATE_FLOOR_PER_SECOND = 0.1;
/** The window of successes the accepted rate is measured over (ms), and its shortest span. */
export const ACCEPTED_WINDOW_MS = 1000;
export const ACCEPTED_MIN_SPAN_MS = 250;
/** Fewer successes in the window than this say nothing about a rate: nothing is learnt from them. */
export const ACCEPTED_MIN_SAMPLE = 3;

/**
 * SQL: the rate the learnt rate of subscription row `s` has grown to at time `at`. With the rate
 * its 429 came at (`limited_at_rate_per_second`): the fast climb up to RATE_RECOVER_SHARE of that
 * rate, then the slow climb from there; the two pieces meet where the fast one reaches it, so the
 * pace is the lower of them. Without it (learnt before migration 029): the slow climb from the
 * learnt rate. NULL when nothing was learnt. The exponents are bounded (at 200 the slow climb is
 * 52 times where it started: no longer a limit in practice) so no power overflows.
 */
export const grownRate = (s: string, at: string) => {
  const seconds = `LEAST(200, GREATEST(0, extract(epoch FROM ${at} - ${s}.learned_at)))::float8`;
  const learned = `${s}.learned_rate_per_second`;
  // The probe's exponent x seconds into it: x + x² / (2 × RATE_PROBE_SPEEDUP_SECONDS), at most 200.
  const probed = (x: string) => `LEAST(200, (${x}) + (${x}) * (${x}) / ${2 * RATE_PROBE_SPEEDUP_SECONDS})`;
  const slow = `${learned} * power(${1 + RATE_PROBE_GROWTH}::float8, ${probed(seconds)})`;
  const target = `(${RATE_RECOVER_SHARE} * ${s}.limited_at_rate_per_second)`;
  // When the fast climb reaches the target (0 if the learnt rate is there already, at the floor).
  const reached = `GREATEST(0, ln(GREATEST(${target}, ${learned}) / ${learned}) / ln(${1 + RATE_RECOVERY_GROWTH}::float8))`;
  const fast = `${learned} * power(${1 + RATE_RECOVERY_GROWTH}::float8, ${seconds})`;
  const onward = `GREATEST(${target}, ${learned}) * power(${1 + RATE_PROBE_GROWTH}::float8, ${probed(`GREATEST(0, ${seconds} - ${reached})`)})`;
  return `(CASE WHEN ${s}.limited_at_rate_per_second IS NULL THEN ${slow} ELSE LEAST(${fast}, ${onward}) END)`;
};

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
  /** The 429s in the window. */
  limitedCount(subscriptionId: string, now: number): number;
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
    limitedCount: (id, now) => count(limited, id, now),
    forgetIdle(now) {
      for (const windows of [successes, limited]) {
        for (const [id, w] of windows) if ((w.times[w.times.length - 1] ?? -Infinity) < now - ACCEPTED_WINDOW_MS) windows.delete(id);
      }
    },
  };
}
