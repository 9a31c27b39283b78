import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  backoffCeilingSeconds, DEFAULT_RETRY_POLICY, InvalidRetryPolicyError, isExhausted, nextRetryDelaySeconds,
  parseRetryAfter, validateRetryPolicy, type RetryPolicy,
} from "../../shared/outbound/retryPolicy.js";

const policy: RetryPolicy = { baseSeconds: 5, capSeconds: 3600, maxAttempts: 10, retryAfterCapSeconds: 600 };

describe("retry policy", () => {
  it("documents defaults that validate and span about a day", () => {
    expect(validateRetryPolicy(DEFAULT_RETRY_POLICY)).toBe(DEFAULT_RETRY_POLICY);
    const ceilings = Array.from({ length: DEFAULT_RETRY_POLICY.maxAttempts - 1 }, (_, i) => backoffCeilingSeconds(DEFAULT_RETRY_POLICY, i + 1));
    expect(ceilings).toEqual([5, 20, 80, 320, 1280, 5120, 20480, 21600, 21600, 21600, 21600]);
    const longest = ceilings.reduce((a, b) => a + b, 0);
    expect(longest / 3600).toBeGreaterThan(24);
    expect(longest / 2 / 3600).toBeGreaterThan(12);
  });

  it("the first retry waits between half the base and the base", () => {
    expect(nextRetryDelaySeconds(policy, 1, null, () => 0)).toBe(2.5);
    expect(nextRetryDelaySeconds(policy, 1, null, () => 0.999999)).toBeCloseTo(5, 3);
  });

  it("ceilings grow monotonically and never pass the cap", () => {
    let previous = 0;
    for (let n = 1; n <= 200; n++) {
      const c = backoffCeilingSeconds(policy, n);
      expect(c).toBeGreaterThanOrEqual(previous);
      expect(c).toBeLessThanOrEqual(policy.capSeconds);
      previous = c;
    }
    expect(backoffCeilingSeconds(policy, 200)).toBe(policy.capSeconds);
    expect(Number.isFinite(backoffCeilingSeconds(policy, 1e9))).toBe(true);
  });

  it("jitter stays within [ceiling/2, ceiling] for any attempt and any random draw", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 60 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (n, r) => {
      const c = backoffCeilingSeconds(policy, n);
      const d = nextRetryDelaySeconds(policy, n, null, () => r);
      return d >= c / 2 - 0.001 && d <= c + 0.001;
    }));
  });

  it("jitter actually spreads delays (real Math.random)", () => {
    const draws = new Set(Array.from({ length: 50 }, () => nextRetryDelaySeconds(policy, 6, null)));
    expect(draws.size).toBeGreaterThan(10);
  });

  it("Retry-After replaces the backoff, capped above by retryAfterCapSeconds and below by 1 s", () => {
    expect(nextRetryDelaySeconds(policy, 1, 120, () => 0)).toBe(120);
    expect(nextRetryDelaySeconds(policy, 9, 30, () => 0)).toBe(30);
    expect(nextRetryDelaySeconds(policy, 1, 86_400)).toBe(600);
    expect(nextRetryDelaySeconds(policy, 1, 0)).toBe(1);
  });

  it("is exhausted at maxAttempts and not before", () => {
    expect(isExhausted(policy, 9)).toBe(false);
    expect(isExhausted(policy, 10)).toBe(true);
  });

  it.each([
    [{ baseSeconds: 0 }, /baseSeconds/],
    [{ capSeconds: 1 }, /capSeconds/],
    [{ maxAttempts: 0 }, /maxAttempts/],
    [{ maxAttempts: 2.5 }, /maxAttempts/],
    [{ retryAfterCapSeconds: Number.NaN }, /retryAfterCapSeconds/],
  ])("rejects %o", (patch, message) => {
    expect(() => validateRetryPolicy({ ...policy, ...patch })).toThrow(InvalidRetryPolicyError);
    expect(() => validateRetryPolicy({ ...policy, ...patch })).toThrow(message);
  });
});

describe("parseRetryAfter", () => {
  const now = new Date("2026-11-30T04:00:00Z");
  it.each([
    ["120", 120],
    [" 0 ", 0],
    ["Mon, 30 Nov 2026 04:01:30 GMT", 90],
    ["Monday, 30-Nov-26 04:00:10 GMT", 10],
    ["Mon Nov 30 04:00:05 2026", 5],
    ["Mon, 30 Nov 2026 03:00:00 GMT", 0],
  ])("%s → %s s", (header, seconds) => {
    expect(parseRetryAfter(header, now)).toBe(seconds);
  });

  it.each([[undefined], [""], ["-5"], ["1.5"], ["soon"], ["tomorrow at noon"], ["2026-11-30T04:01:00Z"]])("%s → null", (header) => {
    expect(parseRetryAfter(header, now)).toBeNull();
  });
  // HTTP dates are always GMT, written or not; a date without "GMT" was once read in the
  // process's local time zone. The zone is set here: that works in a process (vitest's forks pool)
  // and not in a worker thread, where the zone is the one the process started with (so the
  // mutation runner, which uses threads, is started with TZ=America/New_York).
  describe("a date without GMT, in a process whose local zone is not UTC", () => {
    const zone = process.env.TZ;
    beforeAll(() => { process.env.TZ = "America/New_York"; });
    afterAll(() => { if (zone === undefined) delete process.env.TZ; else process.env.TZ = zone; });

    it.for([
      ["Mon, 30 Nov 2026 04:01:30", 90],
      ["Monday, 30-Nov-26 04:00:10", 10],
      ["Mon Nov 30 04:00:05 2026", 5],
    ] as const)("%s → %s s", ([header, seconds], ctx) => {
      if (new Date("2026-11-30T04:00:00").getTimezoneOffset() === 0) ctx.skip("the local zone is UTC here and cannot be changed (worker thread)");
      expect(parseRetryAfter(header, now)).toBe(seconds);
    });
  });
});

// Issue 20 (mutation testing): every bound of the policy on both sides, and each Retry-After form.
describe("retry policy bounds", () => {
  it.each([
    ["baseSeconds", { baseSeconds: 0 }, "Retry policy baseSeconds must be a positive number of seconds."],
    ["baseSeconds", { baseSeconds: Number.POSITIVE_INFINITY, capSeconds: Number.POSITIVE_INFINITY }, "Retry policy baseSeconds must be a positive number of seconds."],
    ["capSeconds", { capSeconds: 4.999 }, "Retry policy capSeconds must be a number of seconds ≥ baseSeconds."],
    ["capSeconds", { capSeconds: Number.POSITIVE_INFINITY }, "Retry policy capSeconds must be a number of seconds ≥ baseSeconds."],
    ["maxAttempts", { maxAttempts: 0 }, "Retry policy maxAttempts must be an integer ≥ 1."],
    ["retryAfterCapSeconds", { retryAfterCapSeconds: 0.999 }, "Retry policy retryAfterCapSeconds must be a number of seconds ≥ 1."],
    ["retryAfterCapSeconds", { retryAfterCapSeconds: Number.POSITIVE_INFINITY }, "Retry policy retryAfterCapSeconds must be a number of seconds ≥ 1."],
  ])("refuses a bad %s (%o) with a message naming it", (_field, patch, message) => {
    let error: unknown;
    try { validateRetryPolicy({ ...policy, ...patch }); } catch (e) { error = e; }
    expect(error).toBeInstanceOf(InvalidRetryPolicyError);
    expect((error as Error).name).toBe("InvalidRetryPolicyError");
    expect((error as Error).message).toBe(message);
  });

  it.each([
    [{ capSeconds: 5 }],
    [{ maxAttempts: 1 }],
    [{ retryAfterCapSeconds: 1 }],
    [{ baseSeconds: 0.001, capSeconds: 0.001 }],
  ])("accepts each bound itself: %o", (patch) => {
    const p = { ...policy, ...patch };
    expect(validateRetryPolicy(p)).toBe(p);
  });

  it("a Retry-After that is not a finite number leaves the backoff in charge", () => {
    expect(nextRetryDelaySeconds(policy, 1, Number.NaN, () => 0)).toBe(2.5);
    expect(nextRetryDelaySeconds(policy, 2, Number.POSITIVE_INFINITY, () => 0)).toBe(10);
  });
});

describe("parseRetryAfter, each form and its edges", () => {
  const now = new Date("2026-11-30T04:00:00Z");
  it.each([
    // IMF-fixdate without its comma, and with extra spaces before the day.
    ["Mon 30 Nov 2026 04:01:30 GMT", 90],
    ["Mon,  30 Nov 2026 04:01:30 GMT", 90],
    // asctime pads a one-digit day with a space.
    ["Tue Dec  1 04:00:05 2026", 86_405],
    ["Tue Dec 1 04:00:05 2026", 86_405],
    // Only a trailing GMT is a zone: the day name is not checked, and "GMT" there is not one.
    ["GMT, 30 Nov 2026 04:01:30", 90],
  ])("%s → %s s", (header, seconds) => {
    expect(parseRetryAfter(header, now)).toBe(seconds);
  });

  it.each([
    // Text around a date: Date.parse would read each of these.
    ["at Mon, 30 Nov 2026 04:01:30 GMT"],
    ["Mon, 30 Nov 2026 04:01:30 PM"],
    ["at Mon Nov 30 04:00:05 2026"],
    ["Mon Nov 30 04:00:05 2026 PM"],
    // Numbers JavaScript reads that are not delay-seconds.
    ["1e3"],
    ["0x10"],
    ["120 s"],
    ["99999999999999999999"],
    // The right shape, not a date.
    ["Mon, 30 Foo 2026 04:01:30 GMT"],
    ["Mon, 32 Nov 2026 04:01:30 GMT"],
    ["   "],
  ])("%s → null", (header) => {
    expect(parseRetryAfter(header, now)).toBeNull();
  });
});
