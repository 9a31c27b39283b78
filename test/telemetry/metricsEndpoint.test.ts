/**
 * Must show 2 of issue 33: the local platform, run with OTEL_METRICS_EXPORTER=prometheus, serves
 * `GET /metrics` to operators only; after real traffic (deliveries delivered and dead-lettered, a
 * replay, signed inbound webhooks applied, refused and quarantined, alerts) the text parses with a
 * strict Prometheus text parser (test/support/prometheusText.ts), every documented metric is there
 * with its type and unit, and the per-endpoint label stays bounded while 22 endpoints hold
 * deliveries in flight (20 named, the rest under `other`).
 */
import { createServer, type Server, type ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateSecret, sign } from "../../shared/outbound/signature.js";
import { HttpError } from "../../shared/server/router.js";
import { metricsRoute, PROMETHEUS_CONTENT_TYPE } from "../../shared/server/routes/metrics.js";
import { ENDPOINT_LABEL_LIMIT, METRIC_ATTRIBUTES, METRIC_UNITS, METRICS, OTHER_ENDPOINTS, type MetricKey } from "../../shared/telemetry/names.js";
import { startTelemetry, type Telemetry } from "../../shared/telemetry/sdk.js";
import { telemetrySettings } from "../../shared/telemetry/settings.js";
import { openTestDatabase } from "../support/databases.js";
import { parsePrometheusText, type MetricFamily } from "../support/prometheusText.js";
import { eventually, startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "../operator/harness.js";

/** How each metric appears in the text: dots become underscores, counters end in `_total`. */
const TYPES: Record<MetricKey, "counter" | "gauge" | "histogram"> = {
  queueDepth: "gauge", deliveryAttempts: "counter", deliveryLatency: "histogram", deliveryQueueLag: "gauge", deliveryInFlight: "gauge",
  endpointBreaker: "gauge", deadLetters: "counter", inboxReceived: "counter", inboxProcessed: "counter", inboxBacklog: "gauge", replays: "counter", alerts: "counter",
};
const promName = (key: MetricKey) => METRICS[key].replace(/\./g, "_") + (TYPES[key] === "counter" ? "_total" : "");

const HANGING_ENDPOINTS = ENDPOINT_LABEL_LIMIT + 2;
const PARTNER_SECRET = generateSecret();

let opened: Awaited<ReturnType<typeof openTestDatabase>>;
let telemetry: Telemetry;
let t: TestPlatform;
let receiver: TestReceiver;
let hanging: Server;
let hangingUrl: string;
const held: ServerResponse[] = [];

/** GET /metrics with `token` (null: none). */
async function scrape(token: string | null = t.token): Promise<Response> {
  return fetch(`${t.baseUrl}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
}

async function families(): Promise<Map<string, MetricFamily>> {
  const res = await scrape();
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe(PROMETHEUS_CONTENT_TYPE);
  return parsePrometheusText(await res.text());
}

beforeAll(async () => {
  opened = await openTestDatabase("pglite");
  telemetry = await startTelemetry(telemetrySettings({ OTEL_METRICS_EXPORTER: "prometheus" })!, {});
  receiver = await startTestReceiver();
  receiver.answer = ({ path }) => (path === "/ok" || path === "/alerts" ? 200 : 400);
  // An endpoint that takes requests and answers none until the end: its deliveries stay in flight.
  hanging = createServer((req, res) => { req.resume(); held.push(res); });
  await new Promise<void>((resolve) => hanging.listen(0, "127.0.0.1", resolve));
  const address = hanging.address();
  hangingUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  t = await startTestPlatform(opened.db, {
    PARTNERS: JSON.stringify({ shop: { scheme: "standard-webhooks", secrets: [PARTNER_SECRET] } }),
    ALERT_WEBHOOK_URL: `${receiver.url}/alerts`,
    ALERT_WEBHOOK_SECRET: generateSecret(),
    OUTBOUND_TIMEOUT_MS: "60000",
  }, { telemetry });
}, 180_000);

afterAll(async () => {
  for (const res of held) res.destroy();
  hanging?.closeAllConnections();
  await new Promise<void>((resolve) => (hanging ? hanging.close(() => resolve()) : resolve()));
  await t?.stop();
  await receiver?.close();
  await telemetry?.shutdown();
  await opened?.close();
});

describe("GET /metrics", () => {
  it("after traffic: strict Prometheus text, every documented metric with its type, unit and attributes; the endpoint label bounded", async () => {
    // Outbound: one delivered, one refused (dead letter at once), then the dead letter replayed.
    await t.api("POST", "/subscriptions", { url: `${receiver.url}/ok`, eventTypes: ["m.*"] });
    await t.api("POST", "/subscriptions", { url: `${receiver.url}/refuses`, eventTypes: ["m.*"], maxAttempts: 1 });
    await t.api("POST", "/events", { id: "evt-m-1", type: "m.one", data: {} });
    const dead = await eventually("a dead letter", async () => (await t.api("GET", "/dead-letters")).deadLetters[0]);
    await t.api("POST", `/dead-letters/${encodeURIComponent(dead.id)}/replay`);

    // Inbound: applied, refused (bad signature), quarantined (an order.paid for no order).
    const post = (id: string, body: string, secret: string) => {
      const ts = Math.floor(Date.now() / 1000);
      return fetch(`${t.baseUrl}/webhooks/shop`, { method: "POST", headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": `v1,${sign(secret, id, ts, body)}` }, body });
    };
    expect((await post("in-1", JSON.stringify({ type: "order.created", data: { order_id: "o-1" } }), PARTNER_SECRET)).status).toBe(202);
    expect((await post("in-2", "{}", generateSecret())).status).toBe(401);
    expect((await post("in-3", JSON.stringify({ type: "order.paid", data: {} }), PARTNER_SECRET)).status).toBe(202);
    await eventually("the quarantine and both alerts", async () =>
      (await t.api("GET", "/inbox?status=quarantined")).entries.length === 1
      && receiver.received.filter((r) => r.path === "/alerts" && r.status === 200).length >= 2, 30_000);

    // 22 endpoints that never answer, one delivery each in flight.
    for (let i = 0; i < HANGING_ENDPOINTS; i += 1) await t.api("POST", "/subscriptions", { url: `${hangingUrl}/h${i}`, eventTypes: ["hang.x"] });
    await t.api("POST", "/events", { id: "evt-hang", type: "hang.x", data: {} });
    await eventually("every hanging endpoint to hold its request", async () => held.length >= HANGING_ENDPOINTS, 30_000);

    const all = await eventually("the counters of the processed entries", async () => {
      const f = await families();
      return f.get(promName("inboxProcessed"))?.samples.length ? f : undefined;
    });

    for (const key of Object.keys(METRICS) as MetricKey[]) {
      const family = all.get(promName(key));
      expect(family, METRICS[key]).toBeDefined();
      expect(family!.type, METRICS[key]).toBe(TYPES[key]);
      expect(family!.unit, METRICS[key]).toBe(METRIC_UNITS[key]);
      expect(family!.help, METRICS[key]).toMatch(/^[A-Z]/);
      expect(family!.samples.length, METRICS[key]).toBeGreaterThan(0);
      // Only the documented attributes (and the scope the exporter adds; le for buckets).
      for (const sample of family!.samples) {
        const keys = Object.keys(sample.labels).filter((k) => !k.startsWith("otel_scope_") && k !== "le").sort();
        expect(keys, `${sample.name} ${JSON.stringify(sample.labels)}`).toEqual([...METRIC_ATTRIBUTES[key]].sort());
      }
    }
    const value = (key: MetricKey, labels: Record<string, string>) =>
      all.get(promName(key))!.samples.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
    expect(value("deliveryAttempts", { outcome: "success" })).toBeGreaterThanOrEqual(1);
    expect(value("deliveryAttempts", { outcome: "failed" })).toBeGreaterThanOrEqual(2); // the refusal and its replay
    expect(value("replays", { kind: "outbound" })).toBe(1);
    expect(value("inboxReceived", { partner: "shop", outcome: "accepted" })).toBe(2);
    expect(value("inboxReceived", { partner: "shop", outcome: "rejected" })).toBe(1);
    expect(value("inboxProcessed", { outcome: "applied" })).toBe(1);
    expect(value("inboxProcessed", { outcome: "quarantined" })).toBe(1);
    expect(value("alerts", { type: "alert.inbox_quarantined" })).toBeGreaterThanOrEqual(1);
    // Ours, and the alert subscription ALERT_WEBHOOK_URL makes (docs/operations.md), all active.
    expect(value("endpointBreaker", { state: "closed" })).toBe(HANGING_ENDPOINTS + 3);
    expect(value("endpointBreaker", { state: "open" })).toBe(0);
    expect(all.get("webhooks_delivery_latency")!.samples.some((s) => s.name === "webhooks_delivery_latency_count" && s.value >= 1)).toBe(true);

    // The endpoint label: at most 20 subscriptions named, the other two summed.
    const inFlight = all.get(promName("deliveryInFlight"))!.samples;
    expect(inFlight).toHaveLength(ENDPOINT_LABEL_LIMIT + 1);
    expect(inFlight.find((s) => s.labels.endpoint === OTHER_ENDPOINTS)?.value).toBe(2);
    expect(inFlight.filter((s) => s.labels.endpoint !== OTHER_ENDPOINTS).every((s) => /^sub_/.test(s.labels.endpoint!) && s.value === 1)).toBe(true);
  }, 120_000);

  it("operators only: no token is 401, an application key 403, an operator read-only key 200", async () => {
    expect((await scrape(null)).status).toBe(401);
    const app = await t.api("POST", "/applications", { name: "metrics-tenant" });
    const appKey = await t.api("POST", "/keys", { applicationId: app.id, access: "read" });
    expect((await scrape(appKey.key)).status).toBe(403);
    const operatorKey = await t.api("POST", "/keys", { access: "read" });
    const res = await scrape(operatorKey.key);
    expect(res.status).toBe(200);
    expect(parsePrometheusText(await res.text()).size).toBeGreaterThan(0);
  });

  it("a query parameter is refused like on every other route", async () => {
    const res = await fetch(`${t.baseUrl}/metrics?name=x`, { headers: { authorization: `Bearer ${t.token}` } });
    expect(res.status).toBe(400);
  });

  it("without the Prometheus exporter: 404 metrics_not_enabled, saying what to set", async () => {
    const route = metricsRoute(undefined);
    const error = await route.handler({ query: new URLSearchParams(), params: {} } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toMatchObject({ status: 404, code: "metrics_not_enabled" });
    expect((error as Error).message).toContain("OTEL_METRICS_EXPORTER=prometheus");
  });
});
