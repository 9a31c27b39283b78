/**
 * Must show 3: the system runs with known secrets and a recognisable payload through success,
 * retry, permanent failure, dead letter, alert, inbound acceptance, rejection and quarantine, with
 * every log line and span and metric captured. None of them holds a secret, the payload marker, a
 * signature or the admin token, while the expected log lines, spans and metrics are all there.
 */
import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import { metrics, trace } from "@opentelemetry/api";
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startAlertWorker } from "../../shared/alerts.js";
import { startInboxWorker } from "../../shared/inbound/worker.js";
import orderHandlers from "../../examples/orders/handlers.js";
import { createRelay } from "../../shared/outbound/relay.js";
import { generateSecret, sign } from "../../shared/outbound/signature.js";
import { createTransport } from "../../shared/outbound/transport.js";
import { instrumentTransport } from "../../shared/telemetry/instrument.js";
import { observePlatformQueues } from "../../shared/telemetry/queueDepth.js";
import { METRICS, SPANS } from "../../shared/telemetry/telemetry.js";
import { describeEachBackend } from "../support/databases.js";
import { eventually, startTestPlatform, startTestReceiver, TEST_TOKEN, type TestPlatform, type TestReceiver } from "./harness.js";

const spans = new InMemorySpanExporter();
const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 });
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }));
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));

describeEachBackend("no payload, secret or signature in logs, spans and metrics", (ctx) => {
  const SECRET = generateSecret();
  const ALERT_SECRET = generateSecret();
  const PARTNER_SECRET = generateSecret();
  const MARKER = `PAYLOAD-MARKER-${randomBytes(8).toString("hex")}`;
  let logs = "";
  const sentSignatures: string[] = [];
  let t: TestPlatform;
  let receiver: TestReceiver;
  const stops: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    spans.reset();
    receiver = await startTestReceiver();
    receiver.answer = ({ path, attempt }) => (path === "/ok" || path === "/alerts" ? 200 : path === "/flaky" ? (attempt === 1 ? 503 : 200) : 400);
    const logStream = new Writable({ write(chunk, _enc, done) { logs += chunk.toString(); done(); } });
    t = await startTestPlatform(ctx.db, {
      PARTNERS: JSON.stringify({ shop: { scheme: "standard-webhooks", secrets: [PARTNER_SECRET] } }),
      ALERT_WEBHOOK_URL: `${receiver.url}/alerts`,
      ALERT_WEBHOOK_SECRET: ALERT_SECRET,
    }, { logStream, workers: false, instrument: true });
    // The workers as the platform runs them, with the instrumented transport and a fast retry policy.
    const transport = instrumentTransport(createTransport({ allowedDestinations: ["127.0.0.1"] }));
    const relay = createRelay({ db: ctx.db, transport, logger: t.platform.logger.child({ worker: "outbound-relay" }), pollIntervalMs: 100, retryPolicy: { baseSeconds: 0.2, capSeconds: 1, maxAttempts: 3, retryAfterCapSeconds: 1 } });
    await relay.start();
    const inbox = startInboxWorker(t.platform, orderHandlers);
    const alerts = startAlertWorker(t.platform, { intervalMs: 200 });
    const unobserve = observePlatformQueues(ctx.db);
    stops.push(unobserve, () => alerts.stop(), () => inbox.stop(), async () => { await relay.stop(); await transport.close(); });
  }, 180_000);
  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
    await t?.stop();
    await receiver?.close();
  });

  it("runs every path, then finds no secret, payload or signature anywhere", async () => {
    // Outbound: one event with the marker, to an endpoint that succeeds, one that fails once, one that refuses.
    for (const path of ["/ok", "/flaky", "/refuses"]) {
      await t.api("POST", "/subscriptions", { url: `${receiver.url}${path}`, eventTypes: ["test.*"], secrets: [SECRET] });
    }
    await t.api("POST", "/events", { id: `evt-${ctx.backend}`, type: "test.sensitive", data: { marker: MARKER, card: "4111111111111111" } });

    // Inbound: accepted (twice: duplicate), refused (bad signature), quarantined (not an order).
    const post = async (id: string, body: string, secret: string) => {
      const ts = Math.floor(Date.now() / 1000);
      const signature = `v1,${sign(secret, id, ts, body)}`;
      sentSignatures.push(signature.slice(3));
      return fetch(`${t.baseUrl}/webhooks/shop`, { method: "POST", headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": signature }, body });
    };
    const order = JSON.stringify({ type: "order.created", data: { order_id: `o-${ctx.backend}`, note: MARKER } });
    expect((await post("in-1", order, PARTNER_SECRET)).status).toBe(202);
    expect((await post("in-1", order, PARTNER_SECRET)).status).toBe(200); // duplicate
    expect((await post("in-2", order, generateSecret())).status).toBe(401);
    expect((await post("in-3", JSON.stringify({ type: "order.paid", data: { note: MARKER } }), PARTNER_SECRET)).status).toBe(202);

    // Counted: the alert.* bodies (the alert URL also gets delivery.exhausted and inbox.quarantined).
    await eventually("the dead letter, the quarantine and their alerts", async () => {
      const dead = (await t.api("GET", "/dead-letters")).deadLetters.length;
      const quarantined = (await t.api("GET", "/inbox?status=quarantined")).entries.length;
      const alerts = receiver.received.filter((r) => r.path === "/alerts" && r.status === 200 && String(JSON.parse(r.body).type).startsWith("alert.")).length;
      const flakyDone = receiver.received.some((r) => r.path === "/flaky" && r.status === 200);
      return dead === 1 && quarantined === 1 && alerts === 2 && flakyDone;
    }, 30_000);
    // A replay through the API: the quarantined entry goes round again and is quarantined again (a new alert).
    const [entry] = (await t.api("GET", "/inbox?status=quarantined")).entries;
    await t.api("POST", `/inbox/${entry.id}/replay`);
    await eventually("the replayed entry to be quarantined again, and its alert", async () => {
      const again = await t.api("GET", `/inbox/${entry.id}`);
      return again.status === "quarantined" && again.replays === 1 && receiver.received.filter((r) => r.path === "/alerts" && r.status === 200 && String(JSON.parse(r.body).type).startsWith("alert.")).length === 3;
    }, 30_000);
    for (const r of receiver.received) sentSignatures.push(...String(r.headers["webhook-signature"]).split(" ").map((s) => s.slice(3)));
    await reader.forceFlush();

    const spanText = JSON.stringify(spans.getFinishedSpans().map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })));
    const metricText = JSON.stringify(metricExporter.getMetrics());
    const forbidden = [SECRET, SECRET.slice(6), ALERT_SECRET, ALERT_SECRET.slice(6), PARTNER_SECRET, PARTNER_SECRET.slice(6), MARKER, "4111111111111111", TEST_TOKEN, ...sentSignatures];
    expect(sentSignatures.length).toBeGreaterThan(5);
    for (const [what, text] of [["logs", logs], ["spans", spanText], ["metrics", metricText]] as const) {
      for (const value of forbidden) {
        if (text.includes(value)) throw new Error(`${what} contain a forbidden value (${value.slice(0, 12)}…)`);
      }
    }

    // And the telemetry is really there: the check above is not passing on empty output.
    expect(logs).toContain("delivery dead-lettered");
    expect(logs).toContain("inbox entry quarantined");
    expect(logs.split("\n").filter((l) => l.includes('"alert"') && l.includes('"level":50')).length).toBe(3);
    const finished = spans.getFinishedSpans();
    const outcomes = new Set(finished.filter((s) => s.name === SPANS.deliveryAttempt).map((s) => s.attributes["webhooks.outcome"]));
    expect([...outcomes].sort()).toEqual(["failed", "retry", "success"]);
    const ingest = new Set(finished.filter((s) => s.name === SPANS.inboxIngest).map((s) => s.attributes["webhooks.outcome"]));
    expect([...ingest].sort()).toEqual(["accepted", "duplicate", "rejected"]);
    const raised = finished.filter((s) => s.name === SPANS.alertScan).reduce((n, s) => n + Number(s.attributes["webhooks.alerts.raised"] ?? 0), 0);
    expect(raised).toBe(3);
    expect(finished.filter((s) => s.name === SPANS.replay).map((s) => s.attributes["webhooks.replay.kind"])).toEqual(["inbound"]);
    const names = new Set(metricExporter.getMetrics().flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics.map((m) => m.descriptor.name))));
    for (const name of [METRICS.deliveryAttempts, METRICS.deliveryLatency, METRICS.deadLetters, METRICS.inboxReceived, METRICS.alerts, METRICS.queueDepth, METRICS.replays]) {
      expect(names, name).toContain(name);
    }
  }, 60_000);
});
