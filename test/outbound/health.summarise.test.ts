/**
 * summariseHealth folds one relay batch's completions into one health update per subscription
 * (several completions of one subscription often finish in the same batch); throttleOf says how
 * long an answer asks us to leave the endpoint alone. Pure, so tested as tables of batches.
 */
import { describe, expect, it } from "vitest";
import { RATE_REFUSING_SHARE } from "../../shared/outbound/acceptedRate.js";
import { summariseHealth, throttleOf, type HealthUpdate } from "../../shared/outbound/health.js";
import type { DeliveryOutcome } from "../../shared/outbound/transport.js";
import type { Completion, Decision } from "../../shared/outbound/types.js";

type Kind = "ok" | "fail" | "gone" | "okProbe" | "failProbe";

function completion(subscriptionId: string, kind: Kind, patch: { outcome?: Partial<DeliveryOutcome>; decision?: Partial<Decision> } = {}): Completion {
  const result: DeliveryOutcome["result"] = kind.startsWith("ok") ? "delivered" : kind === "gone" ? "gone" : "retryable";
  const status = result === "delivered" ? 200 : result === "gone" ? 410 : 503;
  return {
    delivery: {
      id: `e:${subscriptionId}`, eventId: "e", subscriptionId, url: "https://example.com/", secrets: [], body: "{}",
      attempts: 0, maxAttempts: null, leaseToken: "t", probe: kind.endsWith("Probe"),
    },
    outcome: { result, status, latencyMs: 1, errorClass: result === "delivered" ? null : "http_status", responseExcerpt: null, retryAfterSeconds: null, ...patch.outcome },
    decision: { status: result === "delivered" ? "delivered" : "pending", delaySeconds: result === "delivered" ? 0 : 7, deadReason: null, counted: true, ...patch.decision },
  };
}

const batch = (sub: string, ...kinds: Kind[]) => kinds.map((k) => completion(sub, k));
const update = (subscriptionId: string, patch: Partial<HealthUpdate>): HealthUpdate => ({
  subscriptionId, succeeded: false, failures: 0, gone: false, throttleSeconds: 0, probeSucceeded: false, rateLimited: false, acceptedPerSecond: null, statedPerSecond: null, limitedShare: null, ...patch,
});

describe("summariseHealth", () => {
  it("an empty batch updates nothing", () => {
    expect(summariseHealth([])).toEqual([]);
  });

  it.each([
    // [completions of one subscription, in the order they finished; the update]
    [["ok"], { succeeded: true }],
    [["fail"], { failures: 1 }],
    [["fail", "fail", "fail"], { failures: 3 }],
    [["ok", "ok"], { succeeded: true }],
    // Failures after the last success count; those before it are wiped by it.
    [["fail", "fail", "ok"], { succeeded: true, failures: 0 }],
    [["fail", "ok", "fail", "fail"], { succeeded: true, failures: 2 }],
    [["ok", "fail"], { succeeded: true, failures: 1 }],
    // A 410 is a failure that disables; a later success in the same batch clears it, an earlier one does not.
    [["gone"], { failures: 1, gone: true }],
    [["gone", "ok"], { succeeded: true, failures: 0, gone: false }],
    [["ok", "gone"], { succeeded: true, failures: 1, gone: true }],
    [["gone", "fail"], { failures: 2, gone: true }],
    // Only a probe's success closes an open circuit; a normal success in flight when it opened does not.
    [["okProbe"], { succeeded: true, probeSucceeded: true }],
    [["ok", "failProbe"], { succeeded: true, failures: 1 }],
    [["okProbe", "fail"], { succeeded: true, probeSucceeded: true, failures: 1 }],
    [["failProbe"], { failures: 1 }],
  ] as Array<[Kind[], Partial<HealthUpdate>]>)("%j → %o", (kinds, patch) => {
    expect(summariseHealth(batch("s1", ...kinds))).toEqual([update("s1", patch)]);
  });

  // Issue 30: a transformation that failed or skipped the delivery sent nothing: the endpoint was
  // not contacted, so neither a failure nor a success (a skipped probe never closes the circuit).
  const failedTransformation = (sub: string, probe = false) => {
    const c = completion(sub, probe ? "failProbe" : "fail", { outcome: { result: "permanent", status: null, errorClass: "transformation_failed", responseExcerpt: "threw Error: x" }, decision: { status: "dead", delaySeconds: 0, deadReason: "permanent failure: transformation_failed (…)" } });
    return c;
  };
  const skipped = (sub: string, probe = false) =>
    completion(sub, probe ? "okProbe" : "ok", { outcome: { result: "delivered", status: null, errorClass: "skipped_by_transformation", responseExcerpt: "not sent: …" } });
  it.each([
    ["a failed transformation alone", [failedTransformation("s1")], []],
    ["a skip alone", [skipped("s1")], []],
    ["a skipped probe", [skipped("s1", true)], []],
    ["a failed transformation's probe", [failedTransformation("s1", true)], []],
    ["failures, then a skip: the failures stand", [...batch("s1", "fail", "fail"), skipped("s1")], [update("s1", { failures: 2 })]],
    ["a success, then failed transformations: still a success with no failure after it", [...batch("s1", "ok"), failedTransformation("s1"), failedTransformation("s1")], [update("s1", { succeeded: true })]],
    ["a skipped probe beside a failure: no probe success", [skipped("s1", true), ...batch("s1", "fail")], [update("s1", { failures: 1 })]],
  ] as Array<[string, Completion[], HealthUpdate[]]>)("a delivery not sent (%s) is neither a failure nor a success", (_, completions, expected) => {
    expect(summariseHealth(completions)).toEqual(expected);
  });

  it("keeps subscriptions apart, one update each, in the order each first finished", () => {
    const mixed = [completion("a", "fail"), completion("b", "ok"), completion("a", "fail"), completion("c", "gone"), completion("b", "fail"), completion("a", "ok")];
    expect(summariseHealth(mixed)).toEqual([
      update("a", { succeeded: true, failures: 0 }),
      update("b", { succeeded: true, failures: 1 }),
      update("c", { failures: 1, gone: true }),
    ]);
  });

  it("the throttle is the longest any completion of the subscription asked for, whatever came after it", () => {
    const asked = (sub: string, seconds: number | null, status = 503) =>
      completion(sub, "fail", { outcome: { status, retryAfterSeconds: seconds }, decision: { delaySeconds: seconds ?? 7 } });
    const updates = summariseHealth([asked("a", 30), asked("a", 5), completion("a", "ok"), asked("b", null, 429), asked("b", null), asked("c", 2), asked("c", 9)]);
    expect(updates.map((u) => [u.subscriptionId, u.throttleSeconds])).toEqual([["a", 30], ["b", 1], ["c", 9]]);
  });

  it("a 429 that teaches no rate (a paced endpoint, too few 429s seen) still holds as asked, and learns nothing", () => {
    const limited = (teaches: boolean | undefined, acceptedPerSecond: number) => ({
      ...completion("a", "fail", { outcome: { status: 429, retryAfterSeconds: 2 }, decision: { delaySeconds: 2 } }),
      acceptedPerSecond, limitedShare: 0.9, ...(teaches === undefined ? {} : { teaches }),
    });
    expect(summariseHealth([limited(false, 40)])).toEqual([update("a", { throttleSeconds: 2 })]);
    expect(summariseHealth([limited(false, 40), limited(undefined, 30), limited(true, 20)]))
      .toEqual([update("a", { throttleSeconds: 2, rateLimited: true, acceptedPerSecond: 30, limitedShare: 0.9 })]);
  });
});

describe("throttleOf", () => {
  it.each([
    ["a success, even with a Retry-After", completion("s", "ok", { outcome: { retryAfterSeconds: 30 } }), 0],
    ["a 503 without Retry-After (the backoff is the delivery's, not the endpoint's)", completion("s", "fail"), 0],
    ["a 429 without Retry-After", completion("s", "fail", { outcome: { status: 429 } }), 1],
    ["a 429 with Retry-After: the delay the retry policy bounded it to", completion("s", "fail", { outcome: { status: 429, retryAfterSeconds: 9000 }, decision: { delaySeconds: 3600 } }), 3600],
    ["a 503 with Retry-After", completion("s", "fail", { outcome: { retryAfterSeconds: 12 }, decision: { delaySeconds: 12 } }), 12],
    ["a Retry-After of 0, raised to the policy's 1 s", completion("s", "fail", { outcome: { retryAfterSeconds: 0 }, decision: { delaySeconds: 1 } }), 1],
    ["no response at all", completion("s", "fail", { outcome: { status: null, errorClass: "timeout" } }), 0],
  ])("%s → %s s", (_what, c, seconds) => {
    expect(throttleOf(c)).toBe(seconds);
  });
});

describe("DEFAULT_HEALTH_POLICY", () => {
  it("is the documented one: degraded after 5 failures, open after 20 lasting 30 s, a probe a minute", async () => {
    const { DEFAULT_HEALTH_POLICY } = await import("../../shared/outbound/health.js");
    expect(DEFAULT_HEALTH_POLICY).toEqual({ degradeAfter: 5, disableAfter: 20, probeIntervalSeconds: 60, openAfterSeconds: 30 });
  });

  it("a 429 holds the endpoint only when the receiver refuses most requests, or a limit configured here was broken", () => {
    const limited = (sub: string, limitedShare: number | undefined, slot: Completion["delivery"]["slot"] = null, spent = false) => {
      const c = completion(sub, "fail", {
        outcome: { status: 429, retryAfterSeconds: 3, ...(spent ? { rateLimit: { remaining: 0, resetSeconds: 5, quotaPerSecond: null } } : {}) },
        decision: { delaySeconds: 3 },
      });
      return { ...c, delivery: { ...c.delivery, slot }, ...(limitedShare === undefined ? {} : { limitedShare }) };
    };
    const updates = summariseHealth([
      // Metering: a 429 among successes lately (up to RATE_REFUSING_SHARE of the answers); the
      // pace comes down, nothing is held.
      limited("metering", 0.02), limited("metering", RATE_REFUSING_SHARE, { at: 0, latest: 0 }),
      // Refusing: nearly all answers lately were 429s.
      limited("refusing", 0.02), limited("refusing", RATE_REFUSING_SHARE + 0.01),
      // A stated "quota spent, resets in 5 s" holds, metering or not.
      limited("spent", 0.02, null, true),
      // A configured limit's slot is kept strictly: its 429 holds whatever the share.
      limited("strict", 0.02, { at: 0, latest: 0, strict: true }),
      // No share known (a completion written by older code): held, as before.
      limited("unknown", undefined),
    ]);
    expect(updates.map((u) => [u.subscriptionId, u.throttleSeconds])).toEqual([
      ["metering", 0], ["refusing", 3], ["spent", 5], ["strict", 3], ["unknown", 3],
    ]);
  });
});
