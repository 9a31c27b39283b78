/**
 * Must show 1 of issue 33, locally: one signed inbound webhook that the order handler turns into an
 * outbound event gives one trace, continued from the sender's `traceparent`, whose spans cover the
 * ingest (server), the inbox entry's processing by the processor (consumer), the handler's enqueue
 * into the outbox (producer) and the relay's HTTP attempt (client); the receiver gets the attempt's
 * `traceparent`, so it can continue the trace; a subscription created or edited with
 * `sendTraceparent: false` gets none; a resend of the event is one more attempt of the same trace. The spans are read back from an OTLP/HTTP receiver (test/support/otlpTestPeer.ts) as the
 * SDK exports them, on both databases.
 *
 * The same through a cloud's queue and bundles: test/telemetry/cloudTraceContext.test.ts (the SQS
 * message attribute) and test/wiring/aws.test.ts ("one trace through the bundles").
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { generateSecret, sign } from "../../shared/outbound/signature.js";
import { SPANS } from "../../shared/telemetry/names.js";
import { startTelemetry, type Telemetry } from "../../shared/telemetry/sdk.js";
import { telemetrySettings } from "../../shared/telemetry/settings.js";
import { describeEachBackend } from "../support/databases.js";
import { startOtlpTestPeer, type OtlpTestPeer, type ReceivedSpan } from "../support/otlpTestPeer.js";
import { eventually, startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "../operator/harness.js";

const PARTNER_SECRET = generateSecret();
let peer: OtlpTestPeer;
let telemetry: Telemetry;

beforeAll(async () => {
  peer = await startOtlpTestPeer();
  const env = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${peer.url}/v1/traces` };
  telemetry = await startTelemetry(telemetrySettings(env)!, env);
});
afterAll(async () => {
  await telemetry?.shutdown();
  await peer?.close();
});

describeEachBackend("one trace across every hop", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  beforeAll(async () => {
    receiver = await startTestReceiver();
    t = await startTestPlatform(ctx.db, { PARTNERS: JSON.stringify({ shop: { scheme: "standard-webhooks", secrets: [PARTNER_SECRET] } }) }, { telemetry });
  }, 180_000);
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
  });

  it("sender → ingest → inbox → processor → handler's enqueue → outbox → relay attempt → receiver, one trace", async () => {
    const tracedSub = await t.api("POST", "/subscriptions", { url: `${receiver.url}/traced`, eventTypes: ["order.*"] });
    const quiet = await t.api("POST", "/subscriptions", { url: `${receiver.url}/quiet`, eventTypes: ["order.*"], sendTraceparent: false });
    expect(quiet.sendTraceparent).toBe(false);
    // An edit can turn it back on, and off again; it defaults to on.
    expect((await t.api("PATCH", `/subscriptions/${quiet.id}`, { sendTraceparent: true })).sendTraceparent).toBe(true);
    expect((await t.api("PATCH", `/subscriptions/${quiet.id}`, { sendTraceparent: false })).sendTraceparent).toBe(false);
    expect((await t.api("GET", "/subscriptions")).subscriptions.filter((s: { sendTraceparent: boolean }) => s.sendTraceparent).map((s: { url: string }) => s.url)).toContain(`${receiver.url}/traced`);

    // The sender's own trace: our spans continue it.
    const senderTrace = randomBytes(16).toString("hex");
    const senderSpan = randomBytes(8).toString("hex");
    const id = `in-${ctx.backend}`;
    const body = JSON.stringify({ type: "order.created", data: { order_id: `o-${ctx.backend}` } });
    const ts = Math.floor(Date.now() / 1000);
    const res = await fetch(`${t.baseUrl}/webhooks/shop`, {
      method: "POST",
      headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": `v1,${sign(PARTNER_SECRET, id, ts, body)}`, traceparent: `00-${senderTrace}-${senderSpan}-01` },
      body,
    });
    expect(res.status).toBe(202);
    const [traced, untraced] = await eventually("both deliveries", async () => {
      const a = receiver.received.find((r) => r.path === "/traced");
      const b = receiver.received.find((r) => r.path === "/quiet");
      return a && b ? [a, b] as const : undefined;
    }, 30_000);
    expect(traced.headers.traceparent).toMatch(new RegExp(`^00-${senderTrace}-[0-9a-f]{16}-01$`));
    expect(untraced.headers.traceparent).toBeUndefined();

    await telemetry.flush();
    const inTrace = await eventually("the spans at the receiver", async () => {
      const spans = peer.spans.filter((s) => s.traceId === senderTrace);
      return spans.some((s) => s.name === SPANS.deliveryAttempt && s.spanId === traced.headers.traceparent!.toString().split("-")[2]) ? spans : undefined;
    });
    const one = (name: string, where: (s: ReceivedSpan) => boolean = () => true) => {
      const found = inTrace.filter((s) => s.name === name && where(s));
      expect(found.map((s) => s.name), name).toEqual([name]);
      return found[0]!;
    };
    const ingest = one(SPANS.inboxIngest);
    const processed = one(SPANS.inboxProcess);
    const enqueued = one(SPANS.outboxEnqueue);
    const attempt = one(SPANS.deliveryAttempt, (s) => s.spanId === traced.headers.traceparent!.toString().split("-")[2]);
    expect(ingest.parentSpanId).toBe(senderSpan);
    expect(processed.parentSpanId).toBe(ingest.spanId);
    expect(enqueued.parentSpanId).toBe(processed.spanId);
    expect(attempt.parentSpanId).toBe(enqueued.spanId);
    expect([ingest.kind, processed.kind, enqueued.kind, attempt.kind]).toEqual([2, 5, 4, 3]); // server, consumer, producer, client
    expect(ingest.attributes).toMatchObject({ "webhooks.partner": "shop", "webhooks.outcome": "accepted", "http.route": "/webhooks/:partner" });
    expect(attempt.attributes).toMatchObject({ "webhooks.outcome": "success", "server.address": "127.0.0.1", "url.scheme": "http" });
    // The quiet subscription's attempt is not in the sender's trace: it had no trace context to continue.
    expect(inTrace.filter((s) => s.name === SPANS.deliveryAttempt)).toHaveLength(1);

    // A resend, days later for all it knows, is one more attempt of the same trace, under the same enqueue.
    const eventId = String(traced.headers["webhook-id"]).slice(0, -`:${tracedSub.id}`.length);
    await t.api("POST", `/events/${encodeURIComponent(eventId)}/resend`, { subscriptionId: tracedSub.id });
    const again = await eventually("the resent delivery", async () => receiver.received.filter((r) => r.path === "/traced")[1]);
    const againSpan = String(again.headers.traceparent).split("-")[2];
    expect(again.headers.traceparent).toMatch(new RegExp(`^00-${senderTrace}-[0-9a-f]{16}-01$`));
    expect(againSpan).not.toBe(attempt.spanId);
    await telemetry.flush();
    const resent = await eventually("the resend's attempt span", async () => peer.spans.find((s) => s.spanId === againSpan));
    expect(resent).toMatchObject({ name: SPANS.deliveryAttempt, traceId: senderTrace, parentSpanId: enqueued.spanId });
  }, 60_000);
});
