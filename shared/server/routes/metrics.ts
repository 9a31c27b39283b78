/**
 * `GET /metrics`: every metric of docs/operations.md in the Prometheus text format, for a scraper
 * holding an operator credential (ADMIN_TOKEN or an operator API key: the metrics count every
 * application's traffic, so an application key gets 403). Served by the local platform when
 * OTEL_METRICS_EXPORTER names `prometheus`; otherwise it answers 404 `metrics_not_enabled` saying
 * so, and no metric SDK runs (nothing is counted that nobody reads).
 */
import { HttpError, type Route } from "../router.js";
import { route } from "./validate.js";

/** The content type of the Prometheus text exposition format, version 0.0.4. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** The route, reading the text from `scrape` (`Telemetry.prometheus`), or refusing when there is none. */
export function metricsRoute(scrape: (() => Promise<string>) | undefined): Route {
  return route("GET", "/metrics", {
    operationId: "metrics", access: { action: "read", audience: "operator" }, tag: "Admin",
    // A database outage leaves the gauges out of the answer (no sample rather than a wrong one), never a 503.
    noDatabase: true,
    summary: "Metrics in the Prometheus text format",
    description: "The platform's OpenTelemetry metrics (docs/operations.md#traces-and-metrics-opentelemetry) as Prometheus text 0.0.4: a counter `webhooks.delivery.attempts` is the series `webhooks_delivery_attempts_total`, and each metric's unit is on its `# UNIT` line. Served when OTEL_METRICS_EXPORTER includes `prometheus`; 404 `metrics_not_enabled` otherwise. The gauges read the database at each scrape; while it is away they are left out.",
    responses: {
      200: { description: "The metrics.", mediaType: PROMETHEUS_CONTENT_TYPE },
      404: { description: "Metrics are not enabled on this platform (`metrics_not_enabled`)." },
    },
  }, async () => {
    if (!scrape) {
      throw new HttpError(404, "metrics_not_enabled", "Metrics are not enabled: start the platform with OTEL_METRICS_EXPORTER=prometheus (docs/operations.md) to serve them here.");
    }
    return { status: 200, headers: { "content-type": PROMETHEUS_CONTENT_TYPE, "cache-control": "no-store" }, body: await scrape() };
  });
}
