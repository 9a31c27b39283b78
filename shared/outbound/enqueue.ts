/**
 * `enqueue(tx, event)`: the outbox write. Runs in the caller's transaction, so the event exists
 * exactly when the caller's business change commits; a rollback leaves nothing to send, ever.
 */
import { randomBytes } from "node:crypto";
import * as z from "zod/mini";
import type { Queryable } from "../db/port.js";
import { prepared } from "../db/prepared.js";
import { EventConflictError, OutboundValidationError, PayloadTooLargeError } from "./errors.js";
import { eventTypeProblem } from "./eventTypes.js";
import { NOTIFY_CHANNEL } from "./notify.js";
import { parseOrThrow } from "./validation.js";
import { setSpanAttributes, SPANS, withSpan } from "../telemetry/telemetry.js";

/** An event to send. `data` must be JSON (objects, arrays, strings, finite numbers, booleans, null). */
export interface OutboundEvent {
  /** Stable id of the event; enqueueing it again changes nothing. Default: a new `evt_…` id. */
  id?: string;
  /** e.g. `order.paid` */
  type: string;
  data: unknown;
  /** When it happened; goes into the body as `timestamp`. Default: now. */
  occurredAt?: Date | string;
}

export interface EnqueuedDelivery {
  /** `<event id>:<subscription id>`, sent as `webhook-id`. */
  id: string;
  subscriptionId: string;
  status: "pending" | "delivered" | "dead";
}

export interface EnqueueResult {
  eventId: string;
  /** False when the event id was already enqueued: the existing deliveries are returned unchanged. */
  created: boolean;
  deliveries: EnqueuedDelivery[];
}

export interface EnqueueOptions {
  /** Largest body accepted, in bytes. Default: 256 KiB (the platform passes MAX_PAYLOAD_BYTES). */
  maxPayloadBytes?: number;
}

export const DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024;

const eventSchema = z.strictObject({
  id: z.optional(
    z.string().check(z.regex(/^[A-Za-z0-9_.-]{1,200}$/, "must be 1 to 200 letters, digits, _, - or . (no ':', it separates the delivery id)")),
  ),
  type: z.string().check(z.superRefine((t, ctx) => {
    const problem = eventTypeProblem(t);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  })),
  data: z.optional(z.unknown()), // required, checked below with a clearer message than zod's
  occurredAt: z.optional(z.union([z.date(), z.iso.datetime({ offset: true })])),
});

/** The path of the first value JSON cannot carry faithfully, or null. */
function nonJsonPath(value: unknown, path: string, seen: Set<object>): string | null {
  // PostgreSQL's jsonb (used to compare a repeated event) cannot hold U+0000.
  if (typeof value === "string") return value.includes("\u0000") ? `${path} (the NUL character \\u0000 is not supported)` : null;
  if (value === null || typeof value === "boolean") return null;
  if (typeof value === "number") return Number.isFinite(value) ? null : `${path} (${value} is not a JSON number)`;
  if (typeof value !== "object") return `${path} (a ${typeof value} is not JSON)`;
  if (seen.has(value)) return `${path} (circular reference)`;
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const bad = nonJsonPath(value[i], `${path}[${i}]`, seen);
        if (bad) return bad;
      }
      return null;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) return `${path} (a ${proto?.constructor?.name ?? "non-plain"} object is not JSON; convert it first)`;
    for (const [key, v] of Object.entries(value)) {
      if (key.includes("\u0000")) return `${path} (a key contains the NUL character \\u0000, which is not supported)`;
      const bad = nonJsonPath(v, `${path}.${key}`, seen);
      if (bad) return bad;
    }
    return null;
  } finally {
    seen.delete(value);
  }
}

/** Validates an event and builds the exact body every attempt will send. Throws OutboundValidationError. */
export function prepareEvent(event: unknown, options: EnqueueOptions = {}): { id: string; type: string; body: string; dataJson: string } {
  const valid = parseOrThrow(eventSchema, event, "event");
  if (valid.data === undefined) {
    throw new OutboundValidationError("Invalid event: data: required; send a JSON value (use null for none).", [{ path: "data", message: "required" }]);
  }
  const bad = nonJsonPath(valid.data, "data", new Set());
  if (bad) throw new OutboundValidationError(`Invalid event: ${bad}.`, [{ path: bad.split(" ")[0]!, message: bad.slice(bad.indexOf(" ") + 1) }]);
  const id = valid.id ?? `evt_${randomBytes(15).toString("base64url")}`;
  const occurred = valid.occurredAt === undefined ? new Date() : new Date(valid.occurredAt);
  const dataJson = JSON.stringify(valid.data);
  const body = `{"id":${JSON.stringify(id)},"type":${JSON.stringify(valid.type)},"timestamp":${JSON.stringify(occurred.toISOString())},"data":${dataJson}}`;
  const size = Buffer.byteLength(body, "utf8");
  const limit = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  if (size > limit) throw new PayloadTooLargeError(size, limit);
  return { id, type: valid.type, body, dataJson };
}

// Enqueue's statements, prepared once per connection of our own pool (shared/db/prepared.ts).
const INSERT_EVENT = prepared("outbound_insert_event", `INSERT INTO outbound_events (id, type, body) VALUES ($1, $2, $3)
   ON CONFLICT (id) DO NOTHING
   RETURNING id`);
const SAME_EVENT = prepared("outbound_same_event", `SELECT type = $2 AND (body::jsonb -> 'data') = $3::jsonb AS same FROM outbound_events WHERE id = $1`);
const FAN_OUT = prepared("outbound_fan_out", `INSERT INTO outbound_deliveries (id, event_id, subscription_id)
   SELECT $1 || ':' || s.id, $1, s.id
   FROM outbound_subscriptions s
   WHERE EXISTS (
     SELECT 1 FROM unnest(s.event_types) AS p(pattern)
     WHERE p.pattern = $2
        OR p.pattern = '*'
        OR (right(p.pattern, 2) = '.*' AND starts_with($2, left(p.pattern, -1)))
   )
   ORDER BY s.id
   RETURNING id, subscription_id AS "subscriptionId", status`);
const DELIVERIES_OF = prepared("outbound_deliveries_of", `SELECT id, subscription_id AS "subscriptionId", status FROM outbound_deliveries WHERE event_id = $1 ORDER BY subscription_id`);
const NOTIFY = prepared("outbound_notify", "SELECT pg_notify($1, '')");

/**
 * Writes `event` in the caller's transaction and fans it out: one delivery per subscription whose
 * patterns match its type, whatever the subscription's health (a disabled endpoint's deliveries are
 * kept until it recovers). Idempotent by event id: the same id again returns the existing rows and
 * changes nothing; the same id with another type or payload throws EventConflictError.
 * Relays are woken by NOTIFY when the transaction commits.
 *
 * `tx` is any `query(text, values)` client inside an open transaction: our `Transaction`, a
 * `pg.PoolClient` after `BEGIN`, … Outside a transaction it still works, as its own unit.
 * @example
 * await db.transaction(async (tx) => {
 *   await tx.query("UPDATE orders SET status = 'paid' WHERE id = $1", [orderId]);
 *   await enqueue(tx, { id: `order-${orderId}-paid`, type: "order.paid", data: { orderId } });
 * });
 */
export function enqueue(tx: Queryable, event: OutboundEvent, options: EnqueueOptions = {}): Promise<EnqueueResult> {
  return withSpan(SPANS.outboxEnqueue, { "webhooks.event.type": typeof event?.type === "string" ? event.type.slice(0, 100) : undefined }, async (span) => {
    const result = await enqueueInTransaction(tx, event, options);
    setSpanAttributes(span, { "webhooks.event.id": result.eventId, "webhooks.event.created": result.created, "webhooks.deliveries": result.deliveries.length });
    return result;
  });
}

async function enqueueInTransaction(tx: Queryable, event: OutboundEvent, options: EnqueueOptions): Promise<EnqueueResult> {
  const checked = prepareEvent(event, options);
  const inserted = await tx.query<{ id: string }>(
    INSERT_EVENT,
    [checked.id, checked.type, checked.body],
  );
  if (inserted.rows.length === 0) {
    // Same id seen before: equal type and data (as JSON values) is a repeat, anything else a conflict.
    const same = await tx.query<{ same: boolean }>(
      SAME_EVENT,
      [checked.id, checked.type, checked.dataJson],
    );
    if (!same.rows[0]?.same) throw new EventConflictError(checked.id);
    return { eventId: checked.id, created: false, deliveries: await deliveriesOf(tx, checked.id) };
  }
  const { rows } = await tx.query<EnqueuedDelivery>(
    FAN_OUT,
    [checked.id, checked.type],
  );
  // Delivered by PostgreSQL only if and when the caller's transaction commits.
  if (rows.length > 0) await tx.query(NOTIFY, [NOTIFY_CHANNEL]);
  return { eventId: checked.id, created: true, deliveries: rows };
}

async function deliveriesOf(q: Queryable, eventId: string): Promise<EnqueuedDelivery[]> {
  const { rows } = await q.query<EnqueuedDelivery>(
    DELIVERIES_OF,
    [eventId],
  );
  return rows;
}
