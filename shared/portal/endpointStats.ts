/**
 * One endpoint's success rate and latency over time (the portal's chart): its attempts in buckets
 * of `bucketMinutes` over the last `minutes`, oldest first, every bucket present. Probes of a
 * disabled endpoint are left out (health checks, as on the admin page's chart: shared/admin/stats.ts);
 * an attempt that sent nothing (a transformation skipped or failed it) has no latency to count.
 */
import type { Queryable } from "../db/port.js";

export interface EndpointBucket {
  /** Start of the bucket, ISO-8601. */
  start: string;
  attempts: number;
  /** Answered 2xx. */
  delivered: number;
  /** Any other outcome: an error status, a timeout, no connection. */
  failed: number;
  /** delivered / attempts, or null without attempts. */
  successRate: number | null;
  /** Of the attempts that reached the endpoint (answered or timed out): mean and 95th percentile, ms. */
  latencyMsAvg: number | null;
  latencyMsP95: number | null;
}

export interface EndpointStats {
  subscriptionId: string;
  minutes: number;
  bucketMinutes: number;
  totals: Omit<EndpointBucket, "start">;
  buckets: EndpointBucket[];
}

interface Row { start: Date | string | null; attempts: number; delivered: number; latency_avg: number | null; latency_p95: number | null }

const NOT_SENT = ["skipped_by_transformation", "transformation_failed"];

export async function endpointStats(q: Queryable, subscriptionId: string, options: { minutes: number; bucketMinutes: number }): Promise<EndpointStats> {
  const { minutes, bucketMinutes } = options;
  const { rows } = await q.query<Row>(
    `WITH bounds AS (
       SELECT date_bin(make_interval(mins => $3::int), now(), timestamptz '2000-01-01') - make_interval(mins => $2::int - $3::int) AS at
     ),
     recent AS (
       SELECT date_bin(make_interval(mins => $3::int), a.created_at, timestamptz '2000-01-01') AS start, a.result, a.latency_ms,
              a.error_class IS NULL OR NOT (a.error_class = ANY($4::text[])) AS sent
       FROM outbound_attempts a JOIN outbound_deliveries d ON d.id = a.delivery_id
       WHERE d.subscription_id = $1 AND a.created_at >= (SELECT at FROM bounds) AND NOT a.probe
     ),
     buckets AS (
       SELECT generate_series((SELECT at FROM bounds), now(), make_interval(mins => $3::int)) AS start
     ),
     per AS (
       SELECT start, count(*)::int AS attempts, (count(*) FILTER (WHERE result = 'delivered'))::int AS delivered,
              (avg(latency_ms) FILTER (WHERE sent))::float8 AS latency_avg,
              (percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) FILTER (WHERE sent))::float8 AS latency_p95
       FROM recent GROUP BY GROUPING SETS ((start), ())
     )
     SELECT b.start, coalesce(p.attempts, 0) AS attempts, coalesce(p.delivered, 0) AS delivered, p.latency_avg, p.latency_p95
     FROM buckets b LEFT JOIN per p ON p.start = b.start
     UNION ALL
     SELECT NULL, attempts, delivered, latency_avg, latency_p95 FROM per WHERE start IS NULL
     ORDER BY 1 NULLS LAST`,
    [subscriptionId, minutes, bucketMinutes, NOT_SENT],
  );
  const shape = (r: Row): Omit<EndpointBucket, "start"> => ({
    attempts: r.attempts,
    delivered: r.delivered,
    failed: r.attempts - r.delivered,
    successRate: r.attempts > 0 ? r.delivered / r.attempts : null,
    latencyMsAvg: r.latency_avg === null ? null : Math.round(r.latency_avg * 10) / 10,
    latencyMsP95: r.latency_p95 === null ? null : Math.round(r.latency_p95 * 10) / 10,
  });
  const total = rows.find((r) => r.start === null);
  return {
    subscriptionId,
    minutes,
    bucketMinutes,
    totals: total ? shape(total) : { attempts: 0, delivered: 0, failed: 0, successRate: null, latencyMsAvg: null, latencyMsP95: null },
    buckets: rows.filter((r) => r.start !== null).map((r) => ({ start: new Date(r.start!).toISOString(), ...shape(r) })),
  };
}
