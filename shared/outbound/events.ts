/**
 * Reading events: what was enqueued, filtered by type and time, and one event with every delivery
 * made of it (its fan-out, and any resend, test or backfill).
 */
import type { Queryable } from "../db/port.js";
import { DELIVERY_COLUMNS, type Delivery } from "./deliveries.js";
import { NotFoundError } from "./errors.js";

export interface EventSummary {
  id: string;
  /** The application it was enqueued for. */
  applicationId: string;
  type: string;
  /** The `timestamp` of the body: when it happened, as the enqueuer said. */
  occurredAt: string;
  /** When it was enqueued. Time filters and the order of lists use this. */
  createdAt: Date;
}

export interface EventDetail extends EventSummary {
  /** The event's `data`, as sent. */
  data: unknown;
  /** The exact body every attempt sends (and signs). */
  body: string;
  deliveries: Delivery[];
  /** Only for an event accepted under its type's `warn` validation: its data's JSON Schema errors. */
  schemaErrors?: { path: string; message: string }[];
}

export interface EventFilter {
  type?: string;
  /** Only this application's events. */
  applicationId?: string;
  /** Enqueued at or after. */
  since?: Date;
  /** Enqueued before. */
  until?: Date;
  /** Page size. Default: 100. */
  limit?: number;
  /** The `[createdAt, id]` key of the last event of the previous page (newest first). */
  before?: [string, string];
}

interface Row {
  id: string;
  application_id: string;
  type: string;
  body: string;
  created_at: Date;
  /** created_at as PostgreSQL's text, exact to the microsecond: the page key. */
  created_key: string;
}

function summary(row: Row): EventSummary & { key: [string, string] } {
  const { timestamp } = JSON.parse(row.body) as { timestamp?: unknown };
  // A forwarded inbound event (shared/inbound/forward.ts) is the partner's own body: no timestamp of ours.
  const occurredAt = typeof timestamp === "string" ? timestamp : new Date(row.created_at).toISOString();
  return { id: row.id, applicationId: row.application_id, type: row.type, occurredAt, createdAt: row.created_at, key: [row.created_key, row.id] };
}

/** Events matching `filter`, newest first; each carries `key`, the page key to pass as `before`. */
export async function listEvents(q: Queryable, filter: EventFilter = {}): Promise<(EventSummary & { key: [string, string] })[]> {
  const { rows } = await q.query<Row>(
    `SELECT id, application_id, type, body, created_at, created_at::text AS created_key
     FROM outbound_events
     WHERE ($1::text IS NULL OR type = $1)
       AND ($7::text IS NULL OR application_id = $7)
       AND ($2::timestamptz IS NULL OR created_at >= $2)
       AND ($3::timestamptz IS NULL OR created_at < $3)
       AND ($4::timestamptz IS NULL OR (created_at, id) < ($4::timestamptz, $5::text))
     ORDER BY created_at DESC, id DESC
     LIMIT $6`,
    [filter.type ?? null, filter.since ?? null, filter.until ?? null, filter.before?.[0] ?? null, filter.before?.[1] ?? null, filter.limit ?? 100, filter.applicationId ?? null],
  );
  return rows.map(summary);
}

/** One event with its data and all its deliveries (oldest first); NotFoundError if none has this id. */
export async function getEvent(q: Queryable, id: string): Promise<EventDetail> {
  const { rows } = await q.query<Row & { schema_errors: { path: string; message: string }[] | null }>("SELECT id, application_id, type, body, created_at, created_at::text AS created_key, schema_errors FROM outbound_events WHERE id = $1", [id]);
  if (!rows[0]) throw new NotFoundError("event", id);
  const deliveries = await q.query<Delivery>(
    `SELECT ${DELIVERY_COLUMNS}
     FROM outbound_deliveries d JOIN outbound_events e ON e.id = d.event_id
     WHERE d.event_id = $1
     ORDER BY d.created_at, d.id`,
    [id],
  );
  const { key: _key, ...event } = summary(rows[0]);
  // Issue 30: the JSON Schema errors of an event accepted under its type's `warn` validation.
  const flagged = rows[0].schema_errors ? { schemaErrors: rows[0].schema_errors } : {};
  return { ...event, data: (JSON.parse(rows[0].body) as { data: unknown }).data, body: rows[0].body, deliveries: deliveries.rows, ...flagged };
}
