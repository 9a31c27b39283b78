/**
 * Operational events: an endpoint's health changes become `endpoint.*` events of the platform,
 * delivered, signed, to the operator's destinations (the alert subscription, and any subscription
 * of `app_platform` matching them) and to the endpoint's own application's subscriptions that name
 * them (`endpoint.*`, `endpoint.disabled`, …), never to another application's
 * (shared/platformEvents.ts).
 *
 * | change (recorded by migration 020's trigger) | event |
 * |---|---|
 * | active → degraded | `endpoint.degraded` |
 * | any → disabled (circuit open, or 410 Gone) | `endpoint.disabled` |
 * | disabled → active by a probe's success | `endpoint.recovered` |
 * | disabled → active by an operator (`POST /subscriptions/{id}/enable`) | `endpoint.enabled` |
 * | degraded → active | none: the failures stopped before anything was held back |
 *
 * Debounced: a change of a subscription raises nothing when the same event was raised for it
 * less than `debounceSeconds` ago (default 300), so a flapping endpoint gives one event per type
 * and window, not one per flap. Run by the alert poller (every host that scans for alerts scans
 * these too); each transition row is taken under a skip-locked row lock and marked in the same
 * transaction as its event, so several pollers never raise one twice and a crash loses none.
 */
import type { Logger } from "pino";
import type { Database } from "./db/port.js";
import { raisePlatformEvent } from "./platformEvents.js";

export const OPERATIONAL_EVENT_TYPES = {
  degraded: "endpoint.degraded",
  disabled: "endpoint.disabled",
  recovered: "endpoint.recovered",
  enabled: "endpoint.enabled",
} as const;

export type OperationalEventType = (typeof OPERATIONAL_EVENT_TYPES)[keyof typeof OPERATIONAL_EVENT_TYPES];

/** Default: a subscription's same event at most once per 5 minutes. */
export const DEFAULT_DEBOUNCE_SECONDS = 300;

export interface EndpointEvent {
  type: OperationalEventType;
  /** The event's id: `endpoint-<transition id>` (its application's copy: `…​.<application id>`). */
  eventId: string;
  subscriptionId: string;
  applicationId: string;
  url: string;
  from: string;
  to: string;
  /** When the change happened. */
  at: string;
  /** Why it is disabled (the breaker's words), for `endpoint.disabled`. */
  reason: string | null;
}

interface TransitionRow {
  id: string;
  subscription_id: string;
  application_id: string;
  from_status: string;
  to_status: string;
  cause: string | null;
  at: Date | string;
  url: string | null;
  disabled_reason: string | null;
}

/** The event a change stands for, or null. */
export function eventTypeOf(from: string, to: string, cause: string | null): OperationalEventType | null {
  if (to === "disabled") return OPERATIONAL_EVENT_TYPES.disabled;
  if (from === "disabled") return cause === "operator" ? OPERATIONAL_EVENT_TYPES.enabled : OPERATIONAL_EVENT_TYPES.recovered;
  if (from === "active" && to === "degraded") return OPERATIONAL_EVENT_TYPES.degraded;
  return null;
}

export interface HealthScanOptions {
  logger?: Logger;
  /** Seconds within which a subscription's same event is not raised again. Default: 300. */
  debounceSeconds?: number;
  /** Most changes handled per scan. Default: 100. */
  limit?: number;
  maxPayloadBytes?: number;
}

/** One scan: raises the events of the health changes not handled yet; returns those raised. */
export async function scanHealthTransitions(db: Database, options: HealthScanOptions = {}): Promise<EndpointEvent[]> {
  const debounce = options.debounceSeconds ?? DEFAULT_DEBOUNCE_SECONDS;
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<TransitionRow>(
      `SELECT t.id::text AS id, t.subscription_id, t.application_id, t.from_status, t.to_status, t.cause, t.at, s.url, s.disabled_reason
       FROM outbound_health_transitions t
       LEFT JOIN outbound_subscriptions s ON s.id = t.subscription_id
       WHERE t.handled_at IS NULL
       ORDER BY t.id
       LIMIT $1
       FOR UPDATE OF t SKIP LOCKED`,
      [options.limit ?? 100],
    );
    const raised: EndpointEvent[] = [];
    for (const row of rows) {
      const type = eventTypeOf(row.from_status, row.to_status, row.cause);
      let eventId: string | null = null;
      if (type) {
        const recent = await tx.query(
          `SELECT 1 FROM outbound_health_transitions
           WHERE subscription_id = $1 AND event_type = $2 AND event_id IS NOT NULL AND id <> $3::bigint
             AND at > $4::timestamptz - make_interval(secs => $5::float8)
           LIMIT 1`,
          [row.subscription_id, type, row.id, row.at, debounce],
        );
        if (recent.rows.length === 0) {
          const event: EndpointEvent = {
            type, eventId: `endpoint-${row.id}`, subscriptionId: row.subscription_id, applicationId: row.application_id,
            url: row.url ?? "", from: row.from_status, to: row.to_status, at: new Date(row.at).toISOString(),
            reason: type === OPERATIONAL_EVENT_TYPES.disabled ? row.disabled_reason : null,
          };
          const { type: _t, eventId: id, ...data } = event;
          if (await raisePlatformEvent(tx, { id, type, data, applicationId: row.application_id }, { maxPayloadBytes: options.maxPayloadBytes })) {
            eventId = id;
            raised.push(event);
            options.logger?.warn({ event: type, eventId: id, subscriptionId: row.subscription_id, applicationId: row.application_id, from: row.from_status, to: row.to_status }, `operational event ${type}`);
          }
        }
      }
      await tx.query("UPDATE outbound_health_transitions SET handled_at = now(), event_type = $2, event_id = $3 WHERE id = $1::bigint", [row.id, type, eventId]);
    }
    return raised;
  });
}
