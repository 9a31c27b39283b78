/**
 * The gauges an operator charts and alerts on, read from the database at each metrics collection
 * (a Prometheus scrape, an OTLP push interval), never on the delivery path:
 *
 * - `webhooks.delivery.queue_lag` (s): how long the oldest due delivery has waited past its due
 *   time, among subscriptions the relay would send to now (not paused, disabled or deleted: their
 *   backlog waits on purpose, and the breaker gauge shows it); a delivery a relay holds (a live
 *   lease) is in flight, not waiting. Read with one index probe per subscription, not a scan of
 *   the backlog.
 * - `webhooks.delivery.in_flight{endpoint}`: deliveries leased to a relay now, per subscription id,
 *   the ENDPOINT_LABEL_LIMIT busiest named and the rest summed under `other` (bounded cardinality).
 * - `webhooks.endpoint.breaker{state}`: subscriptions per circuit-breaker state: `closed` (active),
 *   `degraded`, `open` (disabled by the breaker, being probed), `disabled` (410 Gone or an operator).
 * - `webhooks.inbox.backlog{status}`: inbox entries not processed yet, by status.
 *
 * A failing read (database away) reports nothing for that collection: no sample rather than a wrong one.
 */
import { metrics, type BatchObservableResult, type Observable } from "@opentelemetry/api";
import type { Queryable } from "../db/port.js";
import { ENDPOINT_LABEL_LIMIT, INSTRUMENTATION_SCOPE, METRIC_UNITS, METRICS, OTHER_ENDPOINTS } from "./names.js";

export type BreakerState = "closed" | "degraded" | "open" | "disabled";
export type InboxBacklogStatus = "pending" | "deferred" | "failed";

export interface PlatformGaugeReadings {
  queueLagSeconds: number;
  /** Subscription id → deliveries in flight, at most ENDPOINT_LABEL_LIMIT of them, plus `other`. */
  inFlight: Record<string, number>;
  breaker: Record<BreakerState, number>;
  inboxBacklog: Record<InboxBacklogStatus, number>;
}

/** The busiest `limit` endpoints by name, the rest summed under `other` (only when there is a rest). */
export function boundEndpoints(counts: ReadonlyArray<{ endpoint: string; n: number }>, limit = ENDPOINT_LABEL_LIMIT): Record<string, number> {
  const sorted = [...counts].sort((a, b) => b.n - a.n || (a.endpoint < b.endpoint ? -1 : 1));
  const out: Record<string, number> = {};
  for (const { endpoint, n } of sorted.slice(0, limit)) out[endpoint] = n;
  const rest = sorted.slice(limit).reduce((sum, c) => sum + c.n, 0);
  if (sorted.length > limit) out[OTHER_ENDPOINTS] = rest;
  return out;
}

/** Reads the four gauges in two round trips. */
export async function readPlatformGauges(q: Queryable): Promise<PlatformGaugeReadings> {
  const { rows: [summary] } = await q.query<{ lag: number; closed: number; degraded: number; open: number; disabled: number; pending: number; deferred: number; failed: number }>(
    `SELECT
       (SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(d.next_attempt_at)), 0)::float8
          FROM outbound_subscriptions s
          CROSS JOIN LATERAL (SELECT next_attempt_at FROM outbound_deliveries
                               WHERE subscription_id = s.id AND status = 'pending'
                                 AND (lease_expires_at IS NULL OR lease_expires_at <= now())
                               ORDER BY next_attempt_at LIMIT 1) d
         WHERE s.status <> 'disabled' AND s.paused_at IS NULL AND s.deleted_at IS NULL
           AND d.next_attempt_at <= now()) AS lag,
       (SELECT count(*) FROM outbound_subscriptions WHERE deleted_at IS NULL AND status = 'active')::int AS closed,
       (SELECT count(*) FROM outbound_subscriptions WHERE deleted_at IS NULL AND status = 'degraded')::int AS degraded,
       (SELECT count(*) FROM outbound_subscriptions WHERE deleted_at IS NULL AND status = 'disabled' AND next_probe_at IS NOT NULL)::int AS open,
       (SELECT count(*) FROM outbound_subscriptions WHERE deleted_at IS NULL AND status = 'disabled' AND next_probe_at IS NULL)::int AS disabled,
       (SELECT count(*) FROM inbox_entries WHERE status = 'pending')::int AS pending,
       (SELECT count(*) FROM inbox_entries WHERE status = 'deferred')::int AS deferred,
       (SELECT count(*) FROM inbox_entries WHERE status = 'failed')::int AS failed`,
  );
  // A leased delivery is pending with its lease's expiry ahead (a lease run out is due again).
  // Through the partial index of pending rows: the leased ones are among the due ones.
  const { rows: leased } = await q.query<{ endpoint: string; n: number }>(
    `SELECT subscription_id AS endpoint, count(*)::int AS n FROM outbound_deliveries
      WHERE status = 'pending' AND lease_token IS NOT NULL AND lease_expires_at > now()
      GROUP BY subscription_id`,
  );
  const s = summary!;
  return {
    queueLagSeconds: Math.max(0, Number(s.lag)),
    inFlight: boundEndpoints(leased),
    breaker: { closed: s.closed, degraded: s.degraded, open: s.open, disabled: s.disabled },
    inboxBacklog: { pending: s.pending, deferred: s.deferred, failed: s.failed },
  };
}

/**
 * Registers the four gauges on the current global meter provider, read by `read` (default: this
 * database) once per collection. Returns the function that unregisters them.
 */
export function observePlatformGauges(q: Queryable, read: () => Promise<PlatformGaugeReadings> = () => readPlatformGauges(q)): () => void {
  const meter = metrics.getMeter(INSTRUMENTATION_SCOPE);
  const lag = meter.createObservableGauge(METRICS.deliveryQueueLag, { description: "Age of the oldest due delivery past its due time", unit: METRIC_UNITS.deliveryQueueLag });
  const inFlight = meter.createObservableGauge(METRICS.deliveryInFlight, { description: "Deliveries leased to a relay now, per endpoint", unit: METRIC_UNITS.deliveryInFlight });
  const breaker = meter.createObservableGauge(METRICS.endpointBreaker, { description: "Subscriptions per circuit breaker state", unit: METRIC_UNITS.endpointBreaker });
  const backlog = meter.createObservableGauge(METRICS.inboxBacklog, { description: "Inbox entries not processed yet, by status", unit: METRIC_UNITS.inboxBacklog });
  const observables: Observable[] = [lag, inFlight, breaker, backlog];
  const callback = async (result: BatchObservableResult) => {
    let r: PlatformGaugeReadings;
    try {
      r = await read();
    } catch {
      return; // database away: no sample rather than a wrong one
    }
    result.observe(lag, r.queueLagSeconds);
    for (const [endpoint, n] of Object.entries(r.inFlight)) result.observe(inFlight, n, { endpoint });
    for (const [state, n] of Object.entries(r.breaker)) result.observe(breaker, n, { state });
    for (const [status, n] of Object.entries(r.inboxBacklog)) result.observe(backlog, n, { status });
  };
  meter.addBatchObservableCallback(callback, observables);
  return () => meter.removeBatchObservableCallback(callback, observables);
}
