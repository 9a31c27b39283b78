/**
 * `npm start` (shared/server/main.ts) as a process, with the OpenTelemetry variables an operator
 * sets: it says so in its banner, serves GET /metrics, exports its spans and metrics by OTLP to a
 * local receiver (test/support/otlpTestPeer.ts, default encoding: protobuf) under the service name
 * given, and flushes them when stopped by SIGTERM; a value it does not take stops the start with
 * the variable named. (Without the variables, test/operator/startBanner.test.ts: the same four lines.)
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startOtlpTestPeer, type OtlpTestPeer } from "../support/otlpTestPeer.js";
import { startPlatformProcess } from "../support/platformProcess.js";
import { parsePrometheusText } from "../support/prometheusText.js";

const TOKEN = "otel-start-test-token-0123456789";
let peer: OtlpTestPeer;
let dataDir: string;
beforeAll(async () => {
  peer = await startOtlpTestPeer();
  dataDir = await mkdtemp(join(tmpdir(), "otel-start-"));
});
afterAll(async () => {
  await peer?.close();
  await rm(dataDir, { recursive: true, force: true });
});

it("exports its spans and metrics to the OTLP endpoint, serves /metrics, flushes at SIGTERM", async () => {
  const started = await startPlatformProcess({
    DATA_DIR: join(dataDir, "pglite"), ADMIN_TOKEN: TOKEN,
    OTEL_EXPORTER_OTLP_ENDPOINT: peer.url, OTEL_METRICS_EXPORTER: "otlp,prometheus", OTEL_SERVICE_NAME: "webhooks-npm-start",
    OTEL_METRIC_EXPORT_INTERVAL: "3600000",
  });
  try {
    expect(started.baseUrl, started.output()).toBeDefined();
    const banner = await started.printed(/ {2}telemetry: .*\n/, 30_000);
    expect(banner).toContain("  telemetry:    traces → otlp (http/protobuf); metrics → otlp (http/protobuf), prometheus (GET /metrics)");
    expect((await fetch(`${started.baseUrl}/healthz`)).status).toBe(200);
    const scrape = await fetch(`${started.baseUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(scrape.status).toBe(200);
    const families = parsePrometheusText(await scrape.text());
    expect(families.get("webhooks_queue_depth")?.samples.find((s) => s.labels.queue === "outbox")?.value).toBe(0);
    expect(families.get("target_info")?.samples[0]?.labels.service_name).toBe("webhooks-npm-start");
  } finally {
    expect(await started.stop("SIGTERM")).toBe(0);
  }
  // Sent at shutdown: the batch of spans and the last metric interval.
  const health = peer.spans.find((s) => s.name === "webhooks.http.request" && s.attributes["http.route"] === "/healthz");
  expect(health, JSON.stringify(peer.spans.map((s) => s.name))).toBeDefined();
  expect(health!.serviceName).toBe("webhooks-npm-start");
  expect(health!.kind).toBe(2);
  expect(new Set(peer.contentTypes)).toEqual(new Set(["application/x-protobuf"]));
  const metricNames = new Set(peer.metrics.map((m) => m.name));
  expect(metricNames.has("webhooks.queue.depth")).toBe(true);
  expect(metricNames.has("webhooks.delivery.queue_lag")).toBe(true);
}, 180_000);

it("a value it does not take stops the start, naming the variable", async () => {
  const started = await startPlatformProcess({ DATA_DIR: join(dataDir, "refused"), ADMIN_TOKEN: TOKEN, OTEL_EXPORTER_OTLP_ENDPOINT: peer.url, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" });
  expect(await started.exit).toBe(1);
  expect(started.output()).toContain("OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported; use http/protobuf or http/json");
  expect(started.output()).not.toContain("    at "); // no stack trace
}, 180_000);
