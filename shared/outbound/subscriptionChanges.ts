/**
 * What an operator changes on a subscription after creating it: its settings (edit), whether it is
 * sent to (pause, resume), and whether it exists (delete). What each does to deliveries:
 *
 * | change | pending deliveries | a delivery in flight |
 * |---|---|---|
 * | edit | take the new URL, headers and maximum at their next attempt | finishes with the old ones |
 * | pause | kept, not attempted until resumed | finishes; its outcome is applied (a retry waits) |
 * | resume | due at once | – |
 * | delete | cancelled (status `cancelled`, kept as history) | finishes; its outcome is logged (stale), not applied: cancelled, never retried |
 */
import * as z from "zod/mini";
import type { Queryable } from "../db/port.js";
import type { DestinationPolicy } from "./destinationPolicy.js";
import { NotFoundError, OutboundValidationError } from "./errors.js";
import { NOTIFY_CHANNEL } from "./notify.js";
import { destinationFor, storedAuthFor, subscriptionInputSchema, toSubscription, type Subscription, type SubscriptionRow } from "./subscriptions.js";
import type { AuthInput } from "./endpointAuth/config.js";
import { MAX_HEADER_ATTRIBUTES, type DestinationInput } from "./destinations/config.js";
import { parseOrThrow } from "./validation.js";
import { filterToJsonPath } from "./filters.js";
import { checkPatternsAgainstCatalogue } from "./catalogue.js";
import { checkTransformation } from "./transformations.js";
import { sealHeaders } from "../crypto/subscriptionSecrets.js";

/**
 * Fields an edit may change, and their columns. Fixed here: SQL is never built from input, only
 * from this table. `secrets` have their own operation (rotation); `ordered` is set at creation.
 */
const EDITABLE: Record<string, string> = {
  url: "url",
  // Replaced whole (credentials included), like auth; with the `url` column (destinationFor).
  destination: "destination",
  eventTypes: "event_types",
  description: "description",
  maxAttempts: "max_attempts",
  headers: "headers",
  maxInFlight: "max_in_flight",
  rateLimitPerSecond: "rate_limit_per_second",
  attemptTimeoutMs: "attempt_timeout_ms",
  filter: "filter",
  transformation: "transformation",
  // Replaced whole (secret part included: that is how it is rotated), or removed with null.
  auth: "auth",
  sendTraceparent: "send_traceparent",
};
const CAST: Record<string, string> = { event_types: "::text[]", headers: "::jsonb", filter: "::jsonb", auth: "::jsonb", send_traceparent: "::bool" };
/** Fields that may be set to null: back to the default (a null filter: every event of its types). */
const NULLABLE = new Set(["description", "maxAttempts", "rateLimitPerSecond", "attemptTimeoutMs", "filter", "transformation", "auth"]);

/** The edit schema: every editable field of the creation schema, optional, some nullable. */
function editSchema() {
  const shape: Record<string, z.core.$ZodType> = {};
  for (const [field, schema] of Object.entries(subscriptionInputSchema.shape)) {
    if (!(field in EDITABLE)) continue;
    const inner = schema instanceof z.ZodMiniOptional ? (schema as z.ZodMiniOptional).def.innerType : schema;
    shape[field] = z.optional(NULLABLE.has(field) ? z.nullable(inner) : inner);
  }
  return z.strictObject(shape).check(z.refine((v) => Object.keys(v).length > 0, "send at least one field to change"));
}
let cachedEditSchema: ReturnType<typeof editSchema> | undefined;

/** What `updateSubscription` accepts (built once, from the creation schema). */
export function subscriptionChangeSchema(): ReturnType<typeof editSchema> {
  return (cachedEditSchema ??= editSchema());
}

/**
 * Changes the given fields (the others stay). Pending deliveries use the new settings from their
 * next attempt; one in flight finishes with the old. A new URL is a new endpoint: its health
 * starts afresh (active, no failures) and its waiting deliveries are due at once.
 * @example
 * await updateSubscription(db, "sub_…", { url: "https://new.example/hooks", headers: { "x-api-key": "…" } });
 */
export async function updateSubscription(
  q: Queryable,
  id: string,
  input: unknown,
  options: { destinationPolicy?: Pick<DestinationPolicy, "checkHost"> } = {},
): Promise<Subscription & { warnings?: string[] }> {
  const valid = parseOrThrow(subscriptionChangeSchema(), input, "subscription change") as Record<string, unknown>;
  // A new url or destination (issue 31): which kind, its settings, its credentials sealed for this id.
  // `ordered` is the subscription's (set at creation): a queue destination must keep its order.
  const ordered = valid.destination !== undefined && (valid.destination as DestinationInput).kind !== "http"
    ? (await q.query<{ ordered: boolean }>("SELECT ordered FROM outbound_subscriptions WHERE id = $1 AND deleted_at IS NULL", [id])).rows[0]?.ordered ?? false
    : false;
  const target = valid.destination !== undefined || typeof valid.url === "string"
    ? destinationFor(id, { url: valid.url as string | undefined, destination: valid.destination as DestinationInput | undefined, auth: valid.auth as AuthInput | null | undefined, headers: valid.headers as Record<string, string> | undefined, ordered }, options.destinationPolicy)
    : null;
  if (!target && ((valid.auth !== undefined && valid.auth !== null) || valid.headers !== undefined)) await checkAgainstCurrentDestination(q, id, valid);
  // New patterns are checked against the catalogue of the subscription's application (issue 30).
  if (typeof valid.transformation === "string") await checkTransformation(valid.transformation);
  let warnings: string[] = [];
  // Sealed for this id; a client certificate is checked, a token URL passes the destination policy.
  const auth = valid.auth ? storedAuthFor(id, valid.auth as AuthInput, options.destinationPolicy) : null;
  if (Array.isArray(valid.eventTypes)) {
    const { rows: owner } = await q.query<{ application_id: string }>("SELECT application_id FROM outbound_subscriptions WHERE id = $1 AND deleted_at IS NULL", [id]);
    if (!owner[0]) throw new NotFoundError("subscription", id);
    warnings = await checkPatternsAgainstCatalogue(q, valid.eventTypes as string[], owner[0].application_id);
  }
  const sets: string[] = [];
  const values: unknown[] = [id];
  for (const [field, value] of Object.entries(valid)) {
    if (field === "url" || field === "destination") continue; // below, together
    const column = EDITABLE[field]!;
    // Header values are stored encrypted, bound to this subscription (shared/crypto/subscriptionSecrets.ts).
    values.push(field === "auth" ? (auth ? JSON.stringify(auth.stored) : null) : field === "headers" ? JSON.stringify(sealHeaders(id, value as Record<string, string>)) : field === "eventTypes" ? [...new Set(value as string[])] : field === "filter" && value !== null ? JSON.stringify(value) : value);
    sets.push(`${column} = $${values.length}${CAST[column] ?? ""}`);
    // The compiled filter goes with it (events enqueued from its commit on are filtered by the new one).
    if (field === "filter") {
      values.push(value === null ? null : filterToJsonPath(value));
      sets.push(`filter_path = $${values.length}::jsonpath`);
    }
  }
  // A new rate restarts the limiter's clock (issue 15's rate_next_at), rather than keeping the old spacing.
  if ("rateLimitPerSecond" in valid) sets.push("rate_next_at = NULL");
  const newUrl = target !== null;
  if (target) {
    values.push(target.url);
    sets.push(`url = $${values.length}`);
    values.push(target.stored ? JSON.stringify(target.stored) : null);
    sets.push(`destination = $${values.length}::jsonb`);
    sets.push("status = 'active'", "consecutive_failures = 0", "disabled_reason = NULL", "disabled_at = NULL", "next_probe_at = NULL");
  }
  const { rows } = await q.query<SubscriptionRow & { url_changed: boolean }>(
    `UPDATE outbound_subscriptions SET ${sets.join(", ")}, updated_at = now()
     WHERE id = $1 AND deleted_at IS NULL
     RETURNING *`,
    values,
  ).catch((error: unknown) => {
    // A field of issue 15's migration 011 sent to a database without it.
    if ((error as { code?: string }).code === "42703") throw new OutboundValidationError(`Invalid subscription change: ${(error as Error).message}; this database lacks a migration, apply it first.`);
    throw error;
  });
  if (!rows[0]) throw new NotFoundError("subscription", id);
  if (newUrl) await dueNow(q, id);
  if (auth) warnings.push(...auth.warnings);
  return { ...toSubscription(rows[0], false), ...(warnings.length > 0 ? { warnings } : {}) };
}

/**
 * An edit of `auth` or `headers` alone, checked against the subscription's current destination:
 * endpoint auth is for HTTP endpoints, and SQS and SNS carry few attributes (destinationFor).
 */
async function checkAgainstCurrentDestination(q: Queryable, id: string, valid: Record<string, unknown>): Promise<void> {
  const { rows } = await q.query<{ destination: SubscriptionRow["destination"] }>("SELECT destination FROM outbound_subscriptions WHERE id = $1 AND deleted_at IS NULL", [id]);
  const current = rows[0];
  if (!current?.destination) return; // http (or absent: the update answers 404)
  const headers = valid.headers as Record<string, string> | undefined;
  const kind = current.destination.kind;
  if (valid.auth) throw new OutboundValidationError(`Invalid subscription change: auth: endpoint authentication is for http destinations; this subscription delivers to ${kind} (its credentials are in destination.credentials)`, [{ path: "auth", message: "endpoint authentication is for http destinations" }]);
  const max = MAX_HEADER_ATTRIBUTES[kind];
  if (headers && max !== undefined && Object.keys(headers).length > max) {
    throw new OutboundValidationError(`Invalid subscription change: headers: at most ${max} for a ${kind} destination (they travel as message attributes)`, [{ path: "headers", message: `at most ${max} for a ${kind} destination` }]);
  }
}

/** Makes the subscription's waiting deliveries (that no relay holds) due now, and wakes the relays. */
async function dueNow(q: Queryable, id: string): Promise<void> {
  await q.query(
    `UPDATE outbound_deliveries SET next_attempt_at = now(), updated_at = now()
     WHERE subscription_id = $1 AND status = 'pending' AND next_attempt_at > now() AND next_attempt_at <> 'infinity' -- not waiting in an ordering key
       AND (lease_expires_at IS NULL OR lease_expires_at <= now())`,
    [id],
  );
  await q.query("SELECT pg_notify($1, '')", [NOTIFY_CHANNEL]);
}

/**
 * Pauses a subscription: nothing is sent to it until `resumeSubscription`; new events still make
 * deliveries for it, kept pending. An attempt in flight finishes and is recorded. A disabled
 * endpoint is not probed while paused. Pausing a paused subscription changes nothing.
 */
export async function pauseSubscription(q: Queryable, id: string): Promise<Subscription> {
  const { rows } = await q.query<SubscriptionRow>(
    `UPDATE outbound_subscriptions
     SET paused_at = COALESCE(paused_at, now()), next_probe_at = NULL, updated_at = now()
     WHERE id = $1 AND deleted_at IS NULL
     RETURNING *`,
    [id],
  );
  if (!rows[0]) throw new NotFoundError("subscription", id);
  return toSubscription(rows[0], false);
}

/**
 * Resumes a paused subscription: its waiting deliveries are due at once. One disabled by the
 * circuit breaker is probed at once (one disabled by 410 Gone still waits for `enable`).
 */
export async function resumeSubscription(q: Queryable, id: string): Promise<Subscription> {
  const { rows } = await q.query<SubscriptionRow>(
    `UPDATE outbound_subscriptions
     SET paused_at = NULL,
         next_probe_at = CASE WHEN status = 'disabled' AND starts_with(disabled_reason, 'circuit') THEN now() ELSE next_probe_at END,
         updated_at = now()
     WHERE id = $1 AND deleted_at IS NULL
     RETURNING *`,
    [id],
  );
  if (!rows[0]) throw new NotFoundError("subscription", id);
  await dueNow(q, id);
  return toSubscription(rows[0], false);
}

/**
 * Deletes a subscription: it gets no new deliveries, and its pending ones are cancelled (status
 * `cancelled`, kept with their attempt log as history; nothing is removed). An attempt in flight
 * finishes; its outcome is logged and not applied, so it is never retried. The subscription is
 * then unknown to every operation (404); its deliveries stay listable by `subscriptionId`.
 */
export async function deleteSubscription(q: Queryable, id: string): Promise<{ id: string; deletedAt: Date; cancelledDeliveries: number }> {
  const { rows } = await q.query<{ id: string | null; deleted_at: Date | null; cancelled: string }>(
    `WITH deleted AS (
       UPDATE outbound_subscriptions
       SET deleted_at = now(), paused_at = NULL, next_probe_at = NULL, updated_at = now()
       WHERE id = $1 AND deleted_at IS NULL
       RETURNING id, deleted_at
     ),
     cancelled AS (
       UPDATE outbound_deliveries d
       SET status = 'cancelled', cancelled_at = now(), updated_at = now()
       FROM deleted
       WHERE d.subscription_id = deleted.id AND d.status = 'pending'
       RETURNING 1
     )
     SELECT deleted.id, deleted.deleted_at, (SELECT count(*) FROM cancelled) AS cancelled
     FROM (SELECT 1) AS one LEFT JOIN deleted ON true`,
    [id],
  );
  const row = rows[0]!;
  if (row.id === null) throw new NotFoundError("subscription", id);
  return { id: row.id, deletedAt: row.deleted_at!, cancelledDeliveries: Number(row.cancelled) };
}
