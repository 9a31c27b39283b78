/**
 * shared/telemetry/sdk.ts through a local OTLP/HTTP receiver (test/support/otlpTestPeer.ts): the
 * SDK it installs exports the platform's spans and metrics, in both OTLP/HTTP encodings, under the
 * resource OTEL_SERVICE_NAME names, honouring OTEL_TRACES_SAMPLER; and with nothing configured no
 * SDK is installed, nor imported anywhere but inside startTelemetry.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { metrics, trace } from "@opentelemetry/api";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_SERVICE_NAME, otlpUrl, resourceAttributesFromEnv, startTelemetry, startTelemetryFromEnv } from "../../shared/telemetry/sdk.js";
import { telemetrySettings } from "../../shared/telemetry/settings.js";
import { instrumentTransport } from "../../shared/telemetry/instrument.js";
import { activeTraceparent, METRICS, recordDeliveryAttempt, SPANS, withSpan } from "../../shared/telemetry/telemetry.js";
import { VERSION } from "../../shared/version.js";
import { startOtlpTestPeer, type OtlpTestPeer } from "../support/otlpTestPeer.js";

let peer: OtlpTestPeer;
beforeAll(async () => { peer = await startOtlpTestPeer(); });
afterAll(async () => { await peer.close(); });
afterEach(() => {
  peer.spans.length = 0;
  peer.metrics.length = 0;
  peer.contentTypes.length = 0;
  delete process.env.OTEL_TRACES_SAMPLER;
});

describe("with OTEL_EXPORTER_OTLP_ENDPOINT", () => {
  it.each([["http/protobuf", "application/x-protobuf"], ["http/json", "application/json"]])("%s: spans and metrics reach the receiver with the parent links, kinds, units and resource", async (protocol, contentType) => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: `${peer.url}/`, OTEL_EXPORTER_OTLP_PROTOCOL: protocol, OTEL_SERVICE_NAME: "webhooks-test", OTEL_METRIC_EXPORT_INTERVAL: "3600000" };
    const telemetry = await startTelemetry(telemetrySettings(env)!, env);
    try {
      await withSpan(SPANS.relayBatch, {}, () => withSpan(SPANS.deliveryAttempt, { "webhooks.delivery.id": "evt_1:sub_1" }, async () => {
        recordDeliveryAttempt({ outcome: "success", latencyMs: 12 });
      }));
    } finally {
      await telemetry.shutdown(); // flushes both signals
    }
    expect(new Set(peer.contentTypes)).toEqual(new Set([contentType]));
    const [attempt, batch] = [peer.spans.find((s) => s.name === SPANS.deliveryAttempt)!, peer.spans.find((s) => s.name === SPANS.relayBatch)!];
    expect(peer.spans).toHaveLength(2);
    expect(attempt.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(attempt.traceId).toBe(batch.traceId);
    expect(attempt.parentSpanId).toBe(batch.spanId);
    expect(attempt.kind).toBe(3); // client
    expect(batch.kind).toBe(1); // internal
    expect(attempt.attributes).toMatchObject({ "webhooks.delivery.id": "evt_1:sub_1" });
    expect(attempt.serviceName).toBe("webhooks-test");
    expect(attempt.scope).toBe("multicloud-webhooks");
    expect(peer.metrics.filter((m) => m.name.startsWith("webhooks.")).map((m) => [m.name, m.unit]).sort())
      .toEqual([[METRICS.deliveryAttempts, "{attempt}"], [METRICS.deliveryLatency, "ms"]]);
    expect(peer.metrics[0]!.serviceName).toBe("webhooks-test");
    // The providers are uninstalled at shutdown: what follows is a no-op again.
    expect(trace.getTracer("x").startSpan("y").isRecording()).toBe(false);
  });

  it("OTEL_TRACES_SAMPLER=always_off (read by the SDK) exports no span; the service name defaults to ours with the version", async () => {
    process.env.OTEL_TRACES_SAMPLER = "always_off";
    const env = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${peer.url}/v1/traces`, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" };
    const telemetry = await startTelemetry(telemetrySettings(env)!, env);
    await withSpan(SPANS.alertScan, {}, async () => undefined);
    delete process.env.OTEL_TRACES_SAMPLER;
    await withSpan(SPANS.alertScan, {}, async () => undefined); // the sampler was read at start: still off
    await telemetry.shutdown();
    expect(peer.spans).toEqual([]);

    const on = await startTelemetry(telemetrySettings(env)!, env);
    await withSpan(SPANS.alertScan, {}, async () => undefined);
    await on.shutdown();
    expect(peer.spans.map((s) => [s.name, s.serviceName])).toEqual([[SPANS.alertScan, DEFAULT_SERVICE_NAME]]);
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("otlpUrl: the signal's own variable as it is, else the base with /v1/<signal>", () => {
    expect(otlpUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" }, "traces")).toBe("http://c:4318/v1/traces");
    expect(otlpUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318/base//" }, "metrics")).toBe("http://c:4318/base/v1/metrics");
    expect(otlpUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: "http://m/x" }, "metrics")).toBe("http://m/x");
    expect(otlpUrl({}, "traces")).toBeUndefined();
  });

  it("prometheus: a pull reader whose text holds the metrics, and no server of its own", async () => {
    const env = { OTEL_METRICS_EXPORTER: "prometheus" };
    const telemetry = await startTelemetry(telemetrySettings(env)!, env);
    try {
      recordDeliveryAttempt({ outcome: "retry", latencyMs: 3 });
      const text = await telemetry.prometheus!();
      expect(text).toContain('webhooks_delivery_attempts_total{outcome="retry",otel_scope_name="multicloud-webhooks"');
      expect(telemetry.settings.traces).toEqual([]);
      expect(trace.getTracer("x").startSpan("y").isRecording()).toBe(false);
    } finally {
      await telemetry.shutdown();
    }
    // Nothing listens on the exporter's default port 9464 on our behalf.
    await expect(fetch("http://127.0.0.1:9464/metrics")).rejects.toThrow();
  });
});

describe("with nothing configured", () => {
  it("no SDK: the API's no-op providers stay, and no span records", async () => {
    expect(await startTelemetryFromEnv({ OTEL_SERVICE_NAME: "ignored alone" })).toBeUndefined();
    expect(trace.getTracer("x").startSpan("y").isRecording()).toBe(false);
    expect(metrics.getMeterProvider().constructor.name).toBe("NoopMeterProvider");
  });

  it("the delivery path as it was: the attempt's request reaches the transport as the same object (no copy, no URL parsed), a stored traceparent unchanged; no trace context to store", async () => {
    const seen: unknown[] = [];
    const outcome = { result: "delivered" as const, status: 200, latencyMs: 1, errorClass: null, responseExcerpt: null, retryAfterSeconds: null };
    const transport = instrumentTransport({ deliver: async (r) => { seen.push(r); return outcome; }, close: async () => {} });
    const traced = { url: "http://127.0.0.1:9/x", webhookId: "e:s", timestamp: 1, body: "{}", secrets: [], headers: { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" } };
    const plain = { url: "http://127.0.0.1:9/x", webhookId: "e:s", timestamp: 1, body: "{}", secrets: [] };
    await transport.deliver(traced);
    await transport.deliver(plain);
    expect(seen[0]).toBe(traced);
    expect(seen[1]).toBe(plain);
    expect(traced.headers.traceparent).toBe("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    expect(await withSpan(SPANS.outboxEnqueue, {}, async () => activeTraceparent())).toBeNull();
  });

  it("no module of shared/ or functions/ imports an SDK package statically; sdk.ts and the cloud functions' exporters (themselves imported only dynamically) import them, dynamically", () => {
    const root = fileURLToPath(new URL("../..", import.meta.url));
    const files = (dir: string): string[] => readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : [];
    });
    const sdkPackage = /@opentelemetry\/(?!api["/])[\w-]+/;
    const offenders: string[] = [];
    let dynamicInSdk = 0;
    for (const file of [...files(join(root, "shared")), ...files(join(root, "functions"))]) {
      for (const line of readFileSync(file, "utf8").split("\n")) {
        if (!sdkPackage.test(line) || !/\bimport\b|\bfrom\b|require\(/.test(line)) continue;
        // Types only: erased at compile time, nothing loaded.
        if (/^\s*import type\b/.test(line) || /typeof import\(/.test(line)) continue;
        const dynamic = /await import\("@opentelemetry\//.test(line);
        if (file.endsWith(join("shared", "telemetry", "sdk.ts")) && dynamic) dynamicInSdk += 1;
        else if (/functions[\\/](aws|azure|gcp)[\\/]telemetryExporters\.ts$/.test(file) && dynamic) continue;
        else offenders.push(`${file.slice(root.length)}: ${line.trim()}`);
      }
    }
    expect(offenders).toEqual([]);
    expect(dynamicInSdk).toBeGreaterThanOrEqual(7);
    // The exporters' modules are reached only by a dynamic import (functions/<cloud>/telemetry.ts).
    const staticallyImported = files(join(root, "functions")).filter((file) => /from "\.\/telemetryExporters\.js"|^import .*telemetryExporters/m.test(readFileSync(file, "utf8")));
    expect(staticallyImported).toEqual([]);
  });
});

describe("resourceAttributesFromEnv", () => {
  it("reads OTEL_RESOURCE_ATTRIBUTES percent-decoded, skips malformed pairs, and OTEL_SERVICE_NAME wins", () => {
    expect(resourceAttributesFromEnv({ OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=prod, team=a%2Cb,bad,=x,service.name=fromattrs,z=%E0%A4%A" }))
      .toEqual({ "deployment.environment": "prod", team: "a,b", "service.name": "fromattrs" });
    expect(resourceAttributesFromEnv({ OTEL_RESOURCE_ATTRIBUTES: "service.name=fromattrs", OTEL_SERVICE_NAME: "svc" })).toEqual({ "service.name": "svc" });
    expect(resourceAttributesFromEnv({})).toEqual({});
  });
});
