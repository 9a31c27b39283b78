/**
 * Subscriptions: an endpoint URL, the event types it wants, its signing secrets and its health.
 */
import { randomBytes } from "node:crypto";
import * as z from "zod/mini";
import { httpUrlSchema } from "./httpUrl.js";
import type { Queryable } from "../db/port.js";
import type { DestinationPolicy } from "./destinationPolicy.js";
import { NotFoundError, OutboundValidationError } from "./errors.js";
import { eventPatternProblem } from "./eventTypes.js";
import { generateSecret, isValidSecret, schemeOf } from "./signature.js";
import { publicKeyText } from "../crypto/ed25519.js";
import { parseOrThrow } from "./validation.js";
import { NOTIFY_CHANNEL } from "./notify.js";
import { headersSchema } from "./subscriptionHeaders.js";
import { matchesPatternSql } from "./patternSql.js";
import { filterProblems, filterToJsonPath, type Filter } from "./filters.js";
import { checkPatternsAgainstCatalogue } from "./catalogue.js";
import { checkTransformation, MAX_TRANSFORMATION_LENGTH } from "./transformations.js";
import { DEFAULT_APPLICATION_ID } from "../tenancy/defaults.js";
import { openHeaders, openSecrets, sealHeaders, sealSecrets } from "../crypto/subscriptionSecrets.js";
import { authInputSchema, prepareAuth, publicAuth, type AuthInput, type PublicAuth, type StoredAuth } from "./endpointAuth/config.js";
import { destinationInputSchema, MAX_HEADER_ATTRIBUTES, prepareDestination, publicDestination, type DestinationInput, type PublicDestination, type StoredDestination } from "./destinations/config.js";

export type SubscriptionStatus = "active" | "degraded" | "disabled";

export interface SubscriptionHealth {
  /** Failed attempts since the last success. */
  consecutiveFailures: number;
  /** Why it is disabled (circuit open, or 410 Gone); null unless disabled. */
  disabledReason: string | null;
  disabledAt: Date | null;
  /** When a disabled endpoint gets its next probe; null when not probed (410 Gone waits for `enable`). */
  nextProbeAt: Date | null;
  lastFailureAt: Date | null;
  /** In API answers: why the serving platform's destination policy refuses its URL (naming ALLOWED_DESTINATIONS), or null. */
  destinationRefused?: string | null;
}

export interface Subscription {
  id: string;
  /** The application it belongs to (shared/tenancy/applications.ts); it gets that application's events only. */
  applicationId: string;
  /** The endpoint URL; for a non-http destination a read-only description `<kind>:<where>` (destinations/config.ts). */
  url: string;
  /** Where deliveries go (docs/destinations.md): `{kind: "http", url}` or a queue's settings, without the secret part of its credentials. */
  destination: PublicDestination;
  eventTypes: string[];
  /** Present only when created, or when asked for with `includeSecrets`. */
  secrets?: string[];
  /** With `secrets`: the `whpk_…` public keys of its `whsk_…` (v1a) signing keys, in the same order. */
  publicKeys?: string[];
  description: string | null;
  /** Per-subscription maximum of attempts; null means the relay's retry policy decides. */
  maxAttempts: number | null;
  /** Sent with every attempt (lower-case names); never webhook-*, host, content-length or hop-by-hop. */
  headers: Record<string, string>;
  /** Content filter (shared/outbound/filters.ts): only events whose body it matches get a delivery; null: every event of its types. */
  filter: Filter | null;
  /** Its transformation's source (docs/transformations.md); null: events are sent as enqueued. */
  transformation: string | null;
  /** How the relay authenticates to the endpoint (docs/endpointAuth.md), without its secret part; null: no authentication. */
  auth: PublicAuth | null;
  /** Whether attempts carry the W3C `traceparent` header of a traced event (migration 023). */
  sendTraceparent: boolean;
  /** Paused by an operator: its deliveries wait (kept) until it is resumed. Independent of `status`. */
  paused: boolean;
  pausedAt: Date | null;
  /** Health: active, degraded or disabled (by the circuit breaker or 410 Gone). */
  status: SubscriptionStatus;
  health: SubscriptionHealth;
  createdAt: Date;
  updatedAt: Date;
}

const urlSchema = httpUrlSchema({ example: "https://example.com/webhooks", credentialsHint: "receivers verify our signature instead" });

/** A content filter: every problem reported, each at its place inside the filter. */
function filterSchema() {
  return z.record(z.string(), z.unknown()).check(
    z.superRefine((value, ctx) => {
      for (const issue of filterProblems(value)) ctx.addIssue({ code: "custom", message: issue.message, path: issue.path === "(root)" ? [] : [issue.path] });
    }),
    z.describe("Content filter on the event's body (docs/filters.md): only events it matches get a delivery, decided at enqueue. E.g. {\"data.amount\": {\"$gt\": 100}, \"data.currency\": {\"$in\": [\"EUR\", \"USD\"]}}. Operators: $eq $neq $in $nin $gt $gte $lt $lte $exists $prefix $contains, combined with $and $or $not."),
  ) as unknown as z.ZodMiniType<Filter>;
}

/** What `createSubscription` accepts. */
export const subscriptionInputSchema = z.strictObject({
  /** The endpoint (an http destination). Give `url` or `destination`. */
  url: z.optional(urlSchema),
  /** Where deliveries go when not an HTTP endpoint (issue 31): an SQS queue, SNS topic, EventBridge bus, Service Bus queue or topic, Pub/Sub topic, RabbitMQ exchange. Give `url` or `destination`. */
  destination: z.optional(destinationInputSchema),
  eventTypes: z
    .array(z.string().check(z.superRefine((p, ctx) => {
      const problem = eventPatternProblem(p);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    })))
    .check(
      z.minLength(1, "list at least one event type or pattern (e.g. [\"order.*\"])"),
      z.maxLength(100, "at most 100 patterns"),
    ),
  secrets: z.optional(
    z.array(z.string().check(z.refine(isValidSecret, "must be whsec_ followed by the base64 of 24 to 64 bytes (v1), or a whsk_ ed25519 signing key (v1a); omit secrets to have one generated")))
      .check(
        z.minLength(1, "give at least one secret, or omit the field to have one generated"),
        z.maxLength(5, "at most 5 secrets at once (rotation keeps two)"),
      ),
  ),
  /**
   * How a generated secret signs: `v1` (HMAC-SHA256, `whsec_`, the default) or `v1a` (ed25519,
   * `whsk_`; receivers verify with the public key from GET /subscriptions/:id/public-keys).
   * Given secrets sign by their own prefix.
   */
  signatureScheme: z.optional(z.enum(["v1", "v1a"])),
  description: z.optional(z.string().check(z.maxLength(500))),
  maxAttempts: z.optional(z.number().check(z.int(), z.gte(1), z.lte(100))),
  // Flow control (issue 15, docs/outbound.md#flow-control). NULL/absent: the relays' defaults.
  maxInFlight: z.optional(z.number().check(z.int(), z.gte(1, "must be at least 1"), z.lte(10_000, "must be at most 10000"))),
  rateLimitPerSecond: z.optional(z.number().check(z.gt(0, "must be above 0"), z.lte(10_000, "must be at most 10000"))),
  attemptTimeoutMs: z.optional(z.number().check(z.int(), z.gte(100, "must be at least 100 ms"), z.lte(120_000, "must be at most 120000 ms (the relays also cap it at their OUTBOUND_TIMEOUT_MS)"))),
  ordered: z.optional(z.boolean()),
  headers: z.optional(headersSchema),
  filter: z.optional(filterSchema()),
  /** JavaScript `(event) => ({ body, headers?, url? } | null)` run before each attempt (docs/transformations.md). */
  transformation: z.optional(z.string().check(z.minLength(1), z.maxLength(MAX_TRANSFORMATION_LENGTH))),
  /** Endpoint authentication: OAuth 2.0 client credentials, a TLS client certificate, or Basic (docs/endpointAuth.md). */
  auth: z.optional(authInputSchema),
  /** Send the W3C `traceparent` header when the event was traced (docs/operations.md#one-trace-per-webhook). Default: true. */
  sendTraceparent: z.optional(z.boolean()),
});

/** Most past events one backfill sends to a new subscription. */
export const MAX_BACKFILL_EVENTS = 100_000;

/** A time range of past events (by when they were enqueued) to send to a new subscription. */
export const backfillSchema = z.strictObject({
  since: z.iso.datetime({ offset: true }),
  until: z.optional(z.iso.datetime({ offset: true })),
}).check(z.refine((b) => b.until === undefined || new Date(b.until) > new Date(b.since), { message: "until must be after since", path: ["until"] }));

/** What `createSubscription` accepts: a subscription, and optionally past events to send it. */
export const createSubscriptionSchema = z.extend(subscriptionInputSchema, {
  backfill: z.optional(backfillSchema),
  /** The application it belongs to. Default: the default application. */
  applicationId: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
});

export type SubscriptionInput = z.input<typeof createSubscriptionSchema>;

/** Columns added by issue 15 (migration 011): read when present, so this code runs before and after it. */
const FLOW_COLUMNS = { maxInFlight: "max_in_flight", rateLimitPerSecond: "rate_limit_per_second", attemptTimeoutMs: "attempt_timeout_ms", ordered: "ordered" } as const;

export interface SubscriptionRow {
  id: string;
  application_id: string;
  url: string;
  event_types: string[];
  secrets: string[];
  description: string | null;
  max_attempts: number | null;
  headers: Record<string, string>;
  filter?: Filter | null;
  transformation?: string | null;
  /** Migration 021; its secret part sealed (endpointAuth/config.ts). */
  auth?: StoredAuth | null;
  /** Migration 023. */
  send_traceparent?: boolean;
  /** Migration 025; null: http at `url`. Its secret parts sealed (destinations/config.ts). */
  destination?: StoredDestination | null;
  paused_at: Date | null;
  status: SubscriptionStatus;
  consecutive_failures: number;
  disabled_reason: string | null;
  disabled_at: Date | null;
  next_probe_at: Date | null;
  last_failure_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The secrets, and the public keys of those that are v1a signing keys. */
function withPublicKeys(secrets: string[]): { secrets: string[]; publicKeys: string[] } {
  return { secrets, publicKeys: secrets.map(publicKeyText).filter((k): k is string => k !== null) };
}

export function toSubscription(row: SubscriptionRow, includeSecrets: boolean): Subscription {
  const flow: Record<string, unknown> = {};
  for (const [field, column] of Object.entries(FLOW_COLUMNS)) {
    const value = (row as unknown as Record<string, unknown>)[column];
    if (value !== undefined) flow[field] = typeof value === "string" && field === "rateLimitPerSecond" ? Number(value) : value;
  }
  return {
    id: row.id,
    applicationId: row.application_id,
    url: row.url,
    destination: publicDestination(row.destination, row.url),
    eventTypes: row.event_types,
    // Stored encrypted (shared/crypto/subscriptionSecrets.ts); decrypted only for the answer.
    ...(includeSecrets ? withPublicKeys(openSecrets(row.id, row.secrets)) : {}),
    description: row.description,
    maxAttempts: row.max_attempts,
    headers: openHeaders(row.id, row.headers),
    filter: row.filter ?? null,
    transformation: row.transformation ?? null,
    auth: publicAuth(row.auth),
    sendTraceparent: row.send_traceparent ?? true,
    paused: row.paused_at !== null,
    pausedAt: row.paused_at,
    ...flow,
    status: row.status,
    health: {
      consecutiveFailures: row.consecutive_failures,
      disabledReason: row.disabled_reason,
      disabledAt: row.disabled_at,
      nextProbeAt: row.next_probe_at,
      lastFailureAt: row.last_failure_at,
    },
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * Creates a subscription; a signing secret is generated when none is given. The result carries
 * the secrets (the only time they are returned unless asked for). With `destinationPolicy`, a URL
 * whose host is a refused IP literal or local name is rejected here rather than at delivery.
 * With `backfill: { since, until? }`, the past events of that range (by when they were enqueued)
 * whose type matches are sent to it too, as deliveries of origin `backfill`, in the same statement:
 * the subscription exists with all of them or not at all. More than MAX_BACKFILL_EVENTS is refused.
 * It belongs to `applicationId` (default: the default application), which must be live
 * (NotFoundError otherwise); a backfill sends that application's past events only.
 * @example
 * const sub = await createSubscription(db, { url: "https://example.com/hooks", eventTypes: ["order.*"] });
 */
export async function createSubscription(
  q: Queryable,
  input: unknown,
  options: { destinationPolicy?: Pick<DestinationPolicy, "checkHost">; requestedBy?: string } = {},
): Promise<Subscription & { backfilled?: number; warnings?: string[] }> {
  const valid = parseOrThrow(createSubscriptionSchema, input, "subscription");
  const id = `sub_${randomBytes(12).toString("base64url")}`;
  const target = destinationFor(id, valid, options.destinationPolicy);
  // Patterns no catalogue entry matches: refused by a strict catalogue, else warned of (issue 30).
  const warnings = await checkPatternsAgainstCatalogue(q, valid.eventTypes, valid.applicationId ?? DEFAULT_APPLICATION_ID);
  if (valid.transformation !== undefined) await checkTransformation(valid.transformation);
  const auth = valid.auth === undefined ? null : storedAuthFor(id, valid.auth, options.destinationPolicy);
  if (auth) warnings.push(...auth.warnings); // a client certificate expiring soon
  const warned = warnings.length > 0 ? { warnings } : {};
  if (valid.secrets && valid.signatureScheme) {
    throw new OutboundValidationError("Invalid subscription: signatureScheme: give either secrets (each signs by its prefix) or signatureScheme (for a generated one), not both.", [{ path: "signatureScheme", message: "give either secrets or signatureScheme" }]);
  }
  const secrets = valid.secrets ?? [generateSecret(valid.signatureScheme)];
  const eventTypes = [...new Set(valid.eventTypes)];
  // Secrets and header values are written encrypted, bound to this id (docs/secrets.md).
  const values = [id, target.url, eventTypes, sealSecrets(id, secrets), valid.description ?? null, valid.maxAttempts ?? null, JSON.stringify(sealHeaders(id, valid.headers ?? {}))];
  // The filter as given (shown back) and compiled (what the fan-out evaluates); both or neither.
  const filter = valid.filter === undefined ? [null, null] : [JSON.stringify(valid.filter), filterToJsonPath(valid.filter)];
  const flow = [valid.maxInFlight ?? null, valid.rateLimitPerSecond ?? null, valid.attemptTimeoutMs ?? null, valid.ordered ?? false];
  const applicationId = valid.applicationId ?? DEFAULT_APPLICATION_ID;
  // The application must be live; its row is key-share locked, so a concurrent deletion of the
  // application waits for this insert, and then deletes this subscription with the others.
  const liveApp = "SELECT id FROM outbound_applications WHERE id = $APP AND deleted_at IS NULL FOR KEY SHARE";
  if (!valid.backfill) {
    const { rows } = await q.query<SubscriptionRow>(
      `WITH app AS (${liveApp.replace("$APP", "$12")})
       INSERT INTO outbound_subscriptions (id, application_id, url, event_types, secrets, description, max_attempts, headers, max_in_flight, rate_limit_per_second, attempt_timeout_ms, ordered, filter, filter_path, transformation, auth, send_traceparent, destination)
       SELECT $1, app.id, $2, $3::text[], $4::text[], $5, $6, $7::jsonb, $8::int, $9::float8, $10::int, $11::bool, $13::jsonb, $14::jsonpath, $15::text, $16::jsonb, $17::bool, $18::jsonb FROM app
       RETURNING *`,
      [...values, ...flow, applicationId, ...filter, valid.transformation ?? null, auth ? JSON.stringify(auth.stored) : null, valid.sendTraceparent ?? true, target.stored ? JSON.stringify(target.stored) : null],
    );
    if (!rows[0]) throw new NotFoundError("application", applicationId);
    return { ...toSubscription(rows[0], true), ...warned };
  }
  // One statement: the events to send are counted first, and nothing is written beyond the cap.
  const { rows } = await q.query<SubscriptionRow & { matching: string; backfilled: string }>(
    `WITH app AS (${liveApp.replace("$APP", "$17")}),
     past AS (
       SELECT e.id FROM outbound_events e
       WHERE e.created_at >= $8::timestamptz AND ($9::timestamptz IS NULL OR e.created_at < $9::timestamptz)
         AND e.application_id = $17
         AND ${matchesPatternSql("$3::text[]", "e.type")}
         AND ($19::jsonpath IS NULL OR jsonb_path_match(e.body::jsonb, $19::jsonpath))
       LIMIT $10 + 1
     ),
     created AS (
       INSERT INTO outbound_subscriptions (id, application_id, url, event_types, secrets, description, max_attempts, headers, max_in_flight, rate_limit_per_second, attempt_timeout_ms, ordered, filter, filter_path, transformation, auth, send_traceparent, destination)
       SELECT $1, app.id, $2, $3::text[], $4::text[], $5, $6, $7::jsonb, $13::int, $14::float8, $15::int, $16::bool, $18::jsonb, $19::jsonpath, $20::text, $21::jsonb, $22::bool, $23::jsonb FROM app
       WHERE (SELECT count(*) FROM past) <= $10
       RETURNING *
     ),
     sent AS (
       INSERT INTO outbound_deliveries (id, event_id, subscription_id, origin, requested_by)
       SELECT past.id || ':' || created.id, past.id, created.id, 'backfill', $11 FROM past, created
       ORDER BY past.id
       RETURNING 1
     ),
     woken AS (SELECT pg_notify($12, '') FROM (SELECT 1 FROM sent LIMIT 1) AS any_sent)
     SELECT created.*, (SELECT count(*) FROM past) AS matching, (SELECT count(*) FROM sent) AS backfilled,
            (SELECT count(*) FROM woken) AS woken, (SELECT count(*) FROM app) AS live_app
     FROM (SELECT 1) AS one LEFT JOIN created ON true`,
    [...values, valid.backfill.since, valid.backfill.until ?? null, MAX_BACKFILL_EVENTS, options.requestedBy ?? null, NOTIFY_CHANNEL, ...flow, applicationId, ...filter, valid.transformation ?? null, auth ? JSON.stringify(auth.stored) : null, valid.sendTraceparent ?? true, target.stored ? JSON.stringify(target.stored) : null],
  );
  const row = rows[0]!;
  if (Number((row as unknown as { live_app: string }).live_app) === 0) throw new NotFoundError("application", applicationId);
  if (row.id === null) {
    throw new OutboundValidationError(
      `Invalid subscription: backfill: more than ${MAX_BACKFILL_EVENTS} events match; choose a shorter time range.`,
      [{ path: "backfill", message: `more than ${MAX_BACKFILL_EVENTS} events match` }],
    );
  }
  return { ...toSubscription(row, true), backfilled: Number(row.backfilled), ...warned };
}

/**
 * Where a new or edited subscription delivers, from its `url` or `destination` (exactly one): the
 * `url` column's value and, for a non-http kind, the stored destination (secret parts sealed for
 * `id`). Endpoint auth is for HTTP endpoints only, and custom headers, which travel as message
 * attributes, are bounded where the service bounds attributes (SQS, SNS: 10 in all, 4 ours).
 */
export function destinationFor(
  id: string,
  valid: { url?: string | null; destination?: DestinationInput | null; auth?: AuthInput | null; headers?: Record<string, string>; ordered?: boolean },
  policy: Pick<DestinationPolicy, "checkHost"> | undefined,
): { url: string; stored: StoredDestination | null } {
  const refuse = (path: string, message: string): never => {
    throw new OutboundValidationError(`Invalid subscription: ${path}: ${message}`, [{ path, message }]);
  };
  if (valid.url != null && valid.destination != null) refuse("destination", "give url (an HTTP endpoint) or destination, not both");
  if (valid.url == null && valid.destination == null) refuse("url", "give url (an HTTP endpoint such as https://example.com/webhooks) or destination (a queue or broker: docs/destinations.md)");
  const destination = valid.destination ?? { kind: "http" as const, url: valid.url! };
  if (destination.kind === "http") {
    checkDestination(destination.url, policy);
    return { url: destination.url, stored: null };
  }
  if (valid.auth != null) refuse("auth", `endpoint authentication is for http destinations; a ${destination.kind} destination takes its credentials in destination.credentials`);
  const maxHeaders = MAX_HEADER_ATTRIBUTES[destination.kind];
  if (maxHeaders !== undefined && valid.headers && Object.keys(valid.headers).length > maxHeaders) {
    refuse("headers", `at most ${maxHeaders} for a ${destination.kind} destination: they travel as message attributes, of which ${destination.kind.toUpperCase()} carries 10 and the Standard Webhooks headers and content-type take 4`);
  }
  const prepared = prepareDestination(id, destination, policy);
  // An ordered subscription's order must survive the service: a FIFO queue or topic (its group),
  // a Service Bus session, a Pub/Sub ordering key, one RabbitMQ queue. EventBridge keeps none.
  const stored = prepared.stored;
  if (valid.ordered && stored.kind === "eventbridge") refuse("ordered", "EventBridge does not keep the order of events; deliver ordered subscriptions to an SQS FIFO queue, a Service Bus session, Pub/Sub or RabbitMQ");
  if (valid.ordered && (stored.kind === "sqs" || stored.kind === "sns") && !stored.fifo) {
    refuse("ordered", `a standard ${stored.kind.toUpperCase()} ${stored.kind === "sqs" ? "queue" : "topic"} does not keep order; use a FIFO one (its name ends in .fifo), whose message group is the ordering key`);
  }
  return prepared;
}

/**
 * The stored form of a subscription's `auth` (secret part sealed for `id`), with its warnings; its
 * token URL passes the destination policy like the endpoint's URL.
 */
export function storedAuthFor(id: string, input: AuthInput, policy: Pick<DestinationPolicy, "checkHost"> | undefined): { stored: StoredAuth; warnings: string[] } {
  if (input.kind === "oauth2ClientCredentials") {
    try {
      policy?.checkHost(new URL(input.tokenUrl).hostname);
    } catch (error) {
      throw new OutboundValidationError(`Invalid subscription: auth.tokenUrl: ${(error as Error).message}`, [{ path: "auth.tokenUrl", message: (error as Error).message }], { cause: error });
    }
  }
  return prepareAuth(id, input);
}

/** Early feedback for IP literals and local names; names are checked again on every connection, on the address actually dialled. */
export function checkDestination(url: string, policy: Pick<DestinationPolicy, "checkHost"> | undefined): void {
  try {
    policy?.checkHost(new URL(url).hostname);
  } catch (error) {
    throw new OutboundValidationError(`Invalid subscription: url: ${(error as Error).message}`, [{ path: "url", message: (error as Error).message }], { cause: error });
  }
}

/** One subscription, or NotFoundError. */
export async function getSubscription(q: Queryable, id: string, options: { includeSecrets?: boolean } = {}): Promise<Subscription> {
  const { rows } = await q.query<SubscriptionRow>("SELECT * FROM outbound_subscriptions WHERE id = $1 AND deleted_at IS NULL", [id]);
  if (!rows[0]) throw new NotFoundError("subscription", id);
  return toSubscription(rows[0], options.includeSecrets ?? false);
}

/** Subscriptions (not deleted) in id order, optionally of one health status, paused, or of one application; `after` is the last id of the previous page. */
export async function listSubscriptions(
  q: Queryable,
  options: { status?: SubscriptionStatus; paused?: boolean; limit?: number; after?: string; applicationId?: string } = {},
): Promise<Subscription[]> {
  const { rows } = await q.query<SubscriptionRow>(
    `SELECT * FROM outbound_subscriptions
     WHERE deleted_at IS NULL AND ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR id > $2)
       AND ($4::boolean IS NULL OR (paused_at IS NOT NULL) = $4)
       AND ($5::text IS NULL OR application_id = $5)
     ORDER BY id
     LIMIT $3`,
    [options.status ?? null, options.after ?? null, options.limit ?? 100, options.paused ?? null, options.applicationId ?? null],
  );
  return rows.map((r) => toSubscription(r, false));
}

/**
 * Re-enables a subscription (after 410 Gone, or to close the circuit before the next probe):
 * status active, failure count reset. Its kept deliveries become due at once.
 */
export async function enableSubscription(q: Queryable, id: string): Promise<Subscription> {
  const { rows } = await q.query<SubscriptionRow>(
    // The cause is read by migration 020's trigger (an `endpoint.enabled` event, not `recovered`).
    `UPDATE outbound_subscriptions
     SET status = 'active', consecutive_failures = 0, disabled_reason = NULL, disabled_at = NULL,
         next_probe_at = NULL, updated_at = now()
     WHERE id = $1 AND deleted_at IS NULL AND set_config('webhooks.health_cause', 'operator', true) = 'operator'
     RETURNING *`,
    [id],
  );
  if (!rows[0]) throw new NotFoundError("subscription", id);
  // Deliveries waited while it was disabled: make them due now rather than at their old backoff.
  await q.query(
    `UPDATE outbound_deliveries SET next_attempt_at = now(), updated_at = now()
     WHERE subscription_id = $1 AND status = 'pending' AND next_attempt_at > now() AND next_attempt_at <> 'infinity' -- not waiting in an ordering key
       AND (lease_expires_at IS NULL OR lease_expires_at <= now())`,
    [id],
  );
  await q.query("SELECT pg_notify($1, '')", [NOTIFY_CHANNEL]);
  return toSubscription(rows[0], false);
}

export const secretsInputSchema = z.strictObject({
  secrets: subscriptionInputSchema.shape.secrets,
  signatureScheme: subscriptionInputSchema.shape.signatureScheme,
});

/**
 * Rotates signing secrets. With `secrets`, they replace the current ones. Without, a new secret is
 * generated and put first, and the newest current one is kept: every delivery is then signed with
 * both, so receivers can switch at their pace; call again with only the new one to finish. The new
 * secret signs like the newest current one, or by `signatureScheme` (moving v1 → v1a sends both
 * signatures meanwhile). Returns the subscription with its secrets (and public keys).
 */
export async function rotateSecrets(q: Queryable, id: string, input: unknown = {}): Promise<Subscription> {
  const valid = parseOrThrow(secretsInputSchema, input ?? {}, "secret rotation");
  if (valid.secrets && valid.signatureScheme) {
    throw new OutboundValidationError("Invalid secret rotation: give either secrets or signatureScheme, not both.", [{ path: "signatureScheme", message: "give either secrets or signatureScheme" }]);
  }
  // Read, then written only if unchanged: the kind of the newest secret is inside its envelope.
  for (let attempt = 0; attempt < 5; attempt++) {
    const { rows: current } = await q.query<{ secrets: string[] }>("SELECT secrets FROM outbound_subscriptions WHERE id = $1 AND deleted_at IS NULL", [id]);
    if (!current[0]) throw new NotFoundError("subscription", id);
    const stored = current[0].secrets;
    const newest = stored.length > 0 ? openSecrets(id, stored.slice(0, 1))[0]! : undefined;
    // Sealed for this id before the statement: the database never sees a secret in clear.
    const next = valid.secrets
      ? sealSecrets(id, valid.secrets)
      : [...sealSecrets(id, [generateSecret(valid.signatureScheme ?? (newest ? schemeOf(newest) : null) ?? "v1")]), ...stored.slice(0, 1)];
    const { rows } = await q.query<SubscriptionRow>(
      `UPDATE outbound_subscriptions SET secrets = $2::text[], updated_at = now()
       WHERE id = $1 AND deleted_at IS NULL AND secrets = $3::text[]
       RETURNING *`,
      [id, next, stored],
    );
    if (rows[0]) return toSubscription(rows[0], true);
  }
  throw new Error(`The secrets of subscription ${id} kept changing while being rotated; rotate again.`);
}

/** The `whpk_…` public keys of a subscription's v1a signing keys (newest first); empty when it signs with v1 only. */
export async function getPublicKeys(q: Queryable, id: string): Promise<{ id: string; publicKeys: string[] }> {
  const sub = await getSubscription(q, id, { includeSecrets: true });
  return { id: sub.id, publicKeys: sub.publicKeys ?? [] };
}
