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
 * endpoints are left out: they are health checks, not deliveries.
 */
export async function deliveriesPerMinute(q: Queryable, minutes: number): Promise<MinuteBucket[]> {
  const { rows } = await q.query<{ minute: Date | string; delivered: number; retried: number; failed: number; dead_lettered: number }>(
    `WITH window_start AS (
       SELECT date_trunc('minute', now()) - make_interval(mins => $1::int - 1) AS at
     ),
     minutes AS (
       SELECT generate_series((SELECT at FROM window_start), date_trunc('minute', now()), interval '1 minute') AS minute
     ),
     -- A retryable failure is "final" when it was the last attempt of a delivery that then died
     -- (its maximum reached, maxAttempts 1 included): it will not be retried (unless replayed).
     recent AS (
       SELECT a.created_at, a.result,
              CASE WHEN a.result = 'retryable' THEN EXISTS (
                SELECT 1 FROM outbound_deliveries d
                WHERE d.id = a.delivery_id AND d.status = 'dead' AND d.attempts = a.attempt_number AND NOT a.stale
              ) ELSE false END AS final
       FROM outbound_attempts a
       WHERE a.created_at >= (SELECT at FROM window_start) AND NOT a.probe
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
       SELECT date_trunc('minute', dead_at) AS minute, count(*) AS dead_lettered
       FROM outbound_deliveries
       WHERE status = 'dead' AND dead_at >= (SELECT at FROM window_start)
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
    [minutes],
  );
  return rows.map((r) => ({
    minute: new Date(r.minute).toISOString(),
    delivered: r.delivered,
    retried: r.retried,
    failed: r.failed,
    deadLettered: r.dead_lettered,
  }));
}
