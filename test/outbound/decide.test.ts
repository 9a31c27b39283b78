/**
 * decideNext, the pure step from an attempt's outcome to its delivery's fate: delivered, retried
 * later, or a dead letter (and why). A mistake here loses or wears out deliveries, so each outcome
 * is tested at the attempt limit's edges, for normal attempts and probes.
 */
import { describe, expect, it } from "vitest";
import { decideNext, DESTINATION_REFUSED_HINT } from "../../shared/outbound/decide.js";
import { DEFAULT_RATE_LIMITED_FOR_SECONDS } from "../../shared/outbound/retryPolicy.js";
import type { RetryPolicy } from "../../shared/outbound/retryPolicy.js";
import type { DeliveryOutcome } from "../../shared/outbound/transport.js";
import type { ClaimedDelivery } from "../../shared/outbound/types.js";

const policy: RetryPolicy = { baseSeconds: 4, capSeconds: 1000, maxAttempts: 3, retryAfterCapSeconds: 60 };
/** The jitter pinned at its low end: a delay is half its ceiling (base × 4^(n−1)). */
const low = () => 0;

function delivery(patch: Partial<ClaimedDelivery> = {}): ClaimedDelivery {
  return {
    id: "e1:s1", eventId: "e1", subscriptionId: "s1", url: "https://example.com/hook", secrets: [], body: "{}",
    attempts: 0, maxAttempts: null, leaseToken: "t", probe: false, ...patch,
  };
}

function outcome(result: DeliveryOutcome["result"], patch: Partial<DeliveryOutcome> = {}): DeliveryOutcome {
  return { result, status: null, latencyMs: 5, errorClass: null, responseExcerpt: null, retryAfterSeconds: null, ...patch };
}

const ok = outcome("delivered", { status: 200 });
const unavailable = outcome("retryable", { status: 503, errorClass: "http_status" });
const gone = outcome("gone", { status: 410, errorClass: "http_status" });

describe("decideNext", () => {
  it.each([
    ["a first attempt", delivery()],
    ["the last attempt", delivery({ attempts: 2 })],
    ["a probe", delivery({ attempts: 7, probe: true })],
  ])("2xx on %s: delivered, counted", (_what, d) => {
    expect(decideNext(d, ok, policy, low)).toEqual({ status: "delivered", delaySeconds: 0, deadReason: null, counted: true });
  });

  it.each([
    [outcome("permanent", { status: 400, errorClass: "http_status" }), "permanent failure: HTTP 400"],
    [outcome("permanent", { errorClass: "destination_refused" }), `permanent failure: destination_refused (${DESTINATION_REFUSED_HINT})`],
    [outcome("permanent", { errorClass: "redirect_refused", status: null }), "permanent failure: redirect_refused"],
    [outcome("permanent"), "permanent failure: no response"],
  ])("a permanent failure is dead at once, with its reason: %o", (o, reason) => {
    for (const d of [delivery(), delivery({ probe: true, attempts: 5 })]) {
      expect(decideNext(d, o, policy, low)).toEqual({ status: "dead", delaySeconds: 0, deadReason: reason, counted: true });
    }
  });

  it("a retryable failure before the last attempt is retried after the backoff of its attempt number", () => {
    expect(decideNext(delivery({ attempts: 0 }), unavailable, policy, low)).toEqual({ status: "pending", delaySeconds: 2, deadReason: null, counted: true });
    expect(decideNext(delivery({ attempts: 1 }), unavailable, policy, low)).toEqual({ status: "pending", delaySeconds: 8, deadReason: null, counted: true });
    expect(decideNext(delivery({ attempts: 1 }), unavailable, policy, () => 0.5).delaySeconds).toBe(12);
  });

  it("a retryable failure honours Retry-After within its bound", () => {
    const throttled = (s: number) => outcome("retryable", { status: 429, errorClass: "http_status", retryAfterSeconds: s });
    expect(decideNext(delivery(), throttled(30), policy, low).delaySeconds).toBe(30);
    expect(decideNext(delivery(), throttled(3600), policy, low).delaySeconds).toBe(60);
  });

  it.each([
    // [attempts already counted, the subscription's own maximum, expected]
    [1, null, "pending"],
    [2, null, "dead"],
    [5, null, "dead"],
    [2, 4, "pending"],
    [3, 4, "dead"],
    [0, 1, "dead"],
  ] as const)("after %s attempts (own maximum %s) a retryable failure is %s", (attempts, maxAttempts, status) => {
    expect(decideNext(delivery({ attempts, maxAttempts }), unavailable, policy, low).status).toBe(status);
  });

  it("an exhausted delivery's reason counts its attempts and names the last failure", () => {
    expect(decideNext(delivery({ attempts: 2 }), unavailable, policy, low)).toEqual({
      status: "dead", delaySeconds: 0, deadReason: "exhausted: 3 attempts, last HTTP 503", counted: true,
    });
    expect(decideNext(delivery({ maxAttempts: 1 }), outcome("retryable", { errorClass: "timeout" }), policy, low).deadReason)
      .toBe("exhausted: 1 attempt, last timeout");
    expect(decideNext(delivery({ attempts: 2 }), outcome("retryable"), policy, low).deadReason).toBe("exhausted: 3 attempts, last no response");
  });

  it("a probe's retryable failure is never a dead letter and is not counted; it waits the backoff of the attempts so far", () => {
    for (const attempts of [0, 1, 2, 3, 50]) {
      const d = decideNext(delivery({ attempts, probe: true }), unavailable, policy, low);
      expect(d).toMatchObject({ status: "pending", deadReason: null, counted: false });
    }
    expect(decideNext(delivery({ attempts: 0, probe: true }), unavailable, policy, low).delaySeconds).toBe(2);
    expect(decideNext(delivery({ attempts: 1, probe: true }), unavailable, policy, low).delaySeconds).toBe(2);
    expect(decideNext(delivery({ attempts: 3, probe: true }), unavailable, policy, low).delaySeconds).toBe(32);
    const throttled = outcome("retryable", { status: 429, errorClass: "http_status", retryAfterSeconds: 45 });
    expect(decideNext(delivery({ attempts: 3, probe: true }), throttled, policy, low).delaySeconds).toBe(45);
  });

  // 410 Gone disables the subscription (health.ts); its deliveries are kept for `enable`, even when
  // the 410 came on the last attempt: a dead letter "exhausted" would misname it, and the operator
  // who re-enables the endpoint expects its deliveries to resume.
  it("410 Gone keeps the delivery pending, on the last attempt too, with the backoff (Retry-After ignored)", () => {
    for (const attempts of [0, 2, 9]) {
      const d = decideNext(delivery({ attempts }), { ...gone, retryAfterSeconds: 50 }, policy, low);
      expect(d).toEqual({ status: "pending", delaySeconds: Math.min(1000, 4 * 4 ** attempts) / 2, deadReason: null, counted: true });
    }
  });

  it("a probe's 410 is not counted", () => {
    expect(decideNext(delivery({ attempts: 2, probe: true }), gone, policy, low)).toEqual({ status: "pending", delaySeconds: 32, deadReason: null, counted: false });
  });

  it("a refused destination's reason names the setting that allows it", () => {
    expect(DESTINATION_REFUSED_HINT).toMatch(/add its host to ALLOWED_DESTINATIONS, restart, then replay/);
  });

  it("a failed transformation is dead at once, with the transformation's own reason or a plain 'failed'", () => {
    const failed = (excerpt: string | null) => outcome("permanent", { errorClass: "transformation_failed", responseExcerpt: excerpt });
    expect(decideNext(delivery(), failed("threw: boom"), policy, low).deadReason).toBe("permanent failure: transformation_failed (the subscription's transformation threw: boom)");
    expect(decideNext(delivery(), failed(null), policy, low).deadReason).toBe("permanent failure: transformation_failed (the subscription's transformation failed)");
  });

  // A 429 meters, it does not fail: no attempt is spent, however many came before, until the
  // delivery has been answered 429 for rateLimitedForSeconds.
  describe("429 Too Many Requests", () => {
    const now = 1_000_000_000_000;
    const tooMany = (retryAfterSeconds: number | null = null) => outcome("retryable", { status: 429, errorClass: "http_status", retryAfterSeconds });
    const limitedFor = (seconds: number) => now - seconds * 1000;

    it("is retried and not counted, on the last attempt and past it", () => {
      for (const attempts of [0, 2, 9]) {
        expect(decideNext(delivery({ attempts, rateLimitedSince: limitedFor(10) }), tooMany(), policy, low, now))
          .toMatchObject({ status: "pending", deadReason: null, counted: false });
      }
    });

    it("waits its Retry-After within the bound, else the backoff of the attempts so far", () => {
      expect(decideNext(delivery({ attempts: 5 }), tooMany(7), policy, low, now).delaySeconds).toBe(7);
      expect(decideNext(delivery({ attempts: 5 }), tooMany(3600), policy, low, now).delaySeconds).toBe(60);
      expect(decideNext(delivery({ attempts: 0 }), tooMany(), policy, low, now).delaySeconds).toBe(2);
      expect(decideNext(delivery({ attempts: 1 }), tooMany(), policy, low, now).delaySeconds).toBe(2);
      expect(decideNext(delivery({ attempts: 3 }), tooMany(), policy, low, now).delaySeconds).toBe(32);
    });

    it("is dead once answered 429 for the policy's rateLimitedForSeconds, not a moment before", () => {
      const bounded: RetryPolicy = { ...policy, rateLimitedForSeconds: 600 };
      expect(decideNext(delivery({ rateLimitedSince: limitedFor(599.9) }), tooMany(), bounded, low, now).status).toBe("pending");
      expect(decideNext(delivery({ rateLimitedSince: limitedFor(600) }), tooMany(), bounded, low, now)).toEqual({
        status: "dead", delaySeconds: 0, deadReason: "rate limited: answered 429 for 600 s (bound 600 s)", counted: true,
      });
      expect(decideNext(delivery({ rateLimitedSince: limitedFor(1234.4) }), tooMany(), bounded, low, now).deadReason).toBe("rate limited: answered 429 for 1234 s (bound 600 s)");
    });

    it("a first 429 (no rateLimitedSince yet) is never dead; without a policy bound the default applies", () => {
      expect(decideNext(delivery({ rateLimitedSince: null }), tooMany(), { ...policy, rateLimitedForSeconds: 0 }, low, now).status).toBe("dead");
      expect(decideNext(delivery({ rateLimitedSince: null }), tooMany(), { ...policy, rateLimitedForSeconds: 1 }, low, now).status).toBe("pending");
      expect(decideNext(delivery({ rateLimitedSince: limitedFor(DEFAULT_RATE_LIMITED_FOR_SECONDS - 1) }), tooMany(), policy, low, now).status).toBe("pending");
      expect(decideNext(delivery({ rateLimitedSince: limitedFor(DEFAULT_RATE_LIMITED_FOR_SECONDS) }), tooMany(), policy, low, now).deadReason)
        .toBe(`rate limited: answered 429 for ${DEFAULT_RATE_LIMITED_FOR_SECONDS} s (bound ${DEFAULT_RATE_LIMITED_FOR_SECONDS} s)`);
    });
  });
});
