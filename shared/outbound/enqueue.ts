/**
 * `enqueue(tx, event)`: the outbox write. Runs in the caller's transaction, so the event exists
 * exactly when the caller's business change commits; a rollback leaves nothing to send, ever.
 */
import { randomBytes } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import * as z from "zod/mini";
import type { Queryable } from "../db/port.js";
import { prepared } from "../db/prepared.js";
import { EventConflictError, NotFoundError, OutboundValidationError, PayloadTooLargeError } from "./errors.js";
import { eventTypeProblem } from "./eventTypes.js";
import { NOTIFY_CHANNEL } from "./notify.js";
import { parseOrThrow } from "./validation.js";
import { confirmedValidators, currentValidators, SchemaValidationError, schemaErrorsOf, validatorsOf } from "./catalogue.js";
import type { Issue } from "./errors.js";
import { activeTraceparent, setSpanAttributes, SPANS, withSpan } from "../telemetry/telemetry.js";
import { DEFAULT_APPLICATION_ID } from "../tenancy/defaults.js";

/** An event to send. `data` must be JSON (objects, arrays, strings, finite numbers, booleans, null). */
export interface OutboundEvent {
  /** Stable id of the event; enqueueing it again changes nothing. Default: a new `evt_…` id. */
  id?: string;
  /** e.g. `order.paid` */
  type: string;
  data: unknown;
  /** When it happened; goes into the body as `timestamp`. Default: now. */
  occurredAt?: Date | string;
  /**
   * The application it is for (shared/tenancy/applications.ts): it fans out to that application's
   * subscriptions only. Default: the default application.
   */
  applicationId?: string;
  /**
   * Ordering key (e.g. the aggregate's id): for subscriptions created with `ordered: true`, the
   * deliveries of one key go one at a time, in enqueue order (docs/outbound.md#ordered-delivery).
   * 1 to 200 letters, digits or `_ . - : / @ = +`. Default: none (never ordered).
   */
  orderingKey?: string;
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
  /**
   * Only when its type's catalogue entry validates with `warn` and the data did not match: the JSON
   * Schema errors, also kept on the event (accepted all the same). Under `enforce` the call throws
   * SchemaValidationError instead and writes nothing.
   */
  schemaErrors?: Issue[];
  deliveries: EnqueuedDelivery[];
}

export interface EnqueueOptions {
  /** Largest body accepted, in bytes. Default: 256 KiB (the platform passes MAX_PAYLOAD_BYTES). */
  maxPayloadBytes?: number;
}

export const DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024;

/** What an ordering key may be: printable, no spaces, short enough for an index and a URL segment (encoded). */
export const ORDERING_KEY = /^[A-Za-z0-9_.:/@=+-]{1,200}$/;

export const eventSchema = z.strictObject({
  id: z.optional(
    z.string().check(z.regex(/^[A-Za-z0-9_.-]{1,200}$/, "must be 1 to 200 letters, digits, _, - or . (no ':', it separates the delivery id)")),
  ),
  type: z.string().check(z.superRefine((t, ctx) => {
    const problem = eventTypeProblem(t);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  })),
  data: z.optional(z.unknown()), // required, checked below with a clearer message than zod's
  occurredAt: z.optional(z.union([z.date(), z.iso.datetime({ offset: true })])),
  applicationId: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  orderingKey: z.optional(z.string().check(z.regex(ORDERING_KEY, "must be 1 to 200 letters, digits, _, ., -, :, /, @, = or + (e.g. the aggregate's id)"))),
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
export function prepareEvent(event: unknown, options: EnqueueOptions = {}): { id: string; type: string; body: string; dataJson: string; data: unknown; applicationId: string; orderingKey: string | null } {
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
  return { id, type: valid.type, body, dataJson, data: valid.data, applicationId: valid.applicationId ?? DEFAULT_APPLICATION_ID, orderingKey: valid.orderingKey ?? null };
}

// Enqueue's statements, prepared once per connection of our own pool (shared/db/prepared.ts).

/**
 * A subscription `s` whose patterns match the event `e`'s type and whose content filter, if it has
 * one (migration 017, shared/outbound/filters.ts), matches its body. Without a filter the cost is
 * one NULL test: `OR` evaluates its arms in order, so the body is never parsed for it.
 */
const MATCHES = `EXISTS (
       SELECT 1 FROM unnest(s.event_types) AS p(pattern)
       WHERE p.pattern = e.type
          OR p.pattern = '*'
          OR (right(p.pattern, 2) = '.*' AND starts_with(e.type, left(p.pattern, -1)))
     )
     AND (s.filter_path IS NULL OR jsonb_path_match(e.body::jsonb, s.filter_path))`;

/** No event has an ordering key: no delivery is ordered, so the plain fan-out (what it was before ordered delivery). */
const PLAIN_FANOUT = `fanned AS (
     INSERT INTO outbound_deliveries (id, event_id, subscription_id)
     SELECT e.id || ':' || s.id, e.id, s.id
     FROM inserted e
     JOIN outbound_subscriptions s ON s.deleted_at IS NULL AND s.application_id = e.application_id AND ${MATCHES}
     ORDER BY e.id, s.id
     RETURNING id, event_id, subscription_id, status
   )`;

/**
 * Ordered delivery (migration 013): each (subscription, key) hands out its next places under its
 * row's lock, held to commit, so places follow commit order; keys in order, so two enqueues never
 * deadlock on them. No row for events without a key or unordered subscriptions. `perKey` is the
 * number of places one key takes in this statement.
 */
const keysUpsert = (perKey: string) => `keyed AS (
     INSERT INTO outbound_ordering_keys AS k (subscription_id, ordering_key, last_seq, head_seq)
     SELECT m.subscription_id, m.ordering_key, ${perKey}, 1
     FROM matched m WHERE m.ordering_key IS NOT NULL
     GROUP BY m.subscription_id, m.ordering_key
     ORDER BY m.subscription_id, m.ordering_key
     ON CONFLICT (subscription_id, ordering_key) DO UPDATE SET last_seq = k.last_seq + excluded.last_seq, updated_at = now()
     RETURNING k.subscription_id, k.ordering_key, k.last_seq, k.head_seq
   )`;

/** The deliveries of `placed` (with seq and head_seq; seq NULL: not ordered, due now). Only a key's head is due; the others wait at 'infinity', past every claim's index range. */
const PLACED_FANOUT = `fanned AS (
     INSERT INTO outbound_deliveries (id, event_id, subscription_id, ordering_key, ordering_seq, next_attempt_at)
     SELECT p.event_id || ':' || p.subscription_id, p.event_id, p.subscription_id, p.ordering_key, p.seq,
            CASE WHEN p.seq IS NULL OR p.seq = p.head_seq THEN now() ELSE 'infinity' END
     FROM placed p
     ORDER BY p.event_id, p.subscription_id
     RETURNING id, event_id, subscription_id, status
   )`;

/**
 * One event with a key: it matches a few subscriptions and takes one place per key, the key's
 * new last_seq; a plain join finds it (no ranks, no join back to the input).
 */
const KEYED_FANOUT_ONE = `matched AS (
     SELECT e.id AS event_id, s.id AS subscription_id, CASE WHEN s.ordered THEN e.ordering_key END AS ordering_key
     FROM inserted e
     JOIN outbound_subscriptions s ON s.deleted_at IS NULL AND s.application_id = e.application_id AND ${MATCHES}
   ),
   ${keysUpsert("1")},
   placed AS (
     SELECT m.event_id, m.subscription_id, m.ordering_key, k.last_seq AS seq, k.head_seq
     FROM matched m LEFT JOIN keyed k ON k.subscription_id = m.subscription_id AND k.ordering_key = m.ordering_key
   ),
   ${PLACED_FANOUT}`;

/**
 * A batch with keys: each delivery's place is the key's new last_seq less the deliveries this
 * statement added to it, plus its rank among them in the caller's order (pos). The keys' rows are
 * found through one jsonb object built once (a binary search per delivery): joining the two CTEs
 * instead got a nested loop (the generic plan guesses 10 events a batch) that recomputed a window
 * per delivery, quadratic in the batch (6 times the baseline's database CPU at 500 per batch).
 */
const KEYED_FANOUT_MANY = `matched AS (
     SELECT e.id AS event_id, s.id AS subscription_id, CASE WHEN s.ordered THEN e.ordering_key END AS ordering_key, i.pos
     FROM inserted e
     JOIN input i ON i.id = e.id
     JOIN outbound_subscriptions s ON s.deleted_at IS NULL AND s.application_id = e.application_id AND ${MATCHES}
   ),
   ${keysUpsert("count(*)")},
   places AS (
     SELECT coalesce(jsonb_object_agg(k.subscription_id || ' ' || k.ordering_key, jsonb_build_array(k.last_seq, k.head_seq)), '{}') AS of FROM keyed k
   ),
   placed AS (
     SELECT m.event_id, m.subscription_id, m.ordering_key,
            (m.slot ->> 0)::bigint
              - count(*) OVER (PARTITION BY m.subscription_id, m.ordering_key)
              + row_number() OVER (PARTITION BY m.subscription_id, m.ordering_key ORDER BY m.pos) AS seq,
            (m.slot ->> 1)::bigint AS head_seq
     -- The uncorrelated subquery runs once (an InitPlan); slot is NULL without a key.
     FROM (SELECT m.*, (SELECT p.of FROM places p) -> (m.subscription_id || ' ' || m.ordering_key) AS slot FROM matched m) m
   ),
   ${PLACED_FANOUT}`;

/**
 * The whole outbox write in one statement: the new events, their fan-out (one delivery per
 * subscription whose patterns match the type) and the NOTIFY that wakes relays at commit. One
 * round trip instead of three per event, and atomic even when the caller runs it outside a
 * transaction (an event never exists without its deliveries). Events whose id exists already are
 * left alone and not returned; the caller compares them (a repeat, or a conflict).
 * Input is sorted by id, so two transactions enqueueing overlapping batches take their unique-key
 * locks in the same order and cannot deadlock on each other.
 *
 * The fan-out's shape is chosen per call by what the events carry (the results are the same): the
 * plain one when no event has an ordering key, so the common case pays nothing for ordered
 * delivery (bench/enqueue.ts measures it against the code before it); otherwise the keys' upsert
 * and places, for one event or for a batch. `checkApplications`: see `missing`; `flagged`: some
 * event carries the JSON Schema errors its type's `warn` validation found (its last parameter).
 */
const enqueueStatement = (input: string, fanout: string, checkApplications: boolean, keyed: boolean, flagged: boolean) => `WITH input AS (
     ${input}
   ),
   -- The catalogue's revision, when it moved since the validators this process applied were read
   -- (shared/outbound/catalogue.ts): the statement writes nothing, and the caller validates again.
   stale AS (
     SELECT token FROM outbound_catalogue_revision WHERE token <> $6
   ),${checkApplications ? `
   -- Events for an application that is not live (no foreign key: migration 014 says why). One is
   -- enough for the statement to write nothing at all, so a caller outside a transaction never
   -- commits part of a batch it was told failed. Not looked up for the default application, which
   -- cannot be deleted: single-tenant enqueues pay nothing for applications.
   missing AS (
     SELECT i.id, i.application_id FROM input i WHERE NOT EXISTS (SELECT 1 FROM outbound_applications a WHERE a.id = i.application_id AND a.deleted_at IS NULL)
   ),` : ""}
   inserted AS (
     INSERT INTO outbound_events (id, type, body, application_id${keyed ? ", ordering_key" : ""}${flagged ? ", schema_errors" : ""})
     SELECT i.id, i.type, i.body, i.application_id${keyed ? ", i.ordering_key" : ""}${flagged ? ", i.schema_errors::jsonb" : ""} FROM input i
     WHERE NOT EXISTS (SELECT 1 FROM stale)${checkApplications ? `
       AND NOT EXISTS (SELECT 1 FROM missing)` : ""}
     ON CONFLICT (id) DO NOTHING
     RETURNING id, type, application_id, body${keyed ? ", ordering_key" : ""}
   ),
   ${fanout},
   -- Delivered by PostgreSQL only if and when the transaction commits; one per statement is enough.
   woken AS (
     SELECT pg_notify($4, '') FROM (SELECT 1 FROM fanned LIMIT 1) AS any_delivery
   )
   SELECT 'event' AS kind, id AS event_id, NULL AS id, NULL AS subscription_id, NULL AS status FROM inserted
   UNION ALL
   SELECT 'delivery', event_id, id, subscription_id, status FROM fanned
   UNION ALL
   SELECT 'notified', NULL, NULL, NULL, NULL FROM woken
   UNION ALL
   SELECT 'stale_catalogue', token, NULL, NULL, NULL FROM stale${checkApplications ? `
   UNION ALL
   SELECT 'no_application', id, application_id, NULL, NULL FROM missing` : ""}`;
/**
 * One event: plain parameters, not arrays. PostgreSQL re-plans a prepared statement for every run
 * while the plan for its actual values looks cheaper than the generic one, which a one-element
 * array always does (the generic plan guesses 100 elements): planning this CTE then cost more
 * than running it (measured: 210 µs of server CPU per event with an array, 78 with parameters).
 * $6 is the catalogue revision; $7 (the ordering key) only in the keyed shapes, and the schema
 * errors (after it) only in the flagged ones: a parameter the text never uses has no type.
 */
const oneInput = (keyed: boolean, flagged: boolean) => `SELECT $1::text AS id, $2::text AS type, $3::text AS body, $5::text AS application_id${keyed ? ", $7::text AS ordering_key" : ""}${flagged ? `, $${keyed ? 8 : 7}::text AS schema_errors` : ""}`;
const manyInput = (keyed: boolean, flagged: boolean) => {
  const columns = ["id", "type", "body", "application_id", ...(keyed ? ["ordering_key"] : []), ...(flagged ? ["schema_errors"] : [])];
  const params = ["$1", "$2", "$3", "$5", ...(keyed ? ["$7"] : []), ...(flagged ? [`$${keyed ? 8 : 7}`] : [])].map((p) => `${p}::text[]`);
  return `SELECT ${columns.map((c) => `i.${c}`).join(", ")}${keyed ? ", i.pos" : ""}
     FROM unnest(${params.join(", ")})${keyed ? " WITH ORDINALITY" : ""} AS i(${columns.join(", ")}${keyed ? ", pos" : ""})
     ORDER BY i.id`;
};
/**
 * The statements by one event or many, checked applications, keyed, flagged: `_checked` for
 * applications other than the default one, `_keyed` when an event has an ordering key,
 * `_flagged` when an event carries schema errors (validation `warn`).
 */
const ENQUEUE = new Map<string, string>();
for (const one of [true, false]) for (const checked of [false, true]) for (const keyed of [false, true]) for (const flagged of [false, true]) {
  const name = `outbound_enqueue_${one ? "one" : "many"}${checked ? "_checked" : ""}${keyed ? "_keyed" : ""}${flagged ? "_flagged" : ""}`;
  const fanout = !keyed ? PLAIN_FANOUT : one ? KEYED_FANOUT_ONE : KEYED_FANOUT_MANY;
  ENQUEUE.set(`${one}|${checked}|${keyed}|${flagged}`, prepared(name, enqueueStatement(one ? oneInput(keyed, flagged) : manyInput(keyed, flagged), fanout, checked, keyed, flagged)));
}
const SAME_EVENT = prepared("outbound_same_event", `SELECT type = $2 AND (body::jsonb -> 'data') = $3::jsonb AND application_id = $4 AND ordering_key IS NOT DISTINCT FROM $5 AS same FROM outbound_events WHERE id = $1`);
const DELIVERIES_OF = prepared("outbound_deliveries_of", `SELECT id, subscription_id AS "subscriptionId", status FROM outbound_deliveries WHERE event_id = $1 ORDER BY subscription_id`);

/** Most events one `enqueueMany` call takes: one statement carries them all. */
export const MAX_EVENTS_PER_BATCH = 1000;

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
    const [result] = await write(tx, [prepareEvent(event, options)], false);
    await keepTraceContext(tx, [result!]);
    setSpanAttributes(span, { "webhooks.event.id": result!.eventId, "webhooks.event.created": result!.created, "webhooks.deliveries": result!.deliveries.length });
    return result!;
  });
}

/**
 * `enqueue` for several events at once, in one statement: what a transaction that produces many
 * events (an import, a batch job) should call. All are validated before anything is written; one
 * invalid event rejects the call, naming it by its index (`events[3]: …`), and writes nothing.
 * Results come in the order of `events`. An id repeated within the batch must carry the same type
 * and data (its later occurrences are reported `created: false`), as across calls.
 * @example
 * await db.transaction((tx) => enqueueMany(tx, orders.map((o) => ({ id: `order-${o.id}-paid`, type: "order.paid", data: o }))));
 */
export function enqueueMany(tx: Queryable, events: readonly OutboundEvent[], options: EnqueueOptions = {}): Promise<EnqueueResult[]> {
  if (!Array.isArray(events)) return Promise.reject(new OutboundValidationError("Invalid events: expected an array of events."));
  if (events.length > MAX_EVENTS_PER_BATCH) {
    return Promise.reject(new OutboundValidationError(`Invalid events: ${events.length} events in one batch, over the limit of ${MAX_EVENTS_PER_BATCH}; split them into several calls (in the same transaction if they must commit together).`));
  }
  return withSpan(SPANS.outboxEnqueue, { "webhooks.events": events.length }, async (span) => {
    const checked = events.map((event, index) => {
      try {
        return prepareEvent(event, options);
      } catch (error) {
        throw inBatch(error, index);
      }
    });
    const results = await write(tx, checked, true);
    await keepTraceContext(tx, results);
    setSpanAttributes(span, { "webhooks.deliveries": results.reduce((n, r) => n + (r.created ? r.deliveries.length : 0), 0) });
    return results;
  });
}

const KEEP_TRACE_CONTEXT = prepared("outbound_keep_trace_context", "UPDATE outbound_events SET traceparent = $2 WHERE id = ANY ($1::text[]) AND traceparent IS NULL");

/**
 * Stores the enqueue span's W3C trace context on the events it created, in the caller's
 * transaction, so the relay's attempts continue the trace (shared/outbound/sql/claimDeliveries.ts).
 * Only when an SDK traces this process: without one there is no active span and no statement,
 * and the enqueue costs what it did (a second statement rather than a column in every variant of
 * the prepared insert).
 */
async function keepTraceContext(tx: Queryable, results: readonly EnqueueResult[]): Promise<void> {
  const traceparent = activeTraceparent();
  if (!traceparent) return;
  const created = results.filter((r) => r.created).map((r) => r.eventId);
  if (created.length) await tx.query(KEEP_TRACE_CONTEXT, [created, traceparent]);
}

/** A validation error of one event of a batch, located in the batch. */
function inBatch(error: unknown, index: number): unknown {
  if (error instanceof PayloadTooLargeError) {
    return Object.assign(new PayloadTooLargeError(error.sizeBytes, error.limitBytes), { message: `events[${index}]: ${error.message}` });
  }
  if (error instanceof OutboundValidationError) {
    const issues = error.issues.map((issue) => ({ path: issue.path === "(root)" ? `[${index}]` : `[${index}].${issue.path}`, message: issue.message }));
    if (error instanceof SchemaValidationError) return new SchemaValidationError(`events[${index}]: ${error.message}`, issues);
    return new OutboundValidationError(`events[${index}]: ${error.message}`, issues, { cause: error });
  }
  return error;
}

type Checked = ReturnType<typeof prepareEvent>;

/** `located`: errors name the event by its index (`events[3]: …`), as enqueueMany's do. */
async function write(tx: Queryable, events: Checked[], located: boolean): Promise<EnqueueResult[]> {
  if (events.length === 0) return [];
  // An id twice in one batch is written once; the repeat must be the same event (data compared as
  // a JSON value, key order aside, as PostgreSQL compares a repeat across calls).
  const unique = new Map<string, { event: Checked; index: number }>();
  for (const [index, event] of events.entries()) {
    const first = unique.get(event.id);
    if (!first) unique.set(event.id, { event, index });
    else if (first.event.type !== event.type || first.event.orderingKey !== event.orderingKey || first.event.applicationId !== event.applicationId || !isDeepStrictEqual(JSON.parse(first.event.dataJson), JSON.parse(event.dataJson))) {
      throw new EventConflictError(event.id, `events[${first.index}] and events[${index}] share the id ${event.id} with a different type or payload; give each event its own id.`);
    }
  }
  const batch = [...unique.values()].map((u) => u.event);
  const checked = batch.some((e) => e.applicationId !== DEFAULT_APPLICATION_ID);
  const keyed = batch.some((e) => e.orderingKey !== null);
  const one = batch.length === 1;
  let validators = currentValidators();
  let rows: { kind: "event" | "delivery" | "notified" | "no_application" | "stale_catalogue"; event_id: string; id: string; subscription_id: string; status: EnqueuedDelivery["status"] }[];
  let errors: (Issue[] | null)[];
  for (let attempt = 0; ; attempt++) {
    // The catalogue's validation (issue 30), before anything is written: `enforce` throws here,
    // once the validators are known to be the database's current ones.
    const validate = (v: typeof validators) => batch.map((e) => {
      try {
        return schemaErrorsOf(v, e.applicationId, e.type, e.data);
      } catch (error) {
        throw located ? inBatch(error, events.indexOf(e)) : error;
      }
    });
    try {
      errors = validate(validators);
    } catch {
      validators = await confirmedValidators(tx, validators);
      errors = validate(validators);
    }
    const flagged = errors.some((e) => e !== null);
    const text = ENQUEUE.get(`${one}|${checked}|${keyed}|${flagged}`)!;
    const values: unknown[] = one
      ? [batch[0]!.id, batch[0]!.type, batch[0]!.body, NOTIFY_CHANNEL, batch[0]!.applicationId, validators?.token ?? ""]
      : [batch.map((e) => e.id), batch.map((e) => e.type), batch.map((e) => e.body), NOTIFY_CHANNEL, batch.map((e) => e.applicationId), validators?.token ?? ""];
    if (keyed) values.push(one ? batch[0]!.orderingKey : batch.map((e) => e.orderingKey));
    if (flagged) values.push(one ? JSON.stringify(errors[0]) : errors.map((e) => (e ? JSON.stringify(e) : null)));
    ({ rows } = await tx.query<(typeof rows)[number]>(text, values));
    // The statement wrote nothing: the catalogue changed since its validators were read.
    const stale = rows.find((r) => r.kind === "stale_catalogue");
    if (!stale) break;
    if (attempt >= 5) throw new Error("The event catalogue kept changing while events were enqueued; enqueue again.");
    validators = await validatorsOf(tx, stale.event_id);
  }
  // The statement wrote nothing (see `missing`).
  const orphan = rows.find((r) => r.kind === "no_application");
  if (orphan) throw new NotFoundError("application", orphan.id);
  const flags = new Map(batch.map((e, i) => [e.id, errors[i]!]));
  const created = new Map<string, EnqueuedDelivery[]>();
  for (const row of rows) if (row.kind === "event") created.set(row.event_id, []);
  for (const row of rows) {
    if (row.kind === "delivery") created.get(row.event_id)!.push({ id: row.id, subscriptionId: row.subscription_id, status: row.status });
  }
  const reported = new Set<string>();
  const results: EnqueueResult[] = [];
  for (const event of events) {
    let deliveries = created.get(event.id);
    if (!deliveries) {
      // The id existed before this call: equal type and data (as JSON values) is a repeat, anything
      // else a conflict. Retention may have deleted that event between the insert that skipped it
      // and this look: then it is new after all, and written as such.
      const existing = await repeatOf(tx, event);
      if (existing) {
        reported.add(event.id);
        deliveries = existing;
      } else {
        deliveries = (await write(tx, [event], false))[0]!.deliveries;
      }
      created.set(event.id, deliveries);
    }
    // Created by this call on its first occurrence only; a later one in the batch is a repeat of it.
    const schemaErrors = reported.has(event.id) ? null : flags.get(event.id);
    results.push({ eventId: event.id, created: !reported.has(event.id), deliveries, ...(schemaErrors ? { schemaErrors } : {}) });
    reported.add(event.id);
  }
  return results;
}

/** The deliveries of an existing event `event` repeats; null if no event has its id (any more). */
async function repeatOf(tx: Queryable, event: Checked): Promise<EnqueuedDelivery[] | null> {
  const same = await tx.query<{ same: boolean }>(SAME_EVENT, [event.id, event.type, event.dataJson, event.applicationId, event.orderingKey]);
  if (same.rows.length === 0) return null;
  if (!same.rows[0]!.same) throw new EventConflictError(event.id);
  const { rows } = await tx.query<EnqueuedDelivery>(DELIVERIES_OF, [event.id]);
  return rows;
}
