/**
 * Retention: the outbox forgets finished work after a while. Delivered deliveries (and, when asked,
 * dead letters) older than their retention are deleted with their attempt log and replay history;
 * an event goes once none of its deliveries is left. Pending deliveries are never touched, whatever
 * their age: retention must not lose work that is still owed.
 *
 * Age counts from the delivery's (or event's) creation, which the BRIN indexes of migration 007
 * find cheaply. Deletion runs in small batches, each its own statement, so it never holds many
 * locks at once or competes long with the relay for the same pages.
 *
 * Consequence to know: idempotency by event id holds as long as the event is kept. Once an event
 * is purged, enqueueing the same id again creates it anew (and it is delivered again).
 */
import type { Queryable } from "../db/port.js";

export interface RetentionPolicy {
  /** Days a delivered delivery is kept after its creation; 0 keeps them forever. */
  deliveredDays: number;
  /** Days a dead letter is kept after its creation; 0 keeps them until replayed or deleted by hand. */
  deadDays: number;
}

export interface PurgeResult {
  deliveries: number;
  attempts: number;
  replays: number;
  events: number;
}

/**
 * One batch: up to `limit` finished deliveries past their retention, with their attempts and
 * replays, in one statement ($1 delivered days, $2 dead days; 0 keeps that kind). Rows are locked
 * with SKIP LOCKED: a concurrent replay (which moves a dead letter back to pending) either commits
 * first, and the row no longer qualifies when re-checked, or finds it gone.
 */
const PURGE_DELIVERIES = `WITH doomed AS (
     SELECT id FROM outbound_deliveries
     WHERE (status = 'delivered' AND $1::int > 0 AND created_at < now() - make_interval(days => $1::int))
        OR (status = 'dead' AND $2::int > 0 AND created_at < now() - make_interval(days => $2::int))
     LIMIT $3
     FOR UPDATE SKIP LOCKED
   ),
   attempts AS (
     DELETE FROM outbound_attempts a USING doomed WHERE a.delivery_id = doomed.id RETURNING 1
   ),
   replays AS (
     DELETE FROM outbound_replays r USING doomed WHERE r.delivery_id = doomed.id RETURNING 1
   ),
   deliveries AS (
     DELETE FROM outbound_deliveries d USING doomed WHERE d.id = doomed.id RETURNING d.event_id
   )
   SELECT (SELECT count(*) FROM deliveries)::int AS deliveries,
          (SELECT count(*) FROM attempts)::int AS attempts,
          (SELECT count(*) FROM replays)::int AS replays,
          (SELECT coalesce(array_agg(DISTINCT event_id), '{}') FROM deliveries) AS event_ids`;

/**
 * Up to `limit` events with no delivery left: among those whose deliveries were just purged ($1),
 * or older than $2 days (events no subscription matched never had any; 0 skips these).
 */
const PURGE_EVENTS = `DELETE FROM outbound_events
   WHERE id IN (
     SELECT e.id FROM outbound_events e
     WHERE (e.id = ANY ($1::text[]) OR ($2::int > 0 AND e.created_at < now() - make_interval(days => $2::int)))
       AND NOT EXISTS (SELECT 1 FROM outbound_deliveries d WHERE d.event_id = e.id)
     LIMIT $3
     FOR UPDATE SKIP LOCKED
   )`;

/**
 * Deletes what is past its retention, batch after batch, until a batch comes back short or
 * `shouldStop` says so. Returns what was deleted.
 */
export async function purgeExpired(
  db: Queryable,
  policy: RetentionPolicy,
  options: { batchSize?: number; shouldStop?: () => boolean } = {},
): Promise<PurgeResult> {
  const total: PurgeResult = { deliveries: 0, attempts: 0, replays: 0, events: 0 };
  if (policy.deliveredDays <= 0 && policy.deadDays <= 0) return total;
  const limit = options.batchSize ?? 1000;
  // Events are aged by the shorter retention in use: an event is only deleted once no delivery
  // of it is left, so this never removes what a longer-kept delivery still points at.
  const eventDays = Math.min(...[policy.deliveredDays, policy.deadDays].filter((d) => d > 0));
  for (;;) {
    const { rows } = await db.query<{ deliveries: number; attempts: number; replays: number; event_ids: string[] }>(
      PURGE_DELIVERIES,
      [policy.deliveredDays, policy.deadDays, limit],
    );
    const batch = rows[0]!;
    const events = await db.query(PURGE_EVENTS, [batch.event_ids, 0, limit]);
    total.deliveries += batch.deliveries;
    total.attempts += batch.attempts;
    total.replays += batch.replays;
    total.events += events.rowCount ?? 0;
    if (batch.deliveries < limit || options.shouldStop?.()) break;
  }
  // Old events that never had a delivery.
  for (;;) {
    const events = await db.query(PURGE_EVENTS, [[], eventDays, limit]);
    total.events += events.rowCount ?? 0;
    if ((events.rowCount ?? 0) < limit || options.shouldStop?.()) break;
  }
  return total;
}

