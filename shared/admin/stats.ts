/**
 * Numbers for the admin page's chart, straight from the outbox tables.
 */
import type { Queryable } from "../db/port.js";

export interface MinuteBucket {
  /** Start of the minute, ISO-8601. */
  minute: string;
  /** Attempts answered 2xx. */
  delivered: number;
  /** Attempts that failed in a retryable way (5xx, 429, timeouts, network) and will be retried. */
  retried: number;
  /**
   * Attempts after which no retry follows: permanent failures (other 4xx, 410 Gone), and a
   * retryable failure that was its delivery's last allowed attempt (it died, exhausted).
   */
  failed: number;
  /** Deliveries that became dead letters in that minute (and are still dead). */
  deadLettered: number;
}

/**
 * Deliveries per minute by outcome over the last `minutes` minutes (current minute included),
 * oldest first, one bucket per minute even when nothing happened. Probe attempts to disabled
 * endpoints are left out: they are health checks, not deliveries. `applicationId`: only that
 * application's deliveries (its events'), as the admin page's application selector asks.
 */
export async function deliveriesPerMinute(q: Queryable, minutes: number, filter: { applicationId?: string } = {}): Promise<MinuteBucket[]> {
  const { rows } = await q.query<{ minute: Date | string; delivered: number; retried: number; failed: number; dead_lettered: number }>(
    `WITH window_start AS (
       SELECT date_trunc('minute', now()) - make_interval(mins => $1::int - 1) AS at
     ),
     minutes AS (
       SELECT generate_series((SELECT at FROM window_start), date_trunc('minute', now()), interval '1 minute') AS minute
     ),
     -- A retryable failure is "final" when its delivery died of it (its maximum reached,
     -- maxAttempts 1 included): it is not retried, even if the dead letter is replayed later (a
     -- new run). led_to records that at the attempt (migration 038); for attempts logged before
     -- it, the delivery's status now is the best there is.
     recent AS (
       SELECT a.created_at, a.result,
              CASE WHEN a.result <> 'retryable' THEN false
                   WHEN a.led_to IS NOT NULL THEN a.led_to = 'dead'
                   ELSE d.status = 'dead' AND d.attempts = a.attempt_number AND NOT a.stale END AS final
       FROM outbound_attempts a
       JOIN outbound_deliveries d ON d.id = a.delivery_id
       WHERE a.created_at >= (SELECT at FROM window_start) AND NOT a.probe
         AND ($2::text IS NULL OR EXISTS (SELECT 1 FROM outbound_events e WHERE e.id = d.event_id AND e.application_id = $2))
     ),
     attempts AS (
       SELECT date_trunc('minute', created_at) AS minute,
              count(*) FILTER (WHERE result = 'delivered') AS delivered,
              count(*) FILTER (WHERE result = 'retryable' AND NOT final) AS retried,
              count(*) FILTER (WHERE result IN ('permanent', 'gone') OR final) AS failed
       FROM recent
       GROUP BY 1
     ),
     dead AS (
       SELECT date_trunc('minute', d.dead_at) AS minute, count(*) AS dead_lettered
       FROM outbound_deliveries d
       WHERE d.status = 'dead' AND d.dead_at >= (SELECT at FROM window_start)
         AND ($2::text IS NULL OR EXISTS (SELECT 1 FROM outbound_events e WHERE e.id = d.event_id AND e.application_id = $2))
       GROUP BY 1
     )
     SELECT m.minute,
            coalesce(a.delivered, 0)::int AS delivered,
            coalesce(a.retried, 0)::int AS retried,
            coalesce(a.failed, 0)::int AS failed,
            coalesce(d.dead_lettered, 0)::int AS dead_lettered
     FROM minutes m
     LEFT JOIN attempts a ON a.minute = m.minute
     LEFT JOIN dead d ON d.minute = m.minute
     ORDER BY m.minute`,
    [minutes, filter.applicationId ?? null],
  );
  return rows.map((r) => ({
    minute: new Date(r.minute).toISOString(),
    delivered: r.delivered,
    retried: r.retried,
    failed: r.failed,
    deadLettered: r.dead_lettered,
  }));
}
