/**
 * Every span, metric and attribute name the platform emits, with the metrics' units: the names
 * dashboards, alerts and queries are written against. Renaming one breaks them, so each is pinned
 * here and by test/telemetry/names.test.ts, which fails on any change; docs/operations.md lists
 * the same ones.
 *
 * Where the OpenTelemetry semantic conventions name a thing (HTTP server and client, errors,
 * messaging), their attribute names are used as they are (`SEMCONV`); what is ours is under
 * `webhooks.` (`WEBHOOKS_ATTRIBUTES`). Units are UCUM, as the conventions ask (`s`, `ms`, and an
 * annotation in braces for counts: `{attempt}`).
 *
 * @example
 * import { METRICS, SPANS } from "./names.js";
 * meter.createCounter(METRICS.deliveryAttempts, { unit: METRIC_UNITS.deliveryAttempts });
 */

/** Instrumentation scope name, shared by the tracer and the meter. */
export const INSTRUMENTATION_SCOPE = "multicloud-webhooks";

/** Stable metric names. Renaming one is a breaking change for dashboards: don't. */
export const METRICS = {
  /** Observable gauge, `{queue: "outbox" | "inbox" | "dead_letters" | "quarantine"}`: rows waiting. */
  queueDepth: "webhooks.queue.depth",
  /** Counter, `{outcome: "success" | "retry" | "failed"}`: one per HTTP attempt (dead letters: `webhooks.dead_letters`). */
  deliveryAttempts: "webhooks.delivery.attempts",
  /** Histogram, milliseconds, `{outcome}`: duration of one HTTP attempt. */
  deliveryLatency: "webhooks.delivery.latency",
  /** Observable gauge, seconds: how long the oldest due delivery has waited past its due time (0: none waiting). */
  deliveryQueueLag: "webhooks.delivery.queue_lag",
  /** Observable gauge, `{endpoint}`: deliveries leased to a relay now, per subscription (bounded: `ENDPOINT_LABEL_LIMIT`). */
  deliveryInFlight: "webhooks.delivery.in_flight",
  /** Observable gauge, `{state: "closed" | "degraded" | "open" | "disabled"}`: subscriptions per circuit-breaker state. */
  endpointBreaker: "webhooks.endpoint.breaker",
  /** Counter, `{kind: "outbound" | "inbound"}`: deliveries dead-lettered, inbox entries quarantined. */
  deadLetters: "webhooks.dead_letters",
  /** Counter, `{partner, outcome: "accepted" | "duplicate" | "rejected"}`: inbound requests. */
  inboxReceived: "webhooks.inbox.received",
  /** Counter, `{outcome: "applied" | "noop" | "deferred" | "quarantined" | "failed"}`: processing results (`failed`: the processor's failures). */
  inboxProcessed: "webhooks.inbox.processed",
  /** Observable gauge, `{status: "pending" | "deferred" | "failed"}`: inbox entries not processed yet. */
  inboxBacklog: "webhooks.inbox.backlog",
  /** Counter, `{kind: "outbound" | "inbound"}`: replays requested (single or bulk, one per entry). */
  replays: "webhooks.replays",
  /** Counter, `{type: "alert.dead_letter" | "alert.inbox_quarantined"}`: alerts raised. */
  alerts: "webhooks.alerts",
} as const;

export type MetricKey = keyof typeof METRICS;

/** Each metric's unit (UCUM). */
export const METRIC_UNITS: Record<MetricKey, string> = {
  queueDepth: "{row}",
  deliveryAttempts: "{attempt}",
  deliveryLatency: "ms",
  deliveryQueueLag: "s",
  deliveryInFlight: "{delivery}",
  endpointBreaker: "{subscription}",
  deadLetters: "{entry}",
  inboxReceived: "{request}",
  inboxProcessed: "{entry}",
  inboxBacklog: "{entry}",
  replays: "{entry}",
  alerts: "{alert}",
};

/** Each metric's attribute keys: the only ones it is recorded with. */
export const METRIC_ATTRIBUTES: Record<MetricKey, readonly string[]> = {
  queueDepth: ["queue"],
  deliveryAttempts: ["outcome"],
  deliveryLatency: ["outcome"],
  deliveryQueueLag: [],
  deliveryInFlight: ["endpoint"],
  endpointBreaker: ["state"],
  deadLetters: ["kind"],
  inboxReceived: ["partner", "outcome"],
  inboxProcessed: ["outcome"],
  inboxBacklog: ["status"],
  replays: ["kind"],
  alerts: ["type"],
};

/**
 * Most subscriptions named in `webhooks.delivery.in_flight`'s `endpoint` label: the ones with the
 * most deliveries in flight; the rest are summed under `endpoint="other"`. So a platform with a
 * hundred thousand subscriptions still exports at most 21 series of it.
 */
export const ENDPOINT_LABEL_LIMIT = 20;
/** The `endpoint` value the subscriptions beyond `ENDPOINT_LABEL_LIMIT` are summed under. */
export const OTHER_ENDPOINTS = "other";

/** Stable span names. */
export const SPANS = {
  /** `enqueue(tx, event)`: validation and fan-out. Attributes: event id, type, deliveries. */
  outboxEnqueue: "webhooks.outbox.enqueue",
  /** One relay batch: claim, deliver, complete. Attributes: batch size. */
  relayBatch: "webhooks.relay.batch",
  /** One HTTP attempt of one delivery. Attributes: delivery id, attempt, status code, outcome. */
  deliveryAttempt: "webhooks.delivery.attempt",
  /** `POST /webhooks/:partner`: verify and store. Attributes: partner, outcome. */
  inboxIngest: "webhooks.inbox.ingest",
  /** Processing one inbox entry through the reconciler. Attributes: entry id, outcome. */
  inboxProcess: "webhooks.inbox.process",
  /** A replay of dead letters or quarantined entries. Attributes: kind, count. */
  replay: "webhooks.replay",
  /** The alert poller scanning for new dead letters. Attributes: alerts raised. */
  alertScan: "webhooks.alerts.scan",
  /** Every other management and page request. */
  httpRequest: "webhooks.http.request",
} as const;

export type SpanName = (typeof SPANS)[keyof typeof SPANS];

/**
 * Each span's kind, as the conventions define them: the HTTP requests we serve are `server`, the
 * HTTP attempts we make `client`, an outbox write `producer` (it hands a message on for later) and
 * an inbox entry's processing `consumer`; the rest is our own work (`internal`).
 */
export const SPAN_KINDS: Record<SpanName, "server" | "client" | "producer" | "consumer" | "internal"> = {
  "webhooks.outbox.enqueue": "producer",
  "webhooks.relay.batch": "internal",
  "webhooks.delivery.attempt": "client",
  "webhooks.inbox.ingest": "server",
  "webhooks.inbox.process": "consumer",
  "webhooks.replay": "server",
  "webhooks.alerts.scan": "internal",
  "webhooks.http.request": "server",
};

/** The semantic conventions' attribute names we set (HTTP server and client, errors). */
export const SEMCONV = {
  httpRequestMethod: "http.request.method",
  httpRoute: "http.route",
  httpResponseStatusCode: "http.response.status_code",
  serverAddress: "server.address",
  serverPort: "server.port",
  urlScheme: "url.scheme",
  errorType: "error.type",
} as const;

/** Our own attribute names, all under `webhooks.`. */
export const WEBHOOKS_ATTRIBUTES = {
  deliveryId: "webhooks.delivery.id",
  deliveryLatencyMs: "webhooks.delivery.latency_ms",
  outcome: "webhooks.outcome",
  partner: "webhooks.partner",
  replayKind: "webhooks.replay.kind",
  replayCount: "webhooks.replay.count",
  alertsRaised: "webhooks.alerts.raised",
  inboxId: "webhooks.inbox.id",
  inboxResult: "webhooks.inbox.result",
  eventType: "webhooks.event.type",
  eventId: "webhooks.event.id",
  eventCreated: "webhooks.event.created",
  events: "webhooks.events",
  deliveries: "webhooks.deliveries",
  batchSize: "webhooks.batch.size",
} as const;
