/**
 * Must-show 5 of issue 33: each stack's dashboard and alarms reference metrics the functions emit.
 * Not the names alone: the metrics are recorded through the platform's own helpers and gauges
 * (shared/telemetry/telemetry.ts, platformGauges.ts) into the exporter each cloud's functions use,
 * and what that exporter sends is compared with what the synthesized dashboard and alarms read:
 * - AWS: the EMF lines (functions/aws/telemetryExporters.ts) under the resource the stack's
 *   OTEL_RESOURCE_ATTRIBUTES make (namespace, metric name, dimension set, as CloudWatch keys them);
 * - Azure: the envelopes Application Insights' exporter posts (its ingestion endpoint a local
 *   stand-in that decodes them: metric name, customDimensions keys);
 * - GCP: the OTLP the Telemetry API receives (the OTLP test peer: names; the PromQL's labels are the
 *   metrics' pinned attributes).
 * ITEM_4 spells issue 33 item 4's metrics out: a rename in shared/telemetry/names.ts fails here
 * (as in test/telemetry/names.test.ts) until the dashboards and this list follow.
 */
import { createServer } from "node:https";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { metrics } from "@opentelemetry/api";
import { AggregationTemporality, DataPointType, MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter } from "@opentelemetry/sdk-metrics";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto";
import { AzureMonitorMetricExporter } from "@azure/monitor-opentelemetry-exporter";
import type { TerraformJson } from "../../stacks/app.js";
import { block, resourcesOf } from "../../stacks/terraformJson.js";
import { DASHBOARD_PANELS } from "../../stacks/telemetry.js";
import { METRIC_ATTRIBUTES, METRICS, type MetricKey } from "../../shared/telemetry/names.js";
import { recordDeadLetter, recordDeliveryAttempt, recordInboxProcessed, recordInboxReceived } from "../../shared/telemetry/telemetry.js";
import { observePlatformGauges } from "../../shared/telemetry/platformGauges.js";
import { resourceAttributesFromEnv } from "../../shared/telemetry/sdk.js";
import { EmfMetricExporter } from "../../functions/aws/telemetryExporters.js";
import { startOtlpTestPeer, type OtlpTestPeer } from "../support/otlpTestPeer.js";
import { synthAll, TEST_OVERRIDES } from "./synthFixture.js";
import { makeCertificate } from "../wiring/support/certificates.js";

/** Issue 33 item 4: delivery outcomes, attempt latency, queue lag, dead letters, breaker states, in flight, inbox backlog, processor failures. */
const ITEM_4 = [
  "webhooks.delivery.attempts", "webhooks.delivery.latency", "webhooks.delivery.queue_lag", "webhooks.dead_letters",
  "webhooks.endpoint.breaker", "webhooks.delivery.in_flight", "webhooks.inbox.backlog", "webhooks.inbox.processed",
];
const keyOf = (name: string) => (Object.entries(METRICS).find(([, v]) => v === name)?.[0]) as MetricKey | undefined;

/** Every metric, every value the panels chart, recorded as the functions record them; exported once through `exporter`. */
async function emitThrough(exporter: PushMetricExporter, resource: Record<string, string>): Promise<void> {
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ resource: resourceFromAttributes(resource), readers: [reader] });
  metrics.setGlobalMeterProvider(provider);
  try {
    for (const outcome of ["success", "retry", "failed"] as const) recordDeliveryAttempt({ outcome, latencyMs: 42 });
    recordDeadLetter("outbound");
    recordDeadLetter("inbound");
    for (const outcome of ["applied", "noop", "deferred", "quarantined", "failed"] as const) recordInboxProcessed(outcome);
    recordInboxReceived("shop", "accepted");
    recordInboxReceived("shop", "rejected");
    // The relay's gauges, with readings as platformGauges.ts reads them from the database.
    const stop = observePlatformGauges(undefined as never, async () => ({
      queueLagSeconds: 12, inFlight: { sub_a: 2, other: 1 },
      breaker: { closed: 3, degraded: 1, open: 1, disabled: 0 }, inboxBacklog: { pending: 2, deferred: 1, failed: 0 },
    }));
    await provider.forceFlush();
    stop();
  } finally {
    await provider.shutdown();
    metrics.disable();
  }
}

let stacks: Record<"aws" | "azure" | "gcp", TerraformJson>;
beforeAll(() => {
  stacks = synthAll();
}, 120_000);

describe("every stack's dashboard", () => {
  it("charts each of item 4's metrics, by the pinned names and attributes", () => {
    const charted = new Set<string>(DASHBOARD_PANELS.map((p) => METRICS[p.metric]));
    expect(ITEM_4.filter((name) => !charted.has(name))).toEqual([]);
    for (const p of DASHBOARD_PANELS) if (p.by) expect(METRIC_ATTRIBUTES[p.metric], p.title).toContain(p.by);
  });

  it("is not made with telemetry off (no SDK in the functions, nothing to chart)", () => {
    const off = synthAll({ telemetry: false });
    expect(resourcesOf(off.aws, "aws_cloudwatch_dashboard")).toEqual([]);
    expect(resourcesOf(off.azure, "azurerm_application_insights_workbook")).toEqual([]);
    expect(resourcesOf(off.gcp, "google_monitoring_dashboard")).toEqual([]);
    const lambdaEnv = block(resourcesOf(off.aws, "aws_lambda_function")[0]!.body.environment).variables as Record<string, string>;
    expect(Object.keys(lambdaEnv).filter((k) => k.startsWith("OTEL_"))).toEqual([]);
  }, 120_000);
});

describe("AWS: the CloudWatch dashboard and alarms read the EMF the functions write", () => {
  const emitted = new Set<string>();
  const key = (ns: string, name: string, dims: Record<string, string>) => `${ns}|${name}|${JSON.stringify(Object.entries(dims).sort())}`;
  let namespace: string;

  beforeAll(async () => {
    const fn = resourcesOf(stacks.aws, "aws_lambda_function").find((f) => String(f.body.function_name).endsWith("-relay"))!;
    const env = block(fn.body.environment).variables as Record<string, string>;
    expect(env.OTEL_METRICS_EXPORTER).toBe("awsemf");
    const resource = resourceAttributesFromEnv(env);
    namespace = resource["service.namespace"]!;
    expect(namespace).toBe(TEST_OVERRIDES.namePrefix);
    const lines: string[] = [];
    await emitThrough(new EmfMetricExporter({ AggregationTemporality, DataPointType }, (line) => lines.push(line)), resource);
    for (const line of lines) {
      const doc = JSON.parse(line) as { _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] } } & Record<string, unknown>;
      for (const set of doc._aws.CloudWatchMetrics) {
        for (const m of set.Metrics) {
          expect(doc[m.Name], m.Name).toBeDefined();
          emitted.add(key(set.Namespace, m.Name, Object.fromEntries(set.Dimensions[0]!.map((d) => [d, String(doc[d])]))));
        }
      }
    }
  });

  it("every widget's metric (namespace, name, dimensions) is one the functions write; the per-endpoint widget searches the dimension they write", () => {
    const [dashboard] = resourcesOf(stacks.aws, "aws_cloudwatch_dashboard");
    const body = JSON.parse(String(dashboard!.body.dashboard_body)) as { widgets: { properties: { title: string; metrics: unknown[][] } }[] };
    expect(body.widgets).toHaveLength(DASHBOARD_PANELS.length);
    const charted = new Set<string>();
    for (const w of body.widgets) {
      for (const m of w.properties.metrics) {
        const expression = (m[0] as { expression?: string }).expression;
        if (expression) {
          const [, ns, dim, name] = /^SEARCH\('\{([^,]+),([^}]+)\} MetricName="([^"]+)"'/.exec(expression)!;
          const searched = dim!.split(",").sort().join();
          expect([...emitted].some((e) => e.startsWith(`${ns}|${name}|`) && JSON.parse(e.split("|")[2]!).map((p: string[]) => p[0]).join() === searched), expression).toBe(true);
          charted.add(name!);
          continue;
        }
        const [ns, name, ...rest] = m as [string, string, ...unknown[]];
        const dims: Record<string, string> = {};
        for (let i = 0; i + 1 < rest.length; i += 2) if (typeof rest[i] === "string") dims[rest[i] as string] = String(rest[i + 1]);
        expect(emitted.has(key(ns, name, dims)), `${w.properties.title}: ${key(ns, name, dims)}`).toBe(true);
        charted.add(name);
      }
    }
    expect(ITEM_4.filter((n) => !charted.has(n))).toEqual([]);
  });

  it("the queue-lag alarm and the dead-letter alarm read metrics the functions write, and notify the alert topic", () => {
    const alarms = resourcesOf(stacks.aws, "aws_cloudwatch_metric_alarm").map((a) => a.body);
    const lag = alarms.find((a) => a.metric_name === "webhooks.delivery.queue_lag")!;
    expect(lag).toMatchObject({ namespace, statistic: "Maximum", comparison_operator: "GreaterThanThreshold", threshold: 300 });
    expect(emitted.has(key(namespace, String(lag.metric_name), {}))).toBe(true);
    const dead = alarms.find((a) => Array.isArray(a.metric_query))!;
    const queries = dead.metric_query as { metric?: unknown; expression?: string }[];
    const read = queries.filter((q) => q.metric).map((q) => block(q.metric as never) as { namespace: string; metric_name: string; dimensions: Record<string, string> });
    expect(read.map((m) => m.dimensions.kind).sort()).toEqual(["inbound", "outbound"]);
    for (const m of read) expect(emitted.has(key(m.namespace, m.metric_name, m.dimensions)), JSON.stringify(m)).toBe(true);
    expect(dead).toMatchObject({ threshold: 0, comparison_operator: "GreaterThanThreshold" });
    for (const a of [lag, dead]) expect(String((a.alarm_actions as string[])[0])).toMatch(/aws_sns_topic\./);
  });
});

describe("Azure: the workbook and log alerts read the customMetrics Application Insights' exporter sends", () => {
  let ingestion: { url: string; close: () => Promise<void> };
  const sent: { name: string; dimensions: string[] }[] = [];

  beforeAll(async () => {
    // Stand-in for Application Insights' ingestion endpoint (HTTPS: the exporter sends nothing
    // else; its private CA given to the exporter's pipeline): decodes the envelopes (gzip JSON lines or an array).
    const tls = await makeCertificate(mkdtempSync(join(tmpdir(), "ingestion-")), "IP:127.0.0.1", "ingestion stand-in CA");
    const server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        let raw = Buffer.concat(chunks);
        if (req.headers["content-encoding"] === "gzip") raw = gunzipSync(raw);
        const text = raw.toString("utf8").trim();
        const envelopes = (text.startsWith("[") ? JSON.parse(text) : text.split("\n").map((l) => JSON.parse(l))) as { data?: { baseData?: { metrics?: { name: string }[]; properties?: Record<string, string> } } }[];
        for (const e of envelopes) for (const m of e.data?.baseData?.metrics ?? []) sent.push({ name: m.name, dimensions: Object.keys(e.data?.baseData?.properties ?? {}) });
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ itemsReceived: envelopes.length, itemsAccepted: envelopes.length, errors: [] }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    ingestion = { url: `https://127.0.0.1:${(server.address() as { port: number }).port}`, close: () => new Promise((r) => server.close(() => r())) };
    const exporter = new AzureMonitorMetricExporter({ connectionString: `InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=${ingestion.url}/`, disableOfflineStorage: true, tlsOptions: { ca: tls.ca } } as ConstructorParameters<typeof AzureMonitorMetricExporter>[0]);
    await emitThrough(exporter, { "service.name": "hooktest-relay" });
  }, 60_000);
  afterAll(async () => { await ingestion?.close(); });

  it("every workbook query and both alerts name a metric the exporter sent, by a dimension it sent", () => {
    expect(sent.length).toBeGreaterThan(0);
    const [workbook] = resourcesOf(stacks.azure, "azurerm_application_insights_workbook");
    const items = (JSON.parse(String(workbook!.body.data_json)) as { items: { content: { query: string; title: string } }[] }).items;
    expect(items).toHaveLength(DASHBOARD_PANELS.length);
    const alerts = resourcesOf(stacks.azure, "azurerm_monitor_scheduled_query_rules_alert_v2").map((a) => (block(a.body.criteria as never) as { query: string }).query);
    expect(alerts).toHaveLength(2);
    const charted = new Set<string>();
    for (const query of [...items.map((i) => i.content.query), ...alerts]) {
      const name = /name == "([^"]+)"/.exec(query)![1]!;
      charted.add(name);
      expect(sent.map((s) => s.name), query).toContain(name);
      for (const [, dim] of query.matchAll(/customDimensions\["([^"]+)"\]/g)) {
        expect(sent.filter((s) => s.name === name).some((s) => s.dimensions.includes(dim!)), `${name} by ${dim}`).toBe(true);
        expect(METRIC_ATTRIBUTES[keyOf(name)!]).toContain(dim);
      }
    }
    expect(ITEM_4.filter((n) => !charted.has(n))).toEqual([]);
    expect(alerts.some((q) => q.includes('"webhooks.delivery.queue_lag"'))).toBe(true);
    expect(alerts.some((q) => q.includes('"webhooks.dead_letters"'))).toBe(true);
  });

  it("each function app sends to it: the azure_monitor exporters, under the app's name", () => {
    for (const app of resourcesOf(stacks.azure, "azurerm_linux_function_app")) {
      const settings = app.body.app_settings as Record<string, string>;
      expect(settings, String(app.body.name)).toMatchObject({ OTEL_TRACES_EXPORTER: "azure_monitor", OTEL_METRICS_EXPORTER: "azure_monitor", OTEL_SERVICE_NAME: app.body.name });
    }
  });
});

describe("GCP: the dashboard and alert policies query the metrics the functions send to the Telemetry API", () => {
  let peer: OtlpTestPeer;
  beforeAll(async () => {
    peer = await startOtlpTestPeer();
    await emitThrough(new OTLPMetricExporter({ url: `${peer.url}/v1/metrics` }), { "service.name": "hooktest-relay" });
  });
  afterAll(async () => { await peer?.close(); });

  it("every chart's and both policies' PromQL selects a metric sent (its name as sent), by one of its pinned attributes", () => {
    const sentNames = new Set(peer.metrics.map((m) => m.name));
    const [dashboard] = resourcesOf(stacks.gcp, "google_monitoring_dashboard");
    const tiles = (JSON.parse(String(dashboard!.body.dashboard_json)) as { mosaicLayout: { tiles: { widget: { xyChart: { dataSets: { timeSeriesQuery: { prometheusQuery: string } }[] } } }[] } }).mosaicLayout.tiles;
    expect(tiles).toHaveLength(DASHBOARD_PANELS.length);
    const policies = resourcesOf(stacks.gcp, "google_monitoring_alert_policy")
      .map((p) => (block(p.body.conditions as never) as { condition_prometheus_query_language?: unknown }).condition_prometheus_query_language)
      .filter(Boolean).map((c) => (block(c as never) as { query: string }).query);
    expect(policies).toHaveLength(2);
    const charted = new Set<string>();
    for (const query of [...tiles.map((t) => t.widget.xyChart.dataSets[0]!.timeSeriesQuery.prometheusQuery), ...policies]) {
      const name = /\{"([^"]+?)(?:_bucket)?"/.exec(query)![1]!;
      charted.add(name);
      expect(sentNames, query).toContain(name);
      for (const [, label] of query.matchAll(/[,(] ?"([a-z_]+)"(?:=~|\)|,)/g)) if (label !== "le") expect(METRIC_ATTRIBUTES[keyOf(name)!], `${query}: ${label}`).toContain(label);
    }
    expect(ITEM_4.filter((n) => !charted.has(n))).toEqual([]);
    expect(policies.some((q) => q.startsWith('max({"webhooks.delivery.queue_lag"}) > 300'))).toBe(true);
  });

  it("each function sends there: OTLP to telemetry.googleapis.com, under the function's name", () => {
    for (const fn of resourcesOf(stacks.gcp, "google_cloudfunctions2_function")) {
      const env = block(fn.body.service_config).environment_variables as Record<string, string>;
      expect(env, String(fn.body.name)).toMatchObject({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://telemetry.googleapis.com", OTEL_SERVICE_NAME: fn.body.name });
    }
  });
});
