/**
 * telemetry.ts through the OpenTelemetry SDK with in-memory exporters: the stable span and metric
 * names (dashboards depend on them), what each helper records and with which attributes, what it
 * refuses to record (secrets, payloads, unbounded partner names), and a provider installed after
 * the first call still being used.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { context, metrics, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type ContextManager } from "@opentelemetry/api";
import { clientAttributes, instrumentTransport } from "../../shared/telemetry/instrument.js";
import { AggregationTemporality, DataPointType, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader, type MetricData } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import {
  activeTraceparent, contextOfTraceparent, INSTRUMENTATION_SCOPE, METRICS, observeQueueDepth, recordAlert, recordDeadLetter, recordDeliveryAttempt, recordInboxProcessed,
  recordInboxReceived, recordReplay, safeAttributes, setSpanAttributes, SPANS, withSpan,
} from "../../shared/telemetry/telemetry.js";
import { METRIC_UNITS, METRICS as PINNED_METRICS, SPANS as PINNED_SPANS } from "../../shared/telemetry/names.js";
import { observePlatformGauges } from "../../shared/telemetry/platformGauges.js";

/** A context manager on AsyncLocalStorage, as a host's SDK installs one (the package is not a dependency). */
class LocalContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();
  active(): Context { return this.storage.getStore() ?? ROOT_CONTEXT; }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.storage.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== "function") return target;
    return ((...args: unknown[]) => this.with(ctx, () => (target as (...a: unknown[]) => unknown)(...args))) as T;
  }
  enable(): this { return this; }
  disable(): this { this.storage.disable(); return this; }
}

const spans = new InMemorySpanExporter();
let reader: PeriodicExportingMetricReader;

/** A fresh global meter provider (delta: each collection holds only what happened since the last), tracer provider and context manager, as a host installs them. */
function install(): void {
  metrics.disable();
  trace.disable();
  context.disable();
  context.setGlobalContextManager(new LocalContextManager());
  reader = new PeriodicExportingMetricReader({ exporter: new InMemoryMetricExporter(AggregationTemporality.DELTA), exportIntervalMillis: 3_600_000 });
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }));
  spans.reset();
}

async function collect(): Promise<MetricData[]> {
  const { resourceMetrics } = await reader.collect();
  return resourceMetrics.scopeMetrics.filter((s) => s.scope.name === INSTRUMENTATION_SCOPE).flatMap((s) => s.metrics);
}

/** Sum points of one metric as [attributes, value] pairs. */
async function points(name: string, collected?: MetricData[]): Promise<Array<[Record<string, unknown>, unknown]>> {
  const m = (collected ?? (await collect())).find((x) => x.descriptor.name === name);
  return (m?.dataPoints ?? []).map((p) => [p.attributes, p.value] as [Record<string, unknown>, unknown]);
}

beforeEach(install);
afterAll(() => { metrics.disable(); trace.disable(); context.disable(); });

describe("names", () => {
  it("the scope is ours; METRICS and SPANS are the pinned ones of names.ts (test/telemetry/names.test.ts pins their values)", () => {
    expect(INSTRUMENTATION_SCOPE).toBe("multicloud-webhooks");
    expect(METRICS).toBe(PINNED_METRICS);
    expect(SPANS).toBe(PINNED_SPANS);
  });

  it("every instrument is described; the latency histogram is in ms", async () => {
    recordDeliveryAttempt({ outcome: "success", latencyMs: 1 });
    recordDeadLetter("outbound");
    recordInboxReceived("shop", "accepted");
    recordInboxProcessed("applied");
    recordReplay("inbound");
    recordAlert("alert.dead_letter");
    const stop = observeQueueDepth(async () => ({ outbox: 1 }));
    const stopGauges = observePlatformGauges(undefined as never, async () => ({
      queueLagSeconds: 1.5, inFlight: { sub_1: 2 }, breaker: { closed: 1, degraded: 0, open: 0, disabled: 0 }, inboxBacklog: { pending: 1, deferred: 0, failed: 0 },
    }));
    const all = await collect();
    stop();
    stopGauges();
    expect(all.map((m) => m.descriptor.name).sort()).toEqual(Object.values(METRICS).sort());
    for (const m of all) expect(m.descriptor.description, m.descriptor.name).toMatch(/^[A-Z]\w+( \S+){2,}$/);
    for (const [key, name] of Object.entries(METRICS)) expect(all.find((m) => m.descriptor.name === name)!.descriptor.unit, name).toBe(METRIC_UNITS[key as keyof typeof METRICS]);
    expect(all.find((m) => m.descriptor.name === METRICS.deliveryLatency)!.descriptor.unit).toBe("ms");
    expect(all.find((m) => m.descriptor.name === METRICS.deliveryLatency)!.dataPointType).toBe(DataPointType.HISTOGRAM);
  });
});

describe("metrics", () => {
  it("a delivery attempt counts once per call by outcome, and its latency goes to the histogram", async () => {
    recordDeliveryAttempt({ outcome: "success", latencyMs: 12 });
    recordDeliveryAttempt({ outcome: "success", latencyMs: 0 });
    recordDeliveryAttempt({ outcome: "retry", latencyMs: 30 });
    const all = await collect();
    expect(await points(METRICS.deliveryAttempts, all)).toEqual([[{ outcome: "success" }, 2], [{ outcome: "retry" }, 1]]);
    const latency = (await points(METRICS.deliveryLatency, all)).map(([a, v]) => [a, (v as { count: number; sum: number }).count, (v as { sum: number }).sum]);
    expect(latency).toEqual([[{ outcome: "success" }, 2, 12], [{ outcome: "retry" }, 1, 30]]);
  });

  it.each([[-1], [Number.NaN], [Number.POSITIVE_INFINITY]])("a latency of %s is counted as an attempt but not recorded", async (latencyMs) => {
    recordDeliveryAttempt({ outcome: "failed", latencyMs });
    const all = await collect();
    expect(await points(METRICS.deliveryAttempts, all)).toEqual([[{ outcome: "failed" }, 1]]);
    expect(await points(METRICS.deliveryLatency, all)).toEqual([]);
  });

  it("dead letters and replays count by kind, one by default, nothing for zero or less", async () => {
    recordDeadLetter("outbound");
    recordDeadLetter("outbound", 3);
    recordDeadLetter("inbound", 0);
    recordDeadLetter("inbound", -2);
    recordReplay("inbound");
    recordReplay("inbound", 2);
    recordReplay("outbound", 0);
    const all = await collect();
    expect(await points(METRICS.deadLetters, all)).toEqual([[{ kind: "outbound" }, 4]]);
    expect(await points(METRICS.replays, all)).toEqual([[{ kind: "inbound" }, 3]]);
  });

  it("inbox processing and alerts count one per call, by outcome and by type", async () => {
    recordInboxProcessed("applied");
    recordInboxProcessed("noop");
    recordInboxProcessed("applied");
    recordAlert("alert.inbox_quarantined");
    const all = await collect();
    expect(await points(METRICS.inboxProcessed, all)).toEqual([[{ outcome: "applied" }, 2], [{ outcome: "noop" }, 1]]);
    expect(await points(METRICS.alerts, all)).toEqual([[{ type: "alert.inbox_quarantined" }, 1]]);
  });

  it.each([
    ["shop", "shop"],
    ["Stripe_EU-2", "Stripe_EU-2"],
    ["a".repeat(40), "a".repeat(40)],
    ["a".repeat(41), "invalid"],
    ["", "invalid"],
    ["shop/../admin", "invalid"],
    ["x shop", "invalid"],
    ["shop x", "invalid"],
    ["shop\n", "invalid"],
    ["café", "invalid"],
  ])("an inbound request for partner %j is counted under %j (bounded cardinality)", async (partner, name) => {
    recordInboxReceived(partner, "rejected");
    expect(await points(METRICS.inboxReceived)).toEqual([[{ partner: name, outcome: "rejected" }, 1]]);
  });

  it("the queue depth gauge reports each queue read, skips what is not a number, reports nothing when the read fails, and stops when unregistered", async () => {
    let answer: () => Promise<Record<string, unknown>> = async () => ({ outbox: 3, inbox: 0, dead_letters: undefined });
    const stop = observeQueueDepth(() => answer() as never);
    expect(await points(METRICS.queueDepth)).toEqual([[{ queue: "outbox" }, 3], [{ queue: "inbox" }, 0]]);
    answer = async () => { throw new Error("database down"); };
    expect(await points(METRICS.queueDepth)).toEqual([]);
    answer = async () => ({ quarantine: 7 });
    expect(await points(METRICS.queueDepth)).toEqual([[{ queue: "quarantine" }, 7]]);
    stop();
    expect(await points(METRICS.queueDepth)).toEqual([]);
  });

  it("a meter provider installed after the first call receives what follows (instruments are not cached across providers)", async () => {
    recordAlert("alert.dead_letter");
    expect(await points(METRICS.alerts)).toEqual([[{ type: "alert.dead_letter" }, 1]]);
    const first = reader;
    install();
    recordAlert("alert.dead_letter");
    recordAlert("alert.dead_letter");
    expect(await points(METRICS.alerts)).toEqual([[{ type: "alert.dead_letter" }, 2]]);
    expect(first).not.toBe(reader);
  });
});

describe("spans", () => {
  it("withSpan runs the function in an active span of that name with filtered attributes, returns its value and ends the span", async () => {
    const result = await withSpan(SPANS.deliveryAttempt, { "webhooks.delivery.id": "d1", attempt: 2, ok: true, "webhook.secret": "whsec_x", gone: undefined }, async (span) => {
      expect(trace.getActiveSpan()).toBe(span);
      setSpanAttributes(span, { "http.response.status_code": 200, "request.body": "{}", note: null });
      return 42;
    });
    expect(result).toBe(42);
    const [s] = spans.getFinishedSpans();
    expect(spans.getFinishedSpans()).toHaveLength(1);
    expect(s!.name).toBe("webhooks.delivery.attempt");
    expect(s!.instrumentationScope.name).toBe("multicloud-webhooks");
    expect(s!.attributes).toEqual({ "webhooks.delivery.id": "d1", attempt: 2, ok: true, "http.response.status_code": 200 });
    expect(s!.status.code).toBe(SpanStatusCode.UNSET);
  });

  it("a span inside another is its child", async () => {
    await withSpan(SPANS.relayBatch, {}, async () => withSpan(SPANS.deliveryAttempt, {}, async () => undefined));
    const [child, parent] = spans.getFinishedSpans();
    expect(child!.name).toBe(SPANS.deliveryAttempt);
    expect(child!.parentSpanContext?.spanId).toBe(parent!.spanContext().spanId);
  });

  it.each([
    ["an Error", new TypeError("the payload {secret} was bad"), "TypeError"],
    ["a custom error", Object.assign(new Error("x"), { name: "InvalidRetryPolicyError" }), "InvalidRetryPolicyError"],
    ["a string", "boom", "Error"],
    ["null", null, "Error"],
  ])("an exception (%s) marks the span as an error with the class name only, and is rethrown", async (_what, thrown, type) => {
    await expect(withSpan(SPANS.inboxProcess, { "webhooks.inbox.id": "i1" }, async () => { throw thrown; })).rejects.toBe(thrown);
    const [s] = spans.getFinishedSpans();
    expect(s!.status).toEqual({ code: SpanStatusCode.ERROR, message: type });
    expect(s!.attributes).toEqual({ "webhooks.inbox.id": "i1", "error.type": type });
    expect(s!.ended).toBe(true);
  });
});

describe("safeAttributes", () => {
  it.each([
    "secret", "webhookSecret", "SIGNATURE", "x-signature", "payload", "request.body", "authorization", "Authorization",
    "token", "adminToken", "password", "cookie", "set-cookie", "header", "http.request.headers",
  ])("drops the key %s whatever its value", (key) => {
    expect(safeAttributes({ [key]: "v", n: 1 })).toEqual({ n: 1 });
    expect(safeAttributes({ [key]: 5 })).toEqual({});
  });

  it("keeps ids, numbers and booleans; drops strings over 200 characters, null and undefined; returns a new object", () => {
    const input = { id: "d1", count: 0, ok: false, big: 1e12, at200: "x".repeat(200), at201: "x".repeat(201), none: null, missing: undefined };
    const out = safeAttributes(input);
    expect(out).toStrictEqual({ id: "d1", count: 0, ok: false, big: 1e12, at200: "x".repeat(200) });
    expect(Object.keys(out)).toEqual(["id", "count", "ok", "big", "at200"]);
    expect(out).not.toBe(input);
  });
});

describe("instrumentTransport", () => {
  const outcome = { result: "delivered" as const, status: 204, latencyMs: 7, errorClass: null, responseExcerpt: null, retryAfterSeconds: null };
  const request = (url: string) => ({ url, webhookId: "evt_1:sub_1", timestamp: 1, body: "{}", secrets: [] });

  it("a client span with the HTTP client conventions' attributes (no path or query), the outcome, and the attempt counted", async () => {
    const transport = instrumentTransport({ deliver: async () => outcome, close: async () => {} });
    await transport.deliver(request("https://hooks.example.com/in?token=abc"));
    await transport.deliver(request("http://[::1]:8080/x"));
    const [first, second] = spans.getFinishedSpans();
    expect(first!.name).toBe(SPANS.deliveryAttempt);
    expect(first!.kind).toBe(SpanKind.CLIENT);
    expect(first!.attributes).toEqual({
      "webhooks.delivery.id": "evt_1:sub_1", "http.request.method": "POST", "server.address": "hooks.example.com", "server.port": 443, "url.scheme": "https",
      "webhooks.outcome": "success", "http.response.status_code": 204, "webhooks.delivery.latency_ms": 7,
    });
    expect(second!.attributes).toMatchObject({ "server.address": "::1", "server.port": 8080, "url.scheme": "http" });
    expect(JSON.stringify(first!.attributes)).not.toContain("token");
    expect(await points(METRICS.deliveryAttempts)).toEqual([[{ outcome: "success" }, 2]]);
  });

  it("keeps the transport's exchange (token requests) when it has one, and adds none when it has not", async () => {
    const exchanged: string[] = [];
    const withExchange = instrumentTransport({ deliver: async () => outcome, close: async () => {}, exchange: async (r) => { exchanged.push(r.url); return { status: 200, body: "{}" }; } });
    expect(await withExchange.exchange!({ url: "https://auth.example.com/token", headers: {}, body: "" })).toEqual({ status: 200, body: "{}" });
    expect(exchanged).toEqual(["https://auth.example.com/token"]);
    expect(instrumentTransport({ deliver: async () => outcome, close: async () => {} }).exchange).toBeUndefined();
  });

  it("clientAttributes of a URL that does not parse: the method only", () => {
    expect(clientAttributes("not a url")).toEqual({ "http.request.method": "POST" });
  });
});

describe("trace context carried in rows and headers", () => {
  it("withSpan with a W3C parent continues that trace as a child of that span; activeTraceparent gives the span's own", async () => {
    const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const inside = await withSpan(SPANS.inboxProcess, {}, async () => activeTraceparent(), parent);
    const [s] = spans.getFinishedSpans();
    expect(s!.spanContext().traceId).toBe("0af7651916cd43dd8448eb211c80319c");
    expect(s!.parentSpanContext?.spanId).toBe("b7ad6b7169203331");
    expect(s!.parentSpanContext?.isRemote).toBe(true);
    expect(inside).toBe(`00-0af7651916cd43dd8448eb211c80319c-${s!.spanContext().spanId}-01`);
  });

  it.each([
    ["malformed", "not-a-traceparent"],
    ["an unknown version", "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"],
    ["an all-zero trace id", "00-00000000000000000000000000000000-b7ad6b7169203331-01"],
    ["an all-zero span id", "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"],
    ["upper case", "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01"],
  ])("a parent that is %s is ignored: the span continues the active trace", async (_what, bad) => {
    expect(contextOfTraceparent(bad)).toBeUndefined();
    await withSpan(SPANS.relayBatch, {}, () => withSpan(SPANS.deliveryAttempt, {}, async () => undefined, bad));
    const [child, outer] = spans.getFinishedSpans();
    expect(child!.parentSpanContext?.spanId).toBe(outer!.spanContext().spanId);
  });

  it("an unsampled parent stays unsampled (flags 00): the SDK's parent-based sampler records nothing", async () => {
    const result = await withSpan(SPANS.inboxProcess, {}, async (span) => span.isRecording(), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
    expect(result).toBe(false);
    expect(spans.getFinishedSpans()).toEqual([]);
  });

  it("activeTraceparent is null outside any span", () => {
    expect(activeTraceparent()).toBeNull();
  });
});
