/**
 * When to try a failed delivery again. Capped exponential backoff with "equal jitter": the n-th
 * retry waits a uniformly random time in [c/2, c] where c = min(cap, base × 4^(n−1)). Half the
 * ceiling is fixed, so the schedule keeps its shape (a receiver that is down for an hour is not
 * hammered by retries that happened to draw near zero); the other half is random, so deliveries
 * that failed together (an outage) do not come back together. A `Retry-After` from the receiver
 * replaces the backoff, bounded by `retryAfterCapSeconds` so a receiver cannot park a delivery
 * for a month, and by 1 s below so it cannot make us spin.
 */

/** Retry settings; a subscription may override any of them. */
export interface RetryPolicy {
  /** Ceiling of the first retry's delay, in seconds. Default: 5. */
  baseSeconds: number;
  /** Largest ceiling of any backoff delay, in seconds. Default: 21600 (6 h). */
  capSeconds: number;
  /** Attempts in all, the first included; after the last failure the delivery is a dead letter. Default: 12. */
  maxAttempts: number;
  /** Largest delay a `Retry-After` header can impose, in seconds. Default: 3600 (1 h). */
  retryAfterCapSeconds: number;
  /**
   * How long a delivery may keep being answered 429 before it is a dead letter, in seconds from the
   * first 429 of the run (a 429 spends no attempt: the receiver is metering us, not failing).
   * Default: DEFAULT_RATE_LIMITED_FOR_SECONDS (86 400: a day, about the span of the default schedule).
   */
  rateLimitedForSeconds?: number;
}

/** A receiver that answers 429 for this long (one delivery's run of 429s) gets a dead letter: a day. */
export const DEFAULT_RATE_LIMITED_FOR_SECONDS = 86_400;

/** Growth factor of the backoff ceiling per attempt. 4 rather than 2, so 12 attempts span about a day. */
export const BACKOFF_FACTOR = 4;

/**
 * The defaults. Ceilings of the 11 retries, in seconds: 5, 20, 80, 320, 1280, 5120, 20480,
 * then 21600 × 4. With jitter the last attempt happens between ~15.8 h and ~31.6 h after the first
 * (mean ~1 day): long enough to ride out an overnight outage, short enough to alert the same day.
 */
export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  baseSeconds: 5,
  capSeconds: 6 * 3600,
  maxAttempts: 12,
  retryAfterCapSeconds: 3600,
});

/** A policy with a value out of range (non-finite, negative, attempts < 1, base > cap). */
export class InvalidRetryPolicyError extends Error {
  override name = "InvalidRetryPolicyError";
}

/** Throws InvalidRetryPolicyError naming the bad field; returns the policy otherwise. */
export function validateRetryPolicy(policy: RetryPolicy): RetryPolicy {
  const { baseSeconds, capSeconds, maxAttempts, retryAfterCapSeconds } = policy;
  const bad = (field: string, want: string) => new InvalidRetryPolicyError(`Retry policy ${field} must be ${want}.`);
  if (!(Number.isFinite(baseSeconds) && baseSeconds > 0)) throw bad("baseSeconds", "a positive number of seconds");
  if (!(Number.isFinite(capSeconds) && capSeconds >= baseSeconds)) throw bad("capSeconds", "a number of seconds ≥ baseSeconds");
  if (!(Number.isInteger(maxAttempts) && maxAttempts >= 1)) throw bad("maxAttempts", "an integer ≥ 1");
  if (!(Number.isFinite(retryAfterCapSeconds) && retryAfterCapSeconds >= 1)) throw bad("retryAfterCapSeconds", "a number of seconds ≥ 1");
  const limitedFor = policy.rateLimitedForSeconds;
  if (limitedFor !== undefined && !(Number.isFinite(limitedFor) && limitedFor >= 0)) throw bad("rateLimitedForSeconds", "a number of seconds ≥ 0");
  return policy;
}

/** The backoff ceiling after attempt `attemptNumber` (1-based) failed, in seconds. */
export function backoffCeilingSeconds(policy: RetryPolicy, attemptNumber: number): number {
  const n = Math.max(1, Math.floor(attemptNumber));
  // Exponent clamped so the power never overflows to Infinity for absurd attempt numbers.
  const grown = policy.baseSeconds * BACKOFF_FACTOR ** Math.min(n - 1, 64);
  return Math.min(policy.capSeconds, grown);
}

/** True when the attempt that just failed was the last one the policy allows. */
export function isExhausted(policy: RetryPolicy, attemptNumber: number): boolean {
  return attemptNumber >= policy.maxAttempts;
}

/**
 * Seconds to wait before the next attempt, after attempt `attemptNumber` (1-based) failed.
 * Whether a next attempt is allowed at all is `isExhausted`'s question, not this function's.
 * @param retryAfterSeconds the receiver's `Retry-After` (see `parseRetryAfter`), or null.
 * @param random a source of [0, 1) numbers; injectable so tests can pin the jitter.
 * @example nextRetryDelaySeconds(DEFAULT_RETRY_POLICY, 1, null) // between 2.5 and 5
 */
export function nextRetryDelaySeconds(
  policy: RetryPolicy,
  attemptNumber: number,
  retryAfterSeconds: number | null,
  random: () => number = Math.random,
): number {
  // `!== null` is for the type checker: Number.isFinite(null) is false already (the mutant making
  // it `true` survives as equivalent, docs/testing.md).
  if (retryAfterSeconds !== null && Number.isFinite(retryAfterSeconds)) {
    return Math.min(policy.retryAfterCapSeconds, Math.max(1, retryAfterSeconds));
  }
  const ceiling = backoffCeilingSeconds(policy, attemptNumber);
  const r = Math.min(Math.max(random(), 0), 1);
  // Millisecond precision: enough for a schedule, and stable when stored as an interval.
  return Math.round((ceiling / 2 + (ceiling / 2) * r) * 1000) / 1000;
}

/**
 * Parses a `Retry-After` header: delay-seconds (`120`) or an HTTP-date
 * (`Wed, 21 Oct 2015 07:28:00 GMT`), relative to `now`. Returns whole seconds ≥ 0, or null when
 * the header is absent or unparseable (then the backoff applies).
 */
export function parseRetryAfter(header: string | undefined, now: Date = new Date()): number | null {
  if (header === undefined) return null;
  // An empty header matches neither form below, so it needs no test of its own.
  const text = header.trim();
  if (/^\d+$/.test(text)) {
    const seconds = Number(text);
    return Number.isSafeInteger(seconds) ? seconds : null;
  }
  // Only the date shapes HTTP allows (IMF-fixdate and the two obsolete ones), never free text
  // that Date.parse would happily guess at.
  if (!/^[A-Za-z]{3,9},? +\d{1,2}[ -][A-Za-z]{3}[ -]\d{2,4} \d{2}:\d{2}:\d{2}( GMT)?$|^[A-Za-z]{3} [A-Za-z]{3} +\d{1,2} \d{2}:\d{2}:\d{2} \d{4}$/.test(text)) {
    return null;
  }
  // HTTP dates are GMT whether or not they say so; Date.parse reads a date without a zone as local time.
  const at = Date.parse(text.endsWith("GMT") ? text : `${text} GMT`);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - now.getTime()) / 1000));
}
