/** Claiming due deliveries under a lease: the only way a relay gets work. */
import type { Queryable } from "../../db/port.js";
import type { ClaimedDelivery } from "../types.js";

interface ClaimRow {
  id: string;
  event_id: string;
  subscription_id: string;
  url: string;
  secrets: string[];
  body: string;
  attempts: number;
  max_attempts: number | null;
}

function toClaimed(row: ClaimRow, leaseToken: string, probe: boolean): ClaimedDelivery {
  return {
    id: row.id,
    eventId: row.event_id,
    subscriptionId: row.subscription_id,
    url: row.url,
    secrets: row.secrets,
    body: row.body,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    leaseToken,
    probe,
  };
}

/**
 * Claims up to `limit` due deliveries of subscriptions that are not disabled, oldest due first.
 * SKIP LOCKED lets relays claim side by side without waiting on each other; the lease moves
 * `next_attempt_at` to its expiry, so the row is invisible to other claims until the lease runs out
 * (then, the holder having died, it is due again). Served by the partial index on the due predicate.
 */
export async function claimDueDeliveries(
  q: Queryable,
  options: { limit: number; leaseSeconds: number; leaseToken: string },
): Promise<ClaimedDelivery[]> {
  const { rows } = await q.query<ClaimRow>(
    `WITH due AS (
       SELECT d.id
       FROM outbound_deliveries d
       JOIN outbound_subscriptions s ON s.id = d.subscription_id
       WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND s.status <> 'disabled'
       ORDER BY d.next_attempt_at
       LIMIT $1
       FOR UPDATE OF d SKIP LOCKED
     )
     UPDATE outbound_deliveries d
     SET lease_token = $2::uuid,
         next_attempt_at = now() + $3::float8 * interval '1 second',
         claims = d.claims + 1,
         updated_at = now()
     FROM due, outbound_events e, outbound_subscriptions s
     WHERE d.id = due.id AND e.id = d.event_id AND s.id = d.subscription_id
     RETURNING d.id, d.event_id, d.subscription_id, s.url, s.secrets, e.body, d.attempts, s.max_attempts`,
    [options.limit, options.leaseToken, options.leaseSeconds],
  );
  return rows.map((r) => toClaimed(r, options.leaseToken, false));
}

/**
 * For each disabled subscription whose probe is due (circuit-breaker disables only; 410 Gone has no
 * probe time), claims its oldest pending delivery that no live lease holds, and schedules the next
 * probe. The subscription row lock makes one relay probe an endpoint at a time.
 */
export async function claimProbeDeliveries(
  q: Queryable,
  options: { limit: number; leaseSeconds: number; leaseToken: string; probeIntervalSeconds: number },
): Promise<ClaimedDelivery[]> {
  const { rows } = await q.query<ClaimRow>(
    `WITH probed AS (
       SELECT id FROM outbound_subscriptions
       WHERE status = 'disabled' AND next_probe_at <= now()
       ORDER BY next_probe_at
       LIMIT $1
       FOR UPDATE SKIP LOCKED
     ),
     bumped AS (
       UPDATE outbound_subscriptions s
       SET next_probe_at = now() + $4::float8 * interval '1 second', updated_at = now()
       FROM probed
       WHERE s.id = probed.id
       RETURNING s.id
     ),
     picked AS (
       SELECT p.id
       FROM bumped b
       CROSS JOIN LATERAL (
         SELECT d.id FROM outbound_deliveries d
         WHERE d.subscription_id = b.id AND d.status = 'pending'
           AND (d.lease_token IS NULL OR d.next_attempt_at <= now())
         ORDER BY d.created_at, d.id
         LIMIT 1
         FOR UPDATE SKIP LOCKED
       ) p
     )
     UPDATE outbound_deliveries d
     SET lease_token = $2::uuid,
         next_attempt_at = now() + $3::float8 * interval '1 second',
         claims = d.claims + 1,
         updated_at = now()
     FROM picked, outbound_events e, outbound_subscriptions s
     WHERE d.id = picked.id AND e.id = d.event_id AND s.id = d.subscription_id
     RETURNING d.id, d.event_id, d.subscription_id, s.url, s.secrets, e.body, d.attempts, s.max_attempts`,
    [options.limit, options.leaseToken, options.leaseSeconds, options.probeIntervalSeconds],
  );
  return rows.map((r) => toClaimed(r, options.leaseToken, true));
}
