/**
 * Glossary and shared shapes of outbound delivery.
 *
 * - event: something that happened (order.paid), with a stable id; its body is fixed at enqueue.
 * - subscription: an endpoint URL, the event types it wants, its signing secrets, its health.
 * - delivery: one event for one subscription; id `<event id>:<subscription id>`, sent as `webhook-id`.
 * - attempt: one HTTP try of a delivery, logged (status, latency, error class, response excerpt).
 * - lease: a relay's time-bounded claim on a delivery, named by a random token; a completion
 *   carrying a token that is no longer the delivery's is stale and rejected.
 * - probe: one attempt sent to a disabled endpoint to learn whether it has recovered.
 * - dead letter: a delivery that will not be retried automatically (permanent failure or attempts
 *   exhausted); listed, inspectable, replayable.
 */
import type { DeliveryOutcome } from "./transport.js";

/** A delivery a relay holds a lease on, with all it needs to send it. */
export interface ClaimedDelivery {
  id: string;
  eventId: string;
  subscriptionId: string;
  url: string;
  secrets: string[];
  body: string;
  /** Attempts already counted before this one. */
  attempts: number;
  /** The subscription's own maximum, or null for the policy's. */
  maxAttempts: number | null;
  /** The subscription's custom headers, sent with the attempt (validated: never webhook-*, host, …). */
  headers?: Record<string, string>;
  /** The subscription's transformation (shared/outbound/transformations.ts), run before the attempt; null: none. */
  transformation?: string | null;
  /**
   * Whether its subscription has endpoint authentication, as the claim read it; undefined: not known
   * (the relay then asks endpointAuth, which reads it). False spares that read on every attempt.
   */
  hasAuth?: boolean;
  /** The subscription's own attempt deadline (bounded by the transport's), or null for the transport's. */
  timeoutMs?: number | null;
  /**
   * Rate-limited subscriptions: when this attempt may start, on the claiming process's clock
   * (performance.now()): not before `at`, not after `latest` (then it is given back unsent). Null: at once.
   */
  slot?: { at: number; latest: number; /** A configured limit's (kept strictly), not a learnt pace's. */ strict?: boolean } | null;
  leaseToken: string;
  /** Ordered delivery: its ordering key (it is its key's head: the only one of the key a relay can hold). */
  orderingKey?: string | null;
  /** Sent to a disabled endpoint to test recovery: a failure does not count toward the maximum. */
  probe: boolean;
  /** When the delivery's current run of 429 answers started (ms, Unix epoch), or null (decide.ts bounds it). */
  rateLimitedSince?: number | null;
}

/** What happens to a delivery after an attempt. */
export interface Decision {
  status: "delivered" | "pending" | "dead";
  /** For `pending`: seconds until the next attempt. */
  delaySeconds: number;
  /** For `dead`: why, for the operator. */
  deadReason: string | null;
  /** Whether this attempt counts toward the maximum (probes do not). */
  counted: boolean;
}

/** One finished attempt, ready to be written. */
export interface Completion {
  delivery: ClaimedDelivery;
  outcome: DeliveryOutcome;
  decision: Decision;
  /**
   * For a 429: the successes per second this relay saw the endpoint accept just before it
   * (acceptedRate.ts), from which the rate the endpoint is paced at is learnt; null when none.
   */
  acceptedPerSecond?: number | null;
  /** For a 429: the share of 429s among this relay's answers from the endpoint lately (acceptedRate.ts). */
  limitedShare?: number;
  /**
   * For a 429: false when it teaches no rate: the delivery was paced (it had a slot: a learnt,
   * stated or configured rate) and this relay has seen fewer than ACCEPTED_MIN_SAMPLE 429s from
   * the endpoint lately, too few to measure the share of its pace refused (acceptedRate.ts).
   * Absent: it teaches.
   */
  teaches?: boolean;
}
