/**
 * Drives the relay's own SQL (claim, complete, release) by hand for the ordering tests: each
 * "relay" claims with its own lease token, and the test decides each attempt's outcome, so the
 * tests can place failures, retries, crashes and stalls exactly where they want.
 */
import { randomUUID } from "node:crypto";
import type { Database, Queryable } from "../../../shared/db/port.js";
import type { HealthPolicy } from "../../../shared/outbound/health.js";
import { claimDueDeliveries } from "../../../shared/outbound/sql/claimDeliveries.js";
import { completeDeliveries, type CompletionResult } from "../../../shared/outbound/sql/completeDeliveries.js";
import type { DeliveryOutcome } from "../../../shared/outbound/transport.js";
import type { ClaimedDelivery, Completion, Decision } from "../../../shared/outbound/types.js";

/** Failures never open the circuit here: the tests are about ordering, not health. */
export const PATIENT_HEALTH: HealthPolicy = { degradeAfter: 1_000_000, disableAfter: 1_000_000, probeIntervalSeconds: 60, openAfterSeconds: 1_000_000 };

export type Outcome = "ok" | "retry" | "dead";

const OUTCOMES: Record<Outcome, { outcome: DeliveryOutcome; decision: Decision }> = {
  ok: {
    outcome: { result: "delivered", status: 200, latencyMs: 1, errorClass: null, responseExcerpt: null, retryAfterSeconds: null },
    decision: { status: "delivered", delaySeconds: 0, deadReason: null, counted: true },
  },
  retry: {
    // Due again at once: the retry schedule's delay is exercised by `retryLater`.
    outcome: { result: "retryable", status: 503, latencyMs: 1, errorClass: "http_5xx", responseExcerpt: null, retryAfterSeconds: null },
    decision: { status: "pending", delaySeconds: 0, deadReason: null, counted: true },
  },
  dead: {
    outcome: { result: "permanent", status: 400, latencyMs: 1, errorClass: "http_4xx", responseExcerpt: null, retryAfterSeconds: null },
    decision: { status: "dead", delaySeconds: 0, deadReason: "permanent: HTTP 400", counted: true },
  },
};

export function completion(delivery: ClaimedDelivery, outcome: Outcome, delaySeconds?: number): Completion {
  const o = OUTCOMES[outcome];
  return { delivery, outcome: o.outcome, decision: delaySeconds === undefined ? o.decision : { ...o.decision, delaySeconds } };
}

export async function claim(db: Database, limit = 100, leaseSeconds = 60): Promise<ClaimedDelivery[]> {
  return claimDueDeliveries(db, { limit, leaseSeconds, leaseToken: randomUUID(), relayId: randomUUID() });
}

export async function complete(db: Database | Queryable, completions: Completion[]): Promise<CompletionResult> {
  return completeDeliveries(db, completions, PATIENT_HEALTH);
}

/** Claims everything due and answers each with `outcome`, until nothing is due; returns the ids sent, in order. */
export async function drain(db: Database, outcome: (d: ClaimedDelivery) => Outcome = () => "ok"): Promise<string[]> {
  const sent: string[] = [];
  for (;;) {
    const claimed = await claim(db);
    if (claimed.length === 0) return sent;
    sent.push(...claimed.map((d) => d.id));
    await complete(db, claimed.map((d) => completion(d, outcome(d))));
  }
}

/** A crashed relay's leases, run out (as `leaseSeconds` passing would). */
export async function expireLeases(db: Queryable, deliveries: readonly ClaimedDelivery[]): Promise<void> {
  await db.query("UPDATE outbound_deliveries SET lease_expires_at = now() - interval '1 second' WHERE lease_token = ANY ($1::uuid[])", [deliveries.map((d) => d.leaseToken)]);
}

/** The retry schedule passing: every pending delivery with a finite due time becomes due. */
export async function timePasses(db: Queryable): Promise<void> {
  await db.query("UPDATE outbound_deliveries SET next_attempt_at = now() - interval '1 millisecond' WHERE status = 'pending' AND next_attempt_at > now() AND next_attempt_at < 'infinity'");
}

export async function resetOrdering(db: Queryable): Promise<void> {
  await db.query("TRUNCATE outbound_attempt_rows, outbound_replays, outbound_deliveries, outbound_events, outbound_subscriptions, outbound_ordering_keys, outbound_relay_holds CASCADE");
}
