/**
 * shared/telemetry/settings.ts: which OTEL_* environments turn the SDK on, and the precise error
 * for a value we do not take. Nothing set (the default) must mean no SDK at all.
 */
import { describe, expect, it } from "vitest";
import { TelemetryConfigError, telemetrySettings } from "../../shared/telemetry/settings.js";

const defaults = { tracesProtocol: "http/protobuf", metricsProtocol: "http/protobuf", metricIntervalMs: 60_000 };

describe("telemetrySettings", () => {
  it.each([
    ["nothing", {}],
    ["only a service name and a sampler", { OTEL_SERVICE_NAME: "svc", OTEL_TRACES_SAMPLER: "always_on" }],
    ["blank values", { OTEL_EXPORTER_OTLP_ENDPOINT: "  ", OTEL_TRACES_EXPORTER: "" }],
    ["the SDK disabled, whatever else", { OTEL_SDK_DISABLED: "TRUE", OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_METRICS_EXPORTER: "prometheus" }],
    ["every exporter none", { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_TRACES_EXPORTER: "none", OTEL_METRICS_EXPORTER: "none" }],
  ])("%s: off (undefined)", (_what, env) => {
    expect(telemetrySettings(env)).toBeUndefined();
  });

  it("an OTLP endpoint turns both signals on, over OTLP, protobuf by default", () => {
    expect(telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })).toEqual({ traces: ["otlp"], metrics: ["otlp"], ...defaults });
  });

  it("a signal's own endpoint turns that signal on only", () => {
    expect(telemetrySettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://c/v1/traces" })).toEqual({ traces: ["otlp"], metrics: [], ...defaults });
    expect(telemetrySettings({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: "http://c/v1/metrics" })).toEqual({ traces: [], metrics: ["otlp"], ...defaults });
  });

  it("exporters named explicitly, comma-separated, case and spaces forgiven, repeats once; none for one signal", () => {
    expect(telemetrySettings({ OTEL_METRICS_EXPORTER: " Prometheus , otlp,prometheus", OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://x" }))
      .toEqual({ traces: [], metrics: ["prometheus", "otlp"], ...defaults });
    expect(telemetrySettings({ OTEL_TRACES_EXPORTER: "console" })).toEqual({ traces: ["console"], metrics: [], ...defaults });
  });

  it("protocols per signal over the general one; the export interval", () => {
    expect(telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: "http/protobuf", OTEL_METRIC_EXPORT_INTERVAL: "5000" }))
      .toEqual({ traces: ["otlp"], metrics: ["otlp"], tracesProtocol: "http/json", metricsProtocol: "http/protobuf", metricIntervalMs: 5000 });
  });

  it.each([
    [{ OTEL_TRACES_EXPORTER: "jaeger" }, "OTEL_TRACES_EXPORTER=jaeger: jaeger is not an exporter here; use otlp, console, none (comma-separated)."],
    [{ OTEL_METRICS_EXPORTER: "otlp,statsd" }, "OTEL_METRICS_EXPORTER=otlp,statsd: statsd is not an exporter here; use otlp, prometheus, console, none (comma-separated)."],
    [{ OTEL_METRICS_EXPORTER: "none,otlp" }, "OTEL_METRICS_EXPORTER=none,otlp: none cannot be combined with another exporter."],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported; use http/protobuf or http/json (every OpenTelemetry Collector and the cloud OTLP endpoints take both)."],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http" }, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http is not supported; use http/protobuf or http/json (every OpenTelemetry Collector and the cloud OTLP endpoints take both)."],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_METRIC_EXPORT_INTERVAL: "1.5" }, "OTEL_METRIC_EXPORT_INTERVAL=1.5: use a whole number of milliseconds from 100 to 86400000."],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_METRIC_EXPORT_INTERVAL: "99" }, "OTEL_METRIC_EXPORT_INTERVAL=99: use a whole number of milliseconds from 100 to 86400000."],
  ])("%j is refused with a message naming the variable and what it takes", (env, message) => {
    expect(() => telemetrySettings(env)).toThrow(TelemetryConfigError);
    expect(() => telemetrySettings(env)).toThrow(message);
  });
});
