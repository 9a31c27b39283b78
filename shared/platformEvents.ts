/**
 * The platform's own events (alerts today): each goes to the operator, as an event of the
 * platform's application (`app_platform`, operator-only) that fans out to its subscriptions (the
 * one for ALERT_WEBHOOK_URL, and any an operator adds there); and, when it is about one
 * application's resource, a copy goes to that application, to its subscriptions that name the
 * type (`alert.*`, `alert.dead_letter`), never to `*` and never to another application's.
 *
 * The copy is an event of that application (`<id>.<application>`), so the application reads it
 * like its own events, and a delivery always belongs to its event's application.
 */
import type { Queryable } from "./db/port.js";
import { enqueue, EventConflictError, prepareEvent } from "./outbound/index.js";
import { NOTIFY_CHANNEL } from "./outbound/notify.js";
import { namesTypeSql } from "./outbound/patternSql.js";
import { PLATFORM_APPLICATION_ID } from "./tenancy/defaults.js";

export interface PlatformEvent {
  /** Stable id: raising it again changes nothing. */
  id: string;
  type: string;
  data: unknown;
  /** The application whose resource it is about (its subscriptions that name the type get a copy); none: the operator's alone. */
  applicationId?: string | null;
}

/** The id of `eventId`'s copy for `applicationId`. */
export const copyIdFor = (eventId: string, applicationId: string): string => `${eventId}.${applicationId}`;

/**
 * Raises `event` in `tx`: true when this call created it (false: raised before, or an event of
 * that id exists already with other content, which is left alone).
 */
export async function raisePlatformEvent(tx: Queryable, event: PlatformEvent, options: { maxPayloadBytes?: number } = {}): Promise<boolean> {
  let created: boolean;
  try {
    created = (await enqueue(tx, { id: event.id, type: event.type, data: event.data, applicationId: PLATFORM_APPLICATION_ID }, options)).created;
  } catch (error) {
    if (error instanceof EventConflictError) return false;
    throw error;
  }
  const app = event.applicationId;
  if (created && app && app !== PLATFORM_APPLICATION_ID) {
    const copy = prepareEvent({ id: copyIdFor(event.id, app), type: event.type, data: event.data, applicationId: app }, options);
    // Not `enqueue`: its fan-out includes `*`. An id taken already (a repeat) is left as it is.
    await tx.query(
      `WITH event AS (
         INSERT INTO outbound_events (id, type, body, application_id)
         SELECT $1, $2, $3, a.id FROM outbound_applications a WHERE a.id = $4 AND a.deleted_at IS NULL
         ON CONFLICT (id) DO NOTHING
         RETURNING id, type, application_id, body
       ), delivery AS (
         INSERT INTO outbound_deliveries (id, event_id, subscription_id)
         SELECT e.id || ':' || s.id, e.id, s.id
         FROM event e
         JOIN outbound_subscriptions s ON s.deleted_at IS NULL AND s.application_id = e.application_id AND ${namesTypeSql("s.event_types", "e.type")}
           -- A content filter applies as for any event (migration 017).
           AND (s.filter_path IS NULL OR jsonb_path_match(e.body::jsonb, s.filter_path))
         ORDER BY s.id
         RETURNING id
       )
       SELECT pg_notify($5, '') FROM (SELECT 1 FROM delivery LIMIT 1) AS any_delivery`,
      [copy.id, copy.type, copy.body, app, NOTIFY_CHANNEL],
    );
  }
  return created;
}
