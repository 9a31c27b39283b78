/**
 * Must show 3 of issue 33: the pinned names. Dashboards, alerts and queries are written against
 * these span, metric and attribute names and units; this test fails when one changes, when a
 * `webhooks.*` name is used in the code without being pinned in shared/telemetry/names.ts, when
 * docs/operations.md stops listing one, or when a semantic-conventions name we use is not the
 * conventions' own. Changing a name here is a breaking change: say so in the release notes.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { context, ROOT_CONTEXT, SpanKind, trace } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import * as semconv from "@opentelemetry/semantic-conventions";
import { afterAll, describe, expect, it } from "vitest";
import {
  ENDPOINT_LABEL_LIMIT, INSTRUMENTATION_SCOPE, METRIC_ATTRIBUTES, METRIC_UNITS, METRICS, OTHER_ENDPOINTS, SEMCONV, SPAN_KINDS, SPANS, WEBHOOKS_ATTRIBUTES,
} from "../../shared/telemetry/names.js";
import { withSpan } from "../../shared/telemetry/telemetry.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

describe("pinned names", () => {
  it("scope, metric names, units and attributes", () => {
    expect(INSTRUMENTATION_SCOPE).toBe("multicloud-webhooks");
    expect(METRICS).toEqual({
      queueDepth: "webhooks.queue.depth",
      deliveryAttempts: "webhooks.delivery.attempts",
      deliveryLatency: "webhooks.delivery.latency",
      deliveryQueueLag: "webhooks.delivery.queue_lag",
      deliveryInFlight: "webhooks.delivery.in_flight",
      endpointBreaker: "webhooks.endpoint.breaker",
      deadLetters: "webhooks.dead_letters",
      inboxReceived: "webhooks.inbox.received",
      inboxProcessed: "webhooks.inbox.processed",
      inboxBacklog: "webhooks.inbox.backlog",
      replays: "webhooks.replays",
      alerts: "webhooks.alerts",
    });
    expect(METRIC_UNITS).toEqual({
      queueDepth: "{row}", deliveryAttempts: "{attempt}", deliveryLatency: "ms", deliveryQueueLag: "s", deliveryInFlight: "{delivery}",
      endpointBreaker: "{subscription}", deadLetters: "{entry}", inboxReceived: "{request}", inboxProcessed: "{entry}", inboxBacklog: "{entry}",
      replays: "{entry}", alerts: "{alert}",
    });
    expect(METRIC_ATTRIBUTES).toEqual({
      queueDepth: ["queue"], deliveryAttempts: ["outcome"], deliveryLatency: ["outcome"], deliveryQueueLag: [], deliveryInFlight: ["endpoint"],
      endpointBreaker: ["state"], deadLetters: ["kind"], inboxReceived: ["partner", "outcome"], inboxProcessed: ["outcome"], inboxBacklog: ["status"],
      replays: ["kind"], alerts: ["type"],
    });
    expect([ENDPOINT_LABEL_LIMIT, OTHER_ENDPOINTS]).toEqual([20, "other"]);
  });

  it("span names and kinds", () => {
    expect(SPANS).toEqual({
      outboxEnqueue: "webhooks.outbox.enqueue",
      relayBatch: "webhooks.relay.batch",
      deliveryAttempt: "webhooks.delivery.attempt",
      inboxIngest: "webhooks.inbox.ingest",
      inboxProcess: "webhooks.inbox.process",
      replay: "webhooks.replay",
      alertScan: "webhooks.alerts.scan",
      httpRequest: "webhooks.http.request",
    });
    expect(SPAN_KINDS).toEqual({
      "webhooks.outbox.enqueue": "producer",
      "webhooks.relay.batch": "internal",
      "webhooks.delivery.attempt": "client",
      "webhooks.inbox.ingest": "server",
      "webhooks.inbox.process": "consumer",
      "webhooks.replay": "server",
      "webhooks.alerts.scan": "internal",
      "webhooks.http.request": "server",
    });
  });

  it("attribute names: the conventions' as they define them, ours under webhooks.", () => {
    expect(SEMCONV).toEqual({
      httpRequestMethod: semconv.ATTR_HTTP_REQUEST_METHOD,
      httpRoute: semconv.ATTR_HTTP_ROUTE,
      httpResponseStatusCode: semconv.ATTR_HTTP_RESPONSE_STATUS_CODE,
      serverAddress: semconv.ATTR_SERVER_ADDRESS,
      serverPort: semconv.ATTR_SERVER_PORT,
      urlScheme: semconv.ATTR_URL_SCHEME,
      errorType: semconv.ATTR_ERROR_TYPE,
    });
    expect(Object.values(SEMCONV)).toEqual(["http.request.method", "http.route", "http.response.status_code", "server.address", "server.port", "url.scheme", "error.type"]);
    expect(WEBHOOKS_ATTRIBUTES).toEqual({
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
    });
  });
});

describe("the names in use are the pinned ones", () => {
  const sources = (dir: string): string[] => readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith(".ts") ? [path] : [];
  });
  const pinned = new Set<string>([...Object.values(METRICS), ...Object.values(SPANS), ...Object.values(WEBHOOKS_ATTRIBUTES)]);
  /** `webhooks.*` strings that are not telemetry names, and why. */
  const NOT_TELEMETRY = new Set([
    "webhooks.test", // TEST_EVENT_TYPE, an event type (shared/outbound/operatorSends.ts)
    "webhooks.health_cause", // a PostgreSQL setting the health triggers read (shared/outbound/subscriptions.ts)
  ]);

  it("every \"webhooks.…\" string in shared/ and functions/ is pinned in names.ts (or known not to be a telemetry name)", () => {
    const unpinned: string[] = [];
    let seen = 0;
    for (const file of [...sources(join(root, "shared")), ...sources(join(root, "functions"))]) {
      if (file.endsWith(join("telemetry", "names.ts"))) continue;
      for (const [, name] of readFileSync(file, "utf8").matchAll(/["'`](webhooks\.[a-z_.]+)["'`]/g)) {
        seen += 1;
        if (!pinned.has(name!) && !NOT_TELEMETRY.has(name!)) unpinned.push(`${file.slice(root.length)}: ${name}`);
      }
    }
    expect(unpinned).toEqual([]);
    expect(seen).toBeGreaterThan(10); // the scan finds the names in use (it is not passing on nothing)
  });

  it("docs/operations.md lists every metric with its unit, every span and every attribute", () => {
    const doc = readFileSync(join(root, "docs", "operations.md"), "utf8");
    for (const [key, name] of Object.entries(METRICS)) {
      const row = doc.split("\n").find((line) => line.startsWith(`| \`${name}\` |`));
      expect(row, name).toBeDefined();
      expect(row, name).toContain(`\`${METRIC_UNITS[key as keyof typeof METRICS]}\``);
    }
    for (const name of Object.values(SPANS)) expect(doc, name).toContain(`| \`${name}\` |`);
    for (const name of [...Object.values(WEBHOOKS_ATTRIBUTES), ...Object.values(SEMCONV)]) expect(doc, name).toContain(`\`${name}\``);
  });
});

describe("span kinds as emitted", () => {
  const exporter = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  afterAll(() => { trace.disable(); context.disable(); });

  it("withSpan gives each pinned span its kind, and an unknown name internal", async () => {
    const expected = { server: SpanKind.SERVER, client: SpanKind.CLIENT, producer: SpanKind.PRODUCER, consumer: SpanKind.CONSUMER, internal: SpanKind.INTERNAL };
    for (const name of Object.values(SPANS)) await context.with(ROOT_CONTEXT, () => withSpan(name, {}, async () => undefined));
    await withSpan("not.pinned", {}, async () => undefined);
    const kinds = Object.fromEntries(exporter.getFinishedSpans().map((s) => [s.name, s.kind]));
    expect(kinds).toEqual({ ...Object.fromEntries(Object.entries(SPAN_KINDS).map(([n, k]) => [n, expected[k]])), "not.pinned": SpanKind.INTERNAL });
  });
});
