/**
 * What the AWS functions add to the OpenTelemetry SDK (functions/telemetry.ts), sent with no
 * collector to run (docs/operations.md, "In the clouds"):
 * - traces: OTLP to an `https://xray.<region>.amazonaws.com/v1/traces` endpoint (X-Ray's OTLP
 *   endpoint, which needs CloudWatch Transaction Search) are signed with SigV4 by the function's
 *   role, as that endpoint requires; any other OTLP endpoint is sent to as the standard exporter does;
 * - metrics: `OTEL_METRICS_EXPORTER=awsemf` writes them as CloudWatch embedded metric format
 *   (EMF) lines on stdout, which Lambda hands to CloudWatch Logs and CloudWatch turns into
 *   metrics: no request, no signature, no endpoint, so exporting costs a log line per data point.
 *   (An OTLP metrics endpoint of CloudWatch's, `monitoring.<region>.amazonaws.com`, is signed too.)
 * The exporters are in ./telemetryExporters.ts, imported only when telemetry is configured.
 */
import { FUNCTION_EXTRAS, type CloudTelemetry } from "../telemetry.js";

export const AWS_TELEMETRY: CloudTelemetry = {
  extras: { ...FUNCTION_EXTRAS, metrics: ["awsemf"] },
  metricsEveryInvocation: true,
  host: async (env) => (await import("./telemetryExporters.js")).awsTelemetryHost(env),
};
