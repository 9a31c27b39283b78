/** What an attempt's outcome means for its delivery: delivered, retried later, or dead. Pure. */
import type { RetryPolicy } from "./retryPolicy.js";
import { nextRetryDelaySeconds } from "./retryPolicy.js";
import type { DeliveryOutcome } from "./transport.js";
import type { ClaimedDelivery, Decision } from "./types.js";

function describe(outcome: DeliveryOutcome): string {
  if (outcome.status !== null) return `HTTP ${outcome.status}`;
  return outcome.errorClass ?? "no response";
}

/**
 * - 2xx: delivered.
 * - permanent (4xx other than 408/425/429/410, refused destination): dead at once, with the reason.
 * - 410 Gone: kept pending (its subscription is disabled by the health update; `enable` resumes it).
 * - retryable: retried after the policy's backoff (Retry-After honoured within its bound) until the
 *   maximum of attempts, then dead ("exhausted"). A probe's failure is not counted: while an endpoint
 *   is disabled its deliveries are kept, not worn out.
 */
export function decideNext(delivery: ClaimedDelivery, outcome: DeliveryOutcome, policy: RetryPolicy, random?: () => number): Decision {
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
