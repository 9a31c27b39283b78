/**
 * Outbox retention: the outbox forgets finished work after a while. Delivered deliveries, cancelled
 * ones (their subscription was deleted; aged like delivered work, from their cancellation) and, when
 * asked, dead letters past their retention are deleted with their attempt log and replay history; an
 * event goes once none of its deliveries is left. Pending deliveries are never touched, whatever
 * their age: retention must not lose work that is still owed.
 *
 * A delivery's age counts from when it was delivered or died (a dead letter replayed and dead again
 * starts over), so an operator always has the whole retention to act on a dead letter. The BRIN
 * indexes on `created_at` (migration 007) narrow the search: a row delivered before the cutoff was
 * created before it too. Deletion runs in small batches, each its own statements, so it never holds
 * many locks at once or competes long with the relay for the same pages.
 *
 * Consequence to know: idempotency by event id holds as long as the event is kept. Once an event
 * is purged, enqueueing the same id again creates it anew (and it is delivered again).
 */
import type { Queryable } from "../db/port.js";
import { checkRetention, inBatches, type PurgeOptions, type RetentionPolicy } from "./policy.js";

/** The outbox part of the retention policy (see policy.ts). */
export type OutboxRetention = Pick<RetentionPolicy, "deliveredDays" | "deadDays">;

export interface PurgeResult {
  deliveries: number;
  attempts: number;
  replays: number;
  events: number;
}

/**
 * One batch: up to $3 finished deliveries past their retention ($1 delivered (and cancelled) days, $2 dead days;
 * 0 keeps that kind), with their attempts and replays, in one statement. Rows are locked with SKIP
 * LOCKED: a concurrent replay (which moves a dead letter back to pending) either commits first, and
 * the row no longer qualifies when re-checked, or waits and then finds the row gone.
 */
const PURGE_DELIVERIES = `WITH doomed AS (
     SELECT id FROM outbound_deliveries
     WHERE (status = 'delivered' AND $1::int > 0
            AND created_at < now() - make_interval(days => $1::int) AND delivered_at < now() - make_interval(days => $1::int))
        OR (status = 'dead' AND $2::int > 0
            AND created_at < now() - make_interval(days => $2::int) AND dead_at < now() - make_interval(days => $2::int))
        OR (status = 'cancelled' AND $1::int > 0
            AND created_at < now() - make_interval(days => $1::int) AND cancelled_at < now() - make_interval(days => $1::int))
     LIMIT $3
     FOR UPDATE SKIP LOCKED
   ),
   attempts AS (
     DELETE FROM outbound_attempt_rows a USING doomed WHERE a.delivery_id = doomed.id RETURNING 1
   ),
   replays AS (
     DELETE FROM outbound_replays r USING doomed WHERE r.delivery_id = doomed.id RETURNING 1
   ),
   -- Its delivery.exhausted marks (migration 024) go with it: announced long before (the alert
   -- scan looks back less than the shortest retention), so nothing is announced again.
   exhaustions AS (
     DELETE FROM outbound_delivery_exhaustions x USING doomed WHERE x.delivery_id = doomed.id RETURNING 1
   ),
   deliveries AS (
     DELETE FROM outbound_deliveries d USING doomed WHERE d.id = doomed.id RETURNING d.event_id, d.first_attempt_at IS NOT NULL AS inline_attempt
   )
   SELECT (SELECT count(*) FROM deliveries)::int AS deliveries,
          -- A first attempt kept in its delivery's row (migration 039) goes with it: counted too.
          ((SELECT count(*) FROM attempts) + (SELECT count(*) FROM deliveries WHERE inline_attempt))::int AS attempts,
          (SELECT count(*) FROM replays)::int AS replays,
          (SELECT coalesce(array_agg(DISTINCT event_id), '{}') FROM deliveries) AS event_ids`;

/**
 * Up to $3 events with no delivery left: among those whose deliveries were just purged ($1), or
 * older than $2 days (events no subscription matched never had any; 0 skips these). Aged by the
 * delivered retention: an unmatched event is a finished one, and its id stays a repeat that long.
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
 * `shouldStop` says so. Returns what was deleted. Throws RangeError for a retention shorter than
 * MIN_RETENTION_DAYS (0 excepted).
 */
export async function purgeOutbox(db: Queryable, policy: OutboxRetention, options: PurgeOptions = {}): Promise<PurgeResult> {
  checkRetention({ deliveredDays: policy.deliveredDays, deadDays: policy.deadDays }, options.batchSize ?? 1000);
  const total: PurgeResult = { deliveries: 0, attempts: 0, replays: 0, events: 0 };
  if (policy.deliveredDays === 0 && policy.deadDays === 0) return total;
  await inBatches(options, async (limit) => {
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
    return batch.deliveries;
  });
  // Old events that never had a delivery.
  if (policy.deliveredDays > 0) {
    await inBatches(options, async (limit) => {
      const events = await db.query(PURGE_EVENTS, [[], policy.deliveredDays, limit]);
      total.events += events.rowCount ?? 0;
      return events.rowCount ?? 0;
    });
  }
  return total;
}
