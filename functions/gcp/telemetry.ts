/**
 * What the GCP functions add to the OpenTelemetry SDK (functions/telemetry.ts): OTLP to Google's
 * Telemetry API (`OTEL_EXPORTER_OTLP_ENDPOINT=https://telemetry.googleapis.com`, which stores
 * spans in Cloud Trace and metrics in Cloud Monitoring, names as they are) carries an OAuth 2.0
 * token of the function's service account (google-auth-library, asked before each export and
 * cached by it until it nears expiry) and `x-goog-user-project`; the resource has `gcp.project_id`,
 * which the API requires. Any other OTLP endpoint is sent to as the standard exporter does.
 * No collector, no exporter of Google's own. Loaded only when configured.
 */
import { FUNCTION_EXTRAS, type CloudTelemetry } from "../telemetry.js";

export const GCP_TELEMETRY: CloudTelemetry = {
  extras: FUNCTION_EXTRAS,
  host: async (env) => (await import("./telemetryExporters.js")).gcpTelemetryHost(env),
};
