/** Reading deliveries and their attempt log (management API, tests). */
import type { Queryable } from "../db/port.js";
import { NotFoundError } from "./errors.js";

export type DeliveryStatus = "pending" | "delivered" | "dead" | "cancelled";

export interface Delivery {
  /** `<event id>:<subscription id>`, the `webhook-id` receivers see. */
  id: string;
  eventId: string;
  eventType: string;
  subscriptionId: string;
  /** Its event's (and subscription's) application. */
  applicationId: string;
  status: DeliveryStatus;
  /** Attempts counted toward the maximum since creation or the last replay. */
  attempts: number;
  /** For pending: when it is due; null while it waits its turn in its ordering key (the one before it is not delivered yet). */
  nextAttemptAt: Date | null;
  /** A relay holds it right now. */
  leased: boolean;
  lastStatus: number | null;
  lastError: string | null;
  deadReason: string | null;
  deadAt: Date | null;
  deliveredAt: Date | null;
  /** When its subscription was deleted (status `cancelled`). */
  cancelledAt: Date | null;
  /** Null for the fan-out of an enqueued event; `resend`, `test` or `backfill` when an operator asked. */
  origin: "resend" | "test" | "backfill" | null;
  requestedBy: string | null;
  replays: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface Attempt {
  id: number;
  attemptNumber: number;
  result: "delivered" | "retryable" | "permanent" | "gone";
  status: number | null;
  latencyMs: number;
  errorClass: string | null;
  responseExcerpt: string | null;
  /** What it sent (migration 026; shared/outbound/transport.ts headersForLog); null before it, or when nothing was sent. */
  requestHeaders: Record<string, string> | null;
  /** Made by a listener (`webhooks listen`, migration 027): its id; null for the relay's attempts. */
  listenerId: string | null;
  /** A listener's attempt: the local receiver's response headers (an excerpt); null otherwise. */
  responseHeaders: Record<string, string> | null;
  probe: boolean;
  /** The relay had lost its lease: the attempt happened, its outcome was not applied. */
  stale: boolean;
  createdAt: Date;
}

export interface DeliveryFilter {
  status?: DeliveryStatus;
  subscriptionId?: string;
  eventId?: string;
  eventType?: string;
  /** Only this application's deliveries. */
  applicationId?: string;
  /** Page size. Default: 100. */
  limit?: number;
  /** The last id of the previous page. */
  after?: string;
}

/** Columns as `Delivery` fields; shared by the dead-letter queries. */
export const DELIVERY_COLUMNS = `
  d.id, d.event_id AS "eventId", e.type AS "eventType", d.subscription_id AS "subscriptionId",
  e.application_id AS "applicationId", d.status,
  d.attempts, CASE WHEN d.status = 'pending' AND d.next_attempt_at <> 'infinity' THEN d.next_attempt_at END AS "nextAttemptAt",
  (d.status = 'pending' AND COALESCE(d.lease_expires_at > now(), false)) AS leased,
  d.last_status AS "lastStatus", d.last_error AS "lastError", d.dead_reason AS "deadReason",
  d.dead_at AS "deadAt", d.delivered_at AS "deliveredAt", d.cancelled_at AS "cancelledAt",
  d.origin, d.requested_by AS "requestedBy", d.replays,
  d.created_at AS "createdAt", d.updated_at AS "updatedAt"`;

/** Deliveries matching `filter`, in id order (pages with `after`). */
export async function listDeliveries(q: Queryable, filter: DeliveryFilter = {}): Promise<Delivery[]> {
  const { rows } = await q.query<Delivery>(
    `SELECT ${DELIVERY_COLUMNS}
     FROM outbound_deliveries d JOIN outbound_events e ON e.id = d.event_id
     WHERE ($1::text IS NULL OR d.status = $1)
       AND ($2::text IS NULL OR d.subscription_id = $2)
       AND ($3::text IS NULL OR d.event_id = $3)
       AND ($4::text IS NULL OR e.type = $4)
       AND ($5::text IS NULL OR d.id > $5)
       AND ($7::text IS NULL OR e.application_id = $7)
     ORDER BY d.id
     LIMIT $6`,
    [filter.status ?? null, filter.subscriptionId ?? null, filter.eventId ?? null, filter.eventType ?? null, filter.after ?? null, filter.limit ?? 100, filter.applicationId ?? null],
  );
  return rows;
}

/** One delivery, or NotFoundError. */
export async function getDelivery(q: Queryable, id: string): Promise<Delivery> {
  const { rows } = await q.query<Delivery>(
    `SELECT ${DELIVERY_COLUMNS} FROM outbound_deliveries d JOIN outbound_events e ON e.id = d.event_id WHERE d.id = $1`,
    [id],
  );
  if (!rows[0]) throw new NotFoundError("delivery", id);
  return rows[0];
}

/**
 * The attempts of a delivery, oldest first (all of them unless `limit`; `after` is the id of the
 * last attempt of the previous page); NotFoundError when the delivery does not exist.
 */
export async function listAttempts(q: Queryable, deliveryId: string, page: { after?: number; limit?: number } = {}): Promise<Attempt[]> {
  const { rows } = await q.query<Attempt & { id: string | number }>(
    `SELECT id, attempt_number AS "attemptNumber", result, status, latency_ms AS "latencyMs",
            listener_id AS "listenerId", response_headers AS "responseHeaders",
            error_class AS "errorClass", response_excerpt AS "responseExcerpt", request_headers AS "requestHeaders", probe, stale, created_at AS "createdAt"
     FROM outbound_attempts WHERE delivery_id = $1 AND ($2::bigint IS NULL OR id > $2) ORDER BY id LIMIT $3`,
    [deliveryId, page.after ?? null, page.limit ?? null],
  );
  if (rows.length === 0) await getDelivery(q, deliveryId);
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}
