/**
 * OpenTelemetry traces and metrics with stable, documented names (docs/operations.md).
 *
 * The core depends on `@opentelemetry/api` only: without an SDK installed by the host, every call
 * here is a no-op. A host (a cloud function, a test, an operator's own `--import` preload) installs
 * an SDK and these names appear there.
 *
 * Rule: never put a payload, a secret, a signature or a token into an attribute. `safeAttributes`
 * enforces it for the helpers here by dropping attribute keys that look like such things and
 * refusing long string values (a payload is long, an id is not).
 *
 * @example
 * import { recordDeliveryAttempt, withSpan, SPANS } from "../telemetry/telemetry.js";
 * await withSpan(SPANS.deliveryAttempt, { "webhooks.delivery.id": id }, async () => {
 *   const result = await post();
 *   recordDeliveryAttempt({ outcome: result.outcome, latencyMs: result.latencyMs });
 * });
 */
import { context, isSpanContextValid, metrics, SpanKind, SpanStatusCode, trace, TraceFlags, type Attributes, type Context, type Counter, type Histogram, type Meter, type MeterProvider, type ObservableGauge, type Span } from "@opentelemetry/api";
import { INSTRUMENTATION_SCOPE, METRIC_UNITS, METRICS, SPAN_KINDS, type SpanName } from "./names.js";


// The names are pinned in ./names.ts (and by test/telemetry/names.test.ts); re-exported for the
// modules that already import them from here.
export { INSTRUMENTATION_SCOPE, METRICS, SPANS } from "./names.js";

export type DeliveryOutcome = "success" | "retry" | "failed";
export type InboxReceiveOutcome = "accepted" | "duplicate" | "rejected";
export type InboxProcessOutcome = "applied" | "noop" | "deferred" | "quarantined" | "failed";
export type DeadLetterKind = "outbound" | "inbound";

/** Keys that must never become attributes, whatever the caller passes. */
const FORBIDDEN_KEY = /secret|signature|payload|body|authorization|token|password|cookie|header/i;
/** Ids, names, codes and error classes fit; payloads and response excerpts do not. */
const MAX_STRING_ATTRIBUTE = 200;

/**
 * Filters attributes for spans and metrics: drops forbidden keys, drops strings longer than
 * 200 characters, keeps numbers and booleans. Returns a new object.
 */
export function safeAttributes(attributes: Record<string, string | number | boolean | undefined | null>): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || FORBIDDEN_KEY.test(key)) continue;
    // (The type test made `true` survives as equivalent: a number or boolean has no length.)
    if (typeof value === "string" && value.length > MAX_STRING_ATTRIBUTE) continue;
    out[key] = value;
  }
  return out;
}

interface Instruments {
  deliveryAttempts: Counter;
  deliveryLatency: Histogram;
  deadLetters: Counter;
  inboxReceived: Counter;
  inboxProcessed: Counter;
  replays: Counter;
  alerts: Counter;
}

// The metrics API has no proxy provider: a provider registered after our first call would be
// missed if we cached instruments forever. Cache per provider instead.
let cachedFor: MeterProvider | undefined;
let cached: Instruments | undefined;

function meter(): Meter {
  return metrics.getMeter(INSTRUMENTATION_SCOPE);
}

function instruments(): Instruments {
  const provider = metrics.getMeterProvider();
  // (Made `false`, an equivalent survivor: the SDK hands back the same instrument for the same name.)
  if (cached && cachedFor === provider) return cached;
  const m = meter();
  cachedFor = provider;
  cached = {
    deliveryAttempts: m.createCounter(METRICS.deliveryAttempts, { description: "HTTP attempts of outbound deliveries, by outcome", unit: METRIC_UNITS.deliveryAttempts }),
    deliveryLatency: m.createHistogram(METRICS.deliveryLatency, { description: "Duration of one outbound HTTP attempt", unit: METRIC_UNITS.deliveryLatency }),
    deadLetters: m.createCounter(METRICS.deadLetters, { description: "Deliveries dead-lettered and inbox entries quarantined", unit: METRIC_UNITS.deadLetters }),
    inboxReceived: m.createCounter(METRICS.inboxReceived, { description: "Inbound webhook requests, by partner and outcome", unit: METRIC_UNITS.inboxReceived }),
    inboxProcessed: m.createCounter(METRICS.inboxProcessed, { description: "Inbox entries processed, by outcome", unit: METRIC_UNITS.inboxProcessed }),
    replays: m.createCounter(METRICS.replays, { description: "Dead letters and quarantined entries replayed", unit: METRIC_UNITS.replays }),
    alerts: m.createCounter(METRICS.alerts, { description: "Alerts raised for new dead letters and quarantined entries", unit: METRIC_UNITS.alerts }),
  };
  return cached;
}

/** One HTTP attempt of an outbound delivery finished. */
export function recordDeliveryAttempt(input: { outcome: DeliveryOutcome; latencyMs: number }): void {
  const attrs = { outcome: input.outcome };
  const i = instruments();
  i.deliveryAttempts.add(1, attrs);
  // A histogram takes no negative value; the OTel SDK drops one itself (so `>= 0` made `true`
  // survives against it), another SDK might not.
  if (Number.isFinite(input.latencyMs) && input.latencyMs >= 0) i.deliveryLatency.record(input.latencyMs, attrs);
}

/** `count` deliveries were dead-lettered (outbound) or inbox entries quarantined (inbound). */
export function recordDeadLetter(kind: DeadLetterKind, count = 1): void {
  if (count > 0) instruments().deadLetters.add(count, { kind });
}

/** An inbound request for `partner` ended with `outcome`. Unknown partners are reported as `unknown`. */
export function recordInboxReceived(partner: string, outcome: InboxReceiveOutcome): void {
  // The partner name comes from the URL: bound it so a scanner cannot blow up cardinality.
  const name = /^[a-z0-9_-]{1,40}$/i.test(partner) ? partner : "invalid";
  instruments().inboxReceived.add(1, { partner: name, outcome });
}

/** One inbox entry was processed with `outcome`. */
export function recordInboxProcessed(outcome: InboxProcessOutcome): void {
  instruments().inboxProcessed.add(1, { outcome });
}

/** `count` entries were replayed. */
export function recordReplay(kind: DeadLetterKind, count = 1): void {
  if (count > 0) instruments().replays.add(count, { kind });
}

/** An alert of `type` was raised. */
export function recordAlert(type: string): void {
  instruments().alerts.add(1, { type });
}

export type QueueName = "outbox" | "inbox" | "dead_letters" | "quarantine";

/**
 * Registers the `webhooks.queue.depth` gauge, read by `read()` at each collection.
 * Returns a function that unregisters it. A failing `read` reports nothing for that collection.
 */
export function observeQueueDepth(read: () => Promise<Partial<Record<QueueName, number>>>): () => void {
  const gauge: ObservableGauge = meter().createObservableGauge(METRICS.queueDepth, { description: "Rows waiting, per queue", unit: METRIC_UNITS.queueDepth });
  const callback = async (result: { observe(value: number, attributes?: Attributes): void }) => {
    try {
      const depths = await read();
      for (const [queue, value] of Object.entries(depths)) {
        // The OTel SDK drops a non-number itself (so this test made `true` survives against it); another might not.
        if (typeof value === "number") result.observe(value, { queue });
      }
    } catch {
      // Database down: no sample rather than a wrong one.
    }
  };
  gauge.addCallback(callback);
  return () => gauge.removeCallback(callback);
}

const KINDS = { server: SpanKind.SERVER, client: SpanKind.CLIENT, producer: SpanKind.PRODUCER, consumer: SpanKind.CONSUMER, internal: SpanKind.INTERNAL } as const;

/**
 * Runs `fn` in an active span named `name` (use `SPANS`). Exceptions mark the span as an error with
 * the error's class name only (messages may quote input), and are rethrown. `parent`: a W3C
 * `traceparent` the span continues (a row's, a request's) instead of the active span.
 */
export async function withSpan<T>(name: string, attributes: Record<string, string | number | boolean | undefined | null>, fn: (span: Span) => Promise<T>, parent?: string | null): Promise<T> {
  const tracer = trace.getTracer(INSTRUMENTATION_SCOPE);
  const options = { kind: KINDS[SPAN_KINDS[name as SpanName]] ?? SpanKind.INTERNAL, attributes: safeAttributes(attributes) };
  const run = async (span: Span) => {
    try {
      const result = await fn(span);
      return result;
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.name ?? "Error" });
      span.setAttribute("error.type", (error as Error)?.name ?? "Error");
      throw error;
    } finally {
      span.end();
    }
  };
  // A parent carried in a row or a header (a trace begun in another process) over the active one.
  const remote = parent ? contextOfTraceparent(parent) : undefined;
  return remote ? tracer.startActiveSpan(name, options, remote, run) : tracer.startActiveSpan(name, options, run);
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * The active context with `traceparent` (W3C Trace Context, version 00) as its remote parent;
 * undefined when it is not one (malformed, all-zero ids): the caller then continues the active trace.
 */
export function contextOfTraceparent(traceparent: string, base: Context = context.active()): Context | undefined {
  const m = TRACEPARENT.exec(traceparent.trim());
  if (!m) return undefined;
  const spanContext = { traceId: m[1]!, spanId: m[2]!, traceFlags: Number.parseInt(m[3]!, 16) & TraceFlags.SAMPLED, isRemote: true };
  return isSpanContextValid(spanContext) ? trace.setSpanContext(base, spanContext) : undefined;
}

/**
 * `value` when it is a W3C `traceparent` we would continue (version 00, valid ids), else null: what
 * a header or a queue attribute from outside may carry into a row, and nothing else.
 */
export function validTraceparent(value: unknown): string | null {
  return typeof value === "string" && contextOfTraceparent(value) ? value.trim() : null;
}

/**
 * The W3C `traceparent` of the active span, to carry in a row or a header; null when there is
 * none (no SDK installed: nothing is allocated then, which keeps the delivery path as it was).
 */
export function activeTraceparent(): string | null {
  const span = trace.getActiveSpan();
  if (!span) return null;
  const c = span.spanContext();
  if (!isSpanContextValid(c)) return null;
  return `00-${c.traceId}-${c.spanId}-${c.traceFlags & TraceFlags.SAMPLED ? "01" : "00"}`;
}

/** Sets attributes on a span through the same filter as `withSpan`. */
export function setSpanAttributes(span: Span, attributes: Record<string, string | number | boolean | undefined | null>): void {
  span.setAttributes(safeAttributes(attributes));
}
