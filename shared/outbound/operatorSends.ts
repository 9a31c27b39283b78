/**
 * Deliveries an operator asks for, beside the fan-out of `enqueue`: an event sent again (resend),
 * and a test event to one subscription. Each is a new delivery on the normal path (the relay sends,
 * retries and dead-letters it like any other), recorded with its `origin` and who asked.
 * (The third kind, `backfill`, is made when a subscription is created: `createSubscription`.)
 */
import { randomBytes } from "node:crypto";
import * as z from "zod/mini";
import type { Queryable } from "../db/port.js";
import { prepareEvent, type EnqueuedDelivery, type EnqueueOptions } from "./enqueue.js";
import { NotFoundError } from "./errors.js";
import { NOTIFY_CHANNEL } from "./notify.js";
import { parseOrThrow } from "./validation.js";

/** The type of a test event unless another is given. */
export const TEST_EVENT_TYPE = "webhooks.test";

export interface SendResult {
  eventId: string;
  deliveries: EnqueuedDelivery[];
}

/** The subscription asked for never had this event (or was deleted since). */
export class NotSubscribedError extends Error {
  override name = "NotSubscribedError";
  constructor(readonly eventId: string, readonly subscriptionId: string) {
    super(`Subscription ${subscriptionId} has no delivery of event ${eventId} (or it was deleted); an event is resent only to subscriptions it was sent to. Omit subscriptionId to resend to all of them.`);
  }
}

/**
 * Sends `eventId` again, delivered or not, to one of its subscriptions or to all of them (every
 * subscription that had a delivery of it and is not deleted): one new delivery each, id
 * `<event id>:<subscription id>:<resend id>`, so receivers see a new `webhook-id` and the event's
 * own id in the body. The earlier deliveries are left as they are.
 */
export async function resendEvent(
  q: Queryable,
  eventId: string,
  options: { subscriptionId?: string; requestedBy?: string } = {},
): Promise<SendResult> {
  const { rows } = await q.query<{ kind: "event" | "delivery"; id: string; subscription_id: string; status: EnqueuedDelivery["status"] }>(
    `WITH event AS (SELECT id FROM outbound_events WHERE id = $1),
     targets AS (
       SELECT DISTINCT d.subscription_id
       FROM outbound_deliveries d JOIN outbound_subscriptions s ON s.id = d.subscription_id AND s.deleted_at IS NULL
       WHERE d.event_id = $1 AND ($2::text IS NULL OR d.subscription_id = $2)
     ),
     sent AS (
       INSERT INTO outbound_deliveries (id, event_id, subscription_id, origin, requested_by)
       SELECT $1 || ':' || t.subscription_id || ':' || $3, $1, t.subscription_id, 'resend', $4
       FROM targets t
       ORDER BY t.subscription_id
       RETURNING id, subscription_id, status
     ),
     woken AS (SELECT pg_notify($5, '') FROM (SELECT 1 FROM sent LIMIT 1) AS any_sent)
     SELECT 'event' AS kind, id, NULL AS subscription_id, NULL AS status FROM event
     UNION ALL
     SELECT 'delivery', id, subscription_id, status FROM sent
     UNION ALL
     SELECT 'woken', NULL, NULL, NULL FROM woken`,
    [eventId, options.subscriptionId ?? null, `resend_${randomBytes(9).toString("base64url")}`, options.requestedBy ?? null, NOTIFY_CHANNEL],
  );
  if (!rows.some((r) => r.kind === "event")) throw new NotFoundError("event", eventId);
  const deliveries = rows.filter((r) => r.kind === "delivery").map((r) => ({ id: r.id, subscriptionId: r.subscription_id, status: r.status }));
  if (options.subscriptionId !== undefined && deliveries.length === 0) throw new NotSubscribedError(eventId, options.subscriptionId);
  return { eventId, deliveries: deliveries.sort((a, b) => a.subscriptionId.localeCompare(b.subscriptionId)) };
}

export const testEventSchema = z.strictObject({
  type: z.optional(z.string()),
  data: z.optional(z.unknown()),
});

/**
 * Sends a test event to one subscription only, whatever its event types: a new event (id
 * `test_…`, type `webhooks.test` unless `type` is given) with one delivery, origin `test`. It goes
 * through the normal path: signed, retried, dead-lettered, and waits while the subscription is paused.
 */
export async function sendTestEvent(
  q: Queryable,
  subscriptionId: string,
  input: unknown = {},
  options: EnqueueOptions & { requestedBy?: string } = {},
): Promise<SendResult> {
  const valid = parseOrThrow(testEventSchema, input ?? {}, "test event");
  const event = prepareEvent({
    id: `test_${randomBytes(12).toString("base64url")}`,
    type: valid.type ?? TEST_EVENT_TYPE,
    data: valid.data === undefined ? { message: "A test event from multicloud-webhooks.", subscriptionId } : valid.data,
  }, options);
  const { rows } = await q.query<{ id: string; status: EnqueuedDelivery["status"]; woken: string }>(
    `WITH sub AS (SELECT id, application_id FROM outbound_subscriptions WHERE id = $1 AND deleted_at IS NULL),
     event AS (
       -- The test event belongs to the subscription's application, like every delivery of it.
       INSERT INTO outbound_events (id, type, body, application_id) SELECT $2, $3, $4, sub.application_id FROM sub RETURNING id
     ),
     sent AS (
       INSERT INTO outbound_deliveries (id, event_id, subscription_id, origin, requested_by)
       SELECT event.id || ':' || $1, event.id, $1, 'test', $5 FROM event
       RETURNING id, status
     ),
     woken AS (SELECT pg_notify($6, '') FROM sent)
     SELECT id, status, (SELECT count(*) FROM woken) AS woken FROM sent`,
    [subscriptionId, event.id, event.type, event.body, options.requestedBy ?? null, NOTIFY_CHANNEL],
  );
  if (!rows[0]) throw new NotFoundError("subscription", subscriptionId);
  return { eventId: event.id, deliveries: [{ id: rows[0].id, subscriptionId, status: rows[0].status }] };
}
