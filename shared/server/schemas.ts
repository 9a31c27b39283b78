/**
 * The shapes the management API answers with, as zod schemas: the OpenAPI document is generated
 * from them (./openapi.ts), and the contract test checks every real answer against that document.
 * Times are ISO 8601 strings in UTC, as JSON carries a Date.
 */
import * as z from "zod/mini";
import { INBOX_STATUSES } from "../inbound/inbox.js";
import type { PublicDestination } from "../outbound/destinations/config.js";

const time = z.iso.datetime();
const nullableTime = z.nullable(time);
const nullableText = z.nullable(z.string());
const int = z.number().check(z.int());

export const errorSchema = z.strictObject({
  error: z.strictObject({
    code: z.string(),
    message: z.string(),
    details: z.optional(z.unknown()),
  }),
});

/** Custom header values are answered in full, so whoever may read a subscription reads them. */
const CUSTOM_HEADERS_DESCRIPTION = "The custom headers sent with every delivery, names in lower case, values IN FULL as given: treat them as possibly secret (an `authorization` or API-key header for the receiver). Stored encrypted; anyone whose token or key may read this subscription sees them.";

/** What the API shows of a subscription's endpoint authentication: no client secret, private key or password, ever. */
const endpointAuthSchema = z.union([
  z.strictObject({
    kind: z.literal("oauth2ClientCredentials"),
    tokenUrl: z.string(),
    clientId: z.string(),
    scope: nullableText,
    audience: nullableText,
    parameters: z.record(z.string(), z.string()),
    clientAuthentication: z.enum(["basic", "body"]),
  }),
  z.strictObject({
    kind: z.literal("mtls"),
    certificate: z.strictObject({
      subject: z.string(),
      issuer: z.string(),
      notBefore: time,
      notAfter: time,
      fingerprint256: z.string(),
      /** True once notAfter has passed: attempts fail as `client_certificate_expired`. */
      expired: z.boolean(),
      /** True within 30 days of notAfter. */
      expiresSoon: z.boolean(),
      expiresInDays: int,
    }),
    /** Whether a CA of its own is trusted for the endpoint's certificate. */
    ca: z.boolean(),
  }),
  z.strictObject({ kind: z.literal("basic"), username: z.string() }),
]).check(z.describe("How the relay authenticates to the endpoint; the secret part (client secret, private key, password) is stored encrypted and never answered."));

/** The readable part of a destination's credentials: never the secret key, connection string, private key or password. */
const destinationCredentials = <S extends z.core.$ZodType>(readable: S, what: string) =>
  z.nullable(readable).check(z.describe(`${what}; null: the relay's own cloud identity (docs/destinations.md). The secret part is stored encrypted and never answered.`));
const awsCredentials = destinationCredentials(z.strictObject({ accessKeyId: z.string() }), "The access key id it sends with");
const nullableHost = z.nullable(z.string());

/** What the API shows of a subscription's destination (issue 31, docs/destinations.md): its kind, its settings with defaults filled in, and no secret. */
const destinationSchema = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("http"), url: z.string() }),
  z.strictObject({
    kind: z.literal("sqs"), queueUrl: z.string(), region: z.string(), endpoint: nullableHost,
    /** A `.fifo` queue: the ordering key is the message group, webhook-id the deduplication id. */
    fifo: z.boolean(),
    credentials: awsCredentials,
  }),
  z.strictObject({ kind: z.literal("sns"), topicArn: z.string(), region: z.string(), endpoint: nullableHost, fifo: z.boolean(), credentials: awsCredentials }),
  z.strictObject({
    kind: z.literal("eventbridge"), eventBus: z.string(), region: z.string(), source: z.string(),
    /** null: each event's type. */
    detailType: nullableText,
    endpoint: nullableHost, credentials: awsCredentials,
  }),
  z.strictObject({
    kind: z.literal("servicebus"), queue: nullableText, topic: nullableText, namespace: z.string(),
    credentials: destinationCredentials(z.strictObject({ keyName: nullableText }), "The shared access policy of its connection string"),
  }),
  z.strictObject({
    kind: z.literal("pubsub"), topic: z.string(), endpoint: nullableHost, emulator: z.boolean(),
    credentials: destinationCredentials(z.strictObject({ clientEmail: z.string() }), "The service account it publishes as"),
  }),
  z.strictObject({
    kind: z.literal("rabbitmq"), url: z.string(), exchange: z.string(), routingKey: z.string(),
    credentials: destinationCredentials(z.strictObject({ username: z.string() }), "The user it connects as"),
  }),
]).check(z.describe("Where its deliveries go: `http` (the endpoint at `url`) or a queue or broker's settings. Credentials are shown by their readable part only."));
/**
 * The answer's schema is the core's public view, field for field: a field added to one alone fails
 * to compile. (The schema's credentials are per kind, the core's type a union of all kinds': that
 * one direction is checked without them.)
 */
type WithoutCredentials<T> = T extends unknown ? Omit<T, "credentials"> : never;
type SameShape<A, B> = [A] extends [B] ? ([WithoutCredentials<B>] extends [WithoutCredentials<A>] ? true : false) : false;
export const DESTINATION_SCHEMA_MATCHES: SameShape<z.infer<typeof destinationSchema>, PublicDestination> = true;

export const subscriptionSchema = z.strictObject({
  id: z.string(),
  applicationId: z.string(),
  /** The endpoint URL; for another kind of destination, a read-only description `<kind>:<where>`. */
  url: z.string(),
  destination: destinationSchema,
  eventTypes: z.array(z.string()),
  secrets: z.optional(z.array(z.string())),
  /** With `secrets`: the `whpk_…` public keys of its v1a (`whsk_…`) signing keys. */
  publicKeys: z.optional(z.array(z.string())),
  description: nullableText,
  maxAttempts: z.nullable(int),
  headers: z.record(z.string(), z.string()).check(z.describe(CUSTOM_HEADERS_DESCRIPTION)),
  /** Issue 30: when created or edited, the patterns that match no entry of a non-strict catalogue. */
  warnings: z.optional(z.array(z.string())),
  /** Its content filter (docs/filters.md); null: every event of its types. */
  filter: z.nullable(z.record(z.string(), z.unknown())),
  /** Its transformation's JavaScript source (docs/transformations.md); null: none. */
  transformation: z.nullable(z.string()),
  /** Endpoint authentication (docs/endpointAuth.md), never with its secret part; null: none. */
  auth: z.nullable(endpointAuthSchema),
  /** Whether attempts carry the W3C `traceparent` header of a traced event (docs/operations.md#one-trace-per-webhook). */
  sendTraceparent: z.boolean(),
  paused: z.boolean(),
  pausedAt: nullableTime,
  // Flow control (issue 15, migration 011): present once that migration is applied.
  maxInFlight: z.optional(z.nullable(int)),
  rateLimitPerSecond: z.optional(z.nullable(z.number())),
  attemptTimeoutMs: z.optional(z.nullable(int)),
  ordered: z.optional(z.boolean()),
  status: z.enum(["active", "degraded", "disabled"]),
  health: z.strictObject({
    consecutiveFailures: int,
    disabledReason: nullableText,
    disabledAt: nullableTime,
    nextProbeAt: nullableTime,
    lastFailureAt: nullableTime,
    /** Why this platform's destination policy refuses its URL (naming ALLOWED_DESTINATIONS), or null. */
    destinationRefused: z.optional(nullableText),
  }),
  createdAt: time,
  updatedAt: time,
  /** Only in the answer to a creation with `backfill`: how many past events were sent. */
  backfilled: z.optional(int),
});

/** Which keys the stored secrets are under (docs/secrets.md#rotating-the-key-without-downtime). Key ids only, never key bytes. */
export const encryptionStatusSchema = z.strictObject({
  /** The first key of ENCRYPTION_KEYS: every value written is sealed under it. */
  primaryKeyId: z.string(),
  /** Every key id this process can decrypt with, in ENCRYPTION_KEYS order. */
  keyIds: z.array(z.string()),
  /** Stored values (secrets and header values) per key id; `plaintext` for values not sealed yet. */
  values: z.record(z.string(), int),
  /** True when every stored value is under the primary key: the older keys may be dropped. */
  rotated: z.boolean(),
});

/** What one re-encryption pass did. */
export const reencryptResultSchema = z.strictObject({
  rewritten: int,
  skipped: int,
  unreadable: z.array(z.strictObject({ id: z.string(), error: z.string() })),
});

/** A subscription's v1a public keys (docs/secrets.md#asymmetric-signatures-v1a). */
export const publicKeysSchema = z.strictObject({
  id: z.string(),
  /** `whpk_…` (base64 of the 32-byte ed25519 public key), newest first; empty when it signs with v1 (HMAC) only. */
  publicKeys: z.array(z.string()),
});

export const deliverySchema = z.strictObject({
  id: z.string(),
  eventId: z.string(),
  eventType: z.string(),
  subscriptionId: z.string(),
  applicationId: z.string(),
  status: z.enum(["pending", "delivered", "dead", "cancelled"]),
  attempts: int,
  nextAttemptAt: nullableTime,
  leased: z.boolean(),
  lastStatus: z.nullable(int),
  lastError: nullableText,
  deadReason: nullableText,
  deadAt: nullableTime,
  deliveredAt: nullableTime,
  cancelledAt: nullableTime,
  origin: z.nullable(z.enum(["resend", "test", "backfill"])),
  requestedBy: nullableText,
  replays: int,
  createdAt: time,
  updatedAt: time,
});

export const attemptSchema = z.strictObject({
  id: int,
  attemptNumber: int,
  result: z.enum(["delivered", "retryable", "permanent", "gone"]),
  status: z.nullable(int),
  latencyMs: z.number(),
  errorClass: nullableText,
  responseExcerpt: nullableText,
  /** What the attempt sent (migration 026): every header's name, the values of custom and authentication headers `[redacted]`; null for attempts logged before it, or none sent. */
  requestHeaders: z.optional(z.nullable(z.record(z.string(), z.string()))),
  /** Made by a listener (`webhooks listen`, docs/listen.md): its id; null for the relay's attempts. */
  listenerId: z.optional(z.nullable(z.string())),
  /** A listener's attempt: the local receiver's response headers (an excerpt). */
  responseHeaders: z.optional(z.nullable(z.record(z.string(), z.string()))),
  probe: z.boolean(),
  stale: z.boolean(),
  createdAt: time,
});

export const deadLetterSchema = z.extend(deliverySchema, {
  body: z.string(),
  attemptLog: z.array(attemptSchema),
  replayHistory: z.array(z.strictObject({ previousReason: nullableText, requestedBy: nullableText, createdAt: time })),
});

/** Issue 30: the JSON Schema errors of an event accepted under its type's `warn` validation. */
const schemaErrors = z.optional(z.array(z.strictObject({ path: z.string(), message: z.string() })).check(z.describe("Only for an event whose type validates with `warn` and whose data its schema refused: the errors (the event was accepted).")));
export const eventSummarySchema = z.strictObject({ id: z.string(), applicationId: z.string(), type: z.string(), occurredAt: z.string(), createdAt: time });
export const eventDetailSchema = z.extend(eventSummarySchema, { data: z.unknown(), body: z.string(), deliveries: z.array(deliverySchema), schemaErrors });

const enqueuedDelivery = z.strictObject({ id: z.string(), subscriptionId: z.string(), status: z.enum(["pending", "delivered", "dead", "cancelled"]) });
export const enqueueResultSchema = z.strictObject({ eventId: z.string(), created: z.boolean(), deliveries: z.array(enqueuedDelivery), schemaErrors });
export const sendResultSchema = z.strictObject({ eventId: z.string(), deliveries: z.array(enqueuedDelivery) });
export const batchResultSchema = z.strictObject({ results: z.array(enqueueResultSchema) });
export const replayResultSchema = z.strictObject({ replayed: z.array(z.string()), skipped: z.array(z.string()) });
/** Ordered delivery (issue 15): a key with work, and what a skip did (shared/outbound/ordering.ts). */
export const orderingKeySchema = z.strictObject({
  orderingKey: z.string(),
  blocked: z.boolean(),
  blockedAt: nullableTime,
  waiting: int,
  head: z.nullable(z.strictObject({
    id: z.string(),
    status: z.enum(["pending", "delivered", "dead", "cancelled"]),
    attempts: int,
    deadReason: nullableText,
    nextAttemptAt: nullableTime,
  })),
  updatedAt: time,
});
export const skipResultSchema = z.strictObject({ orderingKey: z.string(), skipped: nullableText, released: nullableText });
export const deletedSchema = z.strictObject({ id: z.string(), deletedAt: time, cancelledDeliveries: int });

const inboxSummaryShape = {
  id: z.string(),
  partnerName: z.string(),
  partnerEventId: z.string(),
  eventType: nullableText,
  status: z.enum(INBOX_STATUSES),
  outcome: nullableText,
  receivedAt: time,
  nextAttemptAt: nullableTime,
  processedAt: nullableTime,
  attempts: int,
  failures: int,
  deferrals: int,
  deferDeadlineAt: nullableTime,
  entityKey: nullableText,
  lastError: nullableText,
  quarantineReason: nullableText,
  payloadMismatches: int,
  replays: int,
  signatureVerified: z.boolean(),
  payloadSha256: z.string(),
};
export const inboxSummarySchema = z.strictObject(inboxSummaryShape);
export const inboxDetailSchema = z.strictObject({
  ...inboxSummaryShape,
  payloadText: z.string(),
  payloadBase64: z.string(),
  /** Issue 30: per destination of a forwarding partner, enqueued (with its delivery) or skipped (with why); null: the partner did not forward. */
  forwarding: z.nullable(z.array(z.union([
    z.strictObject({ destination: z.string(), subscriptionId: z.string(), outcome: z.literal("enqueued"), deliveryId: z.string() }),
    z.strictObject({ destination: z.string(), subscriptionId: z.string(), outcome: z.literal("skipped"), reason: z.string() }),
  ]))),
  conflicts: z.array(z.strictObject({ payloadSha256: z.string(), payloadText: z.string(), deliveries: int, firstSeenAt: time, lastSeenAt: time })),
  replayLog: z.array(z.strictObject({ requestedAt: time, requestedBy: z.string(), previousStatus: z.string(), previousReason: nullableText })),
});
export const inboxReplaySchema = z.strictObject({ replayed: z.array(z.string()), previousStatus: z.optional(z.string()) });

export const entitySchema = z.strictObject({
  machine: z.string(),
  id: z.string(),
  state: z.string(),
  createdAt: time,
  updatedAt: time,
  version: int,
  transitions: z.array(z.strictObject({ eventType: z.string(), outcome: z.string(), from: nullableText, to: nullableText, at: time, inboxEntryId: nullableText })),
});

export const ingestResultSchema = z.strictObject({ received: z.literal(true), inboxId: z.string(), duplicate: z.boolean(), payloadMismatch: z.optional(z.boolean()) });
export const healthSchema = z.strictObject({
  status: z.enum(["ok", "degraded", "unavailable"]),
  database: z.string(),
  /** With `degraded`: what keeps deliveries from going, each saying what to do. */
  problems: z.optional(z.array(z.string())),
});
export const statsSchema = z.strictObject({
  minutes: int,
  series: z.array(z.strictObject({ minute: time, delivered: int, retried: int, failed: int, deadLettered: int })),
});

/** A page of a list: its rows under `name`, and `next`, the cursor of the next page or null. */
export function pageOf(name: string, row: z.core.$ZodType) {
  return z.strictObject({ [name]: z.array(row), next: z.nullable(z.string()) });
}

/** A count of what a list's filters select (`GET /dead-letters/count`, `GET /inbox/count`). */
export const countSchema = z.strictObject({ count: int });
