/**
 * The trace context across a cloud queue (issue 33 item 2): the cloud ingest puts it on the
 * message as the attribute `traceparent` (here SQS on moto: a message attribute; Service Bus and
 * Pub/Sub carry the same attributes through the same port), and the processor stores it on the
 * inbox entry and continues the trace. With an SDK (the function's own, functions/telemetry.ts, or
 * a host's) the ingest is a `webhooks.inbox.ingest` span, child of the host's span when there is
 * one, else continuing the sender's `traceparent`, and the attribute is that span's context;
 * without any SDK, the attribute is the sender's own `traceparent` header; a malformed one is not carried.
 *
 * The SDK here is the test process's; the cloud functions' bundles starting their own:
 * test/wiring/aws.test.ts ("one trace through the bundles").
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { acceptWebhook } from "../../shared/cloud/acceptWebhook.js";
import { inlineMessage } from "../../shared/cloud/inboundMessage.js";
import { processInbound } from "../../shared/cloud/processInbound.js";
import { createDispatchHandler } from "../../shared/inbound/dispatch.js";
import { InboxProcessor } from "../../shared/inbound/processor.js";
import type { QueueAdapter } from "../../shared/queue/port.js";
import { createSqsQueue } from "../../shared/queue/sqs.js";
import { SPANS } from "../../shared/telemetry/names.js";
import { startTelemetry, type Telemetry } from "../../shared/telemetry/sdk.js";
import { telemetrySettings } from "../../shared/telemetry/settings.js";
import { activeTraceparent, withSpan } from "../../shared/telemetry/telemetry.js";
import { openTestDatabase } from "../support/databases.js";
import { createMotoQueuePair, MOTO_CLIENT_CONFIG, MOTO_URL, motoAvailable, skipUnlessAvailable } from "../support/emulators.js";
import { startOtlpTestPeer, type OtlpTestPeer } from "../support/otlpTestPeer.js";
import { partners, signed } from "../inbound/helpers.js";

const skip = await skipUnlessAvailable("moto_server (SQS)", MOTO_URL, motoAvailable);

let peer: OtlpTestPeer;
let telemetry: Telemetry;
let opened: Awaited<ReturnType<typeof openTestDatabase>>;
let queue: QueueAdapter;
let removeQueues: () => Promise<void>;

beforeAll(async () => {
  if (skip) return;
  peer = await startOtlpTestPeer();
  const env = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${peer.url}/v1/traces`, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" };
  telemetry = await startTelemetry(telemetrySettings(env)!, env);
  opened = await openTestDatabase("pglite");
  const pair = await createMotoQueuePair(3);
  removeQueues = pair.remove;
  queue = await createSqsQueue({ ...pair, clientConfig: MOTO_CLIENT_CONFIG });
}, 180_000);
afterAll(async () => {
  await queue?.close();
  await removeQueues?.();
  await telemetry?.shutdown();
  await peer?.close();
  await opened?.close();
});

const hex = (bytes: number) => randomBytes(bytes).toString("hex");

async function accept(id: string, extra: Record<string, string>): Promise<void> {
  const request = signed(id, JSON.stringify({ type: "invoice.paid", id }));
  const answer = await acceptWebhook({ partners, targets: async () => ({ queue }), maxBodyBytes: 1024 * 1024 }, "shop", { ...request.headers, ...extra }, request.body);
  expect(answer.status).toBe(202);
}

async function receiveOne() {
  for (let i = 0; i < 10; i += 1) {
    const [m] = await queue.receive({ visibilitySeconds: 30, waitSeconds: 1 });
    if (m) {
      await queue.ack(m);
      return m;
    }
  }
  throw new Error("no message on the queue");
}

it.skipIf(Boolean(skip))("a host's span → the ingest span (its child) → SQS message attribute → inbox entry → processing span, one trace", async () => {
  const senderTrace = hex(16);
  const hostContext = await withSpan("host.request", {}, async () => {
    await accept("cloud-trace-1", {});
    return activeTraceparent();
  }, `00-${senderTrace}-${hex(8)}-01`);
  const message = await receiveOne();
  expect(message.attributes.traceparent).toMatch(new RegExp(`^00-${senderTrace}-`));
  await telemetry.flush();
  const ingest = peer.spans.find((s) => s.name === SPANS.inboxIngest && s.traceId === senderTrace)!;
  expect(ingest.parentSpanId).toBe(hostContext!.split("-")[2]);
  expect(ingest.kind).toBe(2); // server
  expect(ingest.attributes).toMatchObject({ "webhooks.partner": "shop", "webhooks.outcome": "accepted", "http.response.status_code": 202, "http.route": "/webhooks/:partner" });
  const ingestContext = `00-${senderTrace}-${ingest.spanId}-01`;
  expect(message.attributes.traceparent).toBe(ingestContext);

  const processor = new InboxProcessor({ db: opened.db, handler: createDispatchHandler([]) });
  const verdict = await processInbound({ db: opened.db, processor }, message);
  expect(verdict.action).toBe("ack");
  const { rows } = await opened.db.query<{ traceparent: string | null }>("SELECT traceparent FROM inbox_entries WHERE partner_event_id = 'cloud-trace-1'");
  expect(rows[0]!.traceparent).toBe(ingestContext);

  await telemetry.flush();
  const processed = peer.spans.find((s) => s.name === SPANS.inboxProcess && s.traceId === senderTrace);
  expect(processed, JSON.stringify(peer.spans.map((s) => [s.name, s.traceId]))).toBeDefined();
  expect(processed!.parentSpanId).toBe(ingestContext!.split("-")[2]);
}, 60_000);

it.skipIf(Boolean(skip))("no span of the host: the ingest span continues the sender's traceparent; a malformed one is not continued (a trace of its own)", async () => {
  const senderTrace = hex(16);
  const senderSpan = hex(8);
  await accept("cloud-trace-2", { traceparent: `00-${senderTrace}-${senderSpan}-01` });
  const carried = (await receiveOne()).attributes.traceparent!;
  expect(carried).toMatch(new RegExp(`^00-${senderTrace}-[0-9a-f]{16}-01$`));
  await telemetry.flush();
  expect(peer.spans.find((s) => s.spanId === carried.split("-")[2])).toMatchObject({ name: SPANS.inboxIngest, parentSpanId: senderSpan });
  await accept("cloud-trace-3", { traceparent: "00-not-a-trace-01" });
  const fresh = (await receiveOne()).attributes.traceparent!;
  expect(fresh).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  await telemetry.flush();
  expect(peer.spans.find((s) => s.spanId === fresh.split("-")[2])).toMatchObject({ name: SPANS.inboxIngest, parentSpanId: "" });
}, 60_000);

// Last: it uninstalls the SDK.
it.skipIf(Boolean(skip))("no SDK at all: the sender's traceparent is the attribute as it came; a malformed one, or none, gives no attribute", async () => {
  await telemetry.shutdown();
  const sender = `00-${hex(16)}-${hex(8)}-01`;
  await accept("cloud-trace-4", { traceparent: sender });
  expect((await receiveOne()).attributes.traceparent).toBe(sender);
  await accept("cloud-trace-5", { traceparent: "00-not-a-trace-01" });
  expect((await receiveOne()).attributes.traceparent).toBeUndefined();
  await accept("cloud-trace-6", {});
  expect((await receiveOne()).attributes).not.toHaveProperty("traceparent");
}, 60_000);

it("the message encoding: the attribute only when there is a trace context", () => {
  const event = { partner: "shop", eventId: "e", eventType: null, receivedAt: new Date(0) };
  expect(inlineMessage({ ...event, traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" }, Buffer.from("{}")).attributes?.traceparent).toBe("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  expect(inlineMessage(event, Buffer.from("{}")).attributes).not.toHaveProperty("traceparent");
  expect(inlineMessage({ ...event, traceparent: null }, Buffer.from("{}")).attributes).not.toHaveProperty("traceparent");
});
