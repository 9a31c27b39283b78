/** What an attempt's outcome means for its delivery: delivered, retried later, or dead. Pure. */
import type { RetryPolicy } from "./retryPolicy.js";
import { DEFAULT_RATE_LIMITED_FOR_SECONDS, nextRetryDelaySeconds } from "./retryPolicy.js";
import type { DeliveryOutcome } from "./transport.js";
import type { ClaimedDelivery, Decision } from "./types.js";

/** What a refused destination's dead letter says: the setting that allows it (a local receiver needs it). */
export const DESTINATION_REFUSED_HINT = "the URL's address is private, loopback or internal; to deliver there, add its host to ALLOWED_DESTINATIONS, restart, then replay the dead letter";

function describe(outcome: DeliveryOutcome): string {
  if (outcome.status !== null) return `HTTP ${outcome.status}`;
  if (outcome.errorClass === "destination_refused") return `destination_refused (${DESTINATION_REFUSED_HINT})`;
  if (outcome.errorClass === "transformation_failed") return `transformation_failed (the subscription's transformation ${outcome.responseExcerpt ?? "failed"})`;
  return outcome.errorClass ?? "no response";
}

/**
 * - 2xx: delivered.
 * - permanent (4xx other than 408/425/429/410, refused destination): dead at once, with the reason.
 * - 410 Gone: kept pending (its subscription is disabled by the health update; `enable` resumes it).
 * - retryable: retried after the policy's backoff (Retry-After honoured within its bound) until the
 *   maximum of attempts, then dead ("exhausted"). A probe's failure is not counted: while an endpoint
 *   is disabled its deliveries are kept, not worn out.
 * - 429: the receiver is metering us, not failing: retried after its Retry-After (or the backoff of
 *   the attempts so far), not counted, until the delivery has been answered 429 for the policy's
 *   `rateLimitedForSeconds` (from its first 429 of the run, `rateLimitedSince`): then dead
 *   ("rate limited"), so a receiver that 429s forever still ends in a dead letter.
 * @param now the clock (ms, Unix epoch) `rateLimitedSince` is compared with; injectable for tests.
 */
export function decideNext(delivery: ClaimedDelivery, outcome: DeliveryOutcome, policy: RetryPolicy, random?: () => number, now: number = Date.now()): Decision {
  const attemptNumber = delivery.attempts + 1;
  switch (outcome.result) {
    case "delivered":
      return { status: "delivered", delaySeconds: 0, deadReason: null, counted: true };
    case "permanent":
      return { status: "dead", delaySeconds: 0, deadReason: `permanent failure: ${describe(outcome)}`, counted: true };
    case "gone":
      return { status: "pending", delaySeconds: nextRetryDelaySeconds(policy, attemptNumber, null, random), deadReason: null, counted: !delivery.probe };
    case "retryable": {
      if (delivery.probe) {
        return { status: "pending", delaySeconds: nextRetryDelaySeconds(policy, Math.max(1, delivery.attempts), outcome.retryAfterSeconds, random), deadReason: null, counted: false };
      }
      if (outcome.status === 429) {
        const limitedFor = delivery.rateLimitedSince == null ? 0 : (now - delivery.rateLimitedSince) / 1000;
        const bound = policy.rateLimitedForSeconds ?? DEFAULT_RATE_LIMITED_FOR_SECONDS;
        if (limitedFor >= bound) {
          return { status: "dead", delaySeconds: 0, deadReason: `rate limited: answered 429 for ${Math.round(limitedFor)} s (bound ${bound} s)`, counted: true };
        }
        return { status: "pending", delaySeconds: nextRetryDelaySeconds(policy, Math.max(1, delivery.attempts), outcome.retryAfterSeconds, random), deadReason: null, counted: false };
      }
      const max = delivery.maxAttempts ?? policy.maxAttempts;
      if (attemptNumber >= max) {
        return { status: "dead", delaySeconds: 0, deadReason: `exhausted: ${attemptNumber} attempt${attemptNumber === 1 ? "" : "s"}, last ${describe(outcome)}`, counted: true };
      }
      return {
        status: "pending",
        delaySeconds: nextRetryDelaySeconds(policy, attemptNumber, outcome.retryAfterSeconds, random),
        deadReason: null,
        counted: true,
      };
    }
  }
}
