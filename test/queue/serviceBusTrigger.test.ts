/**
 * The Azure Functions v4 Service Bus trigger translation, with real `InvocationContext` objects
 * from `@azure/functions`, and a redelivery loop driven through the real `@azure/service-bus`
 * client against the AMQP test peer.
 *
 * No Functions host runs here, so `deliver` below plays its part, as documented for the Node v4
 * model: decode the body (JSON arrives parsed), pass the message's properties as
 * `triggerMetadata` with keys camel-cased by the Node worker's rule (first letter lower-cased,
 * recursively), complete when the handler returns, abandon when it throws.
 */
import { randomUUID } from "node:crypto";
import { InvocationContext, trigger } from "@azure/functions";
import { ServiceBusClient, type ServiceBusReceiver } from "@azure/service-bus";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MalformedMessageError, type ReceivedMessage } from "../../shared/queue/port.js";
import { createServiceBusQueue } from "../../shared/queue/serviceBus.js";
import { fromServiceBusTrigger, serviceBusQueueHandler } from "../../shared/queue/triggers/serviceBus.js";
import { startServiceBusTestPeer, type ServiceBusTestPeer } from "../support/serviceBusTestPeer.js";
import { invokeOnce, type ServiceBusHandler } from "../support/serviceBusTriggerHost.js";

const TRIGGER = trigger.serviceBusQueue({ connection: "ServiceBusConnection", queueName: "inbound" });

function contextWith(triggerMetadata: Record<string, unknown> | undefined): InvocationContext {
  return new InvocationContext({
    invocationId: randomUUID(),
    functionName: "inbound-worker",
    triggerMetadata,
    options: { trigger: TRIGGER },
    logHandler: () => {},
  });
}

/** One host invocation through the shared stand-in for the Functions host. */
const deliver = (receiver: ServiceBusReceiver, handler: ServiceBusHandler) => invokeOnce(receiver, handler, { functionName: "inbound-worker", maxWaitTimeInMs: 1000 });

describe("Service Bus trigger → ReceivedMessage", () => {
  const metadata = {
    deliveryCount: 1,
    messageId: "0f8fad5b-d9cb-469f-a165-70867728950e",
    contentType: "application/json",
    enqueuedTimeUtc: "2026-11-30T03:00:00.000Z",
    lockToken: "7c8b8a5e-1f0e-4a4b-9d6c-3e2f1a0b9c8d",
    sequenceNumber: 42,
    applicationProperties: { partner: "stripe", eventId: "evt_1", receivedAt: "2026-11-30T02:59:59.000Z" },
  };

  it("translates body, attributes, id, delivery count and lock token", () => {
    const m = fromServiceBusTrigger({ id: "evt_1", type: "order.paid" }, contextWith(metadata));
    expect(m).toEqual({
      id: metadata.messageId,
      body: JSON.stringify({ id: "evt_1", type: "order.paid" }),
      attributes: { partner: "stripe", eventId: "evt_1", receivedAt: "2026-11-30T02:59:59.000Z", contentType: "application/json" },
      deliveryCount: 1,
      receipt: metadata.lockToken,
    });
  });

  it("keeps text and binary bodies as UTF-8 text", () => {
    expect(fromServiceBusTrigger("plain ✓", contextWith(metadata)).body).toBe("plain ✓");
    expect(fromServiceBusTrigger(Buffer.from("bytes ✓"), contextWith(metadata)).body).toBe("bytes ✓");
  });

  it("adds the count carried by a scheduled retry copy, and keeps the original id", () => {
    const m = fromServiceBusTrigger("x", contextWith({
      ...metadata,
      deliveryCount: 2,
      applicationProperties: { ...metadata.applicationProperties, "$webhooks.priorDeliveries": 3, "$webhooks.originalMessageId": "first-id" },
    }));
    expect(m.deliveryCount).toBe(5);
    expect(m.id).toBe("first-id");
    expect(Object.keys(m.attributes)).not.toContain("$webhooks.priorDeliveries");
  });

  it("leaves the service's dead-letter properties out of the attributes", () => {
    const m = fromServiceBusTrigger("x", contextWith({
      ...metadata,
      applicationProperties: { eventId: "e", deadLetterReason: "MaxDeliveryCountExceeded", deadLetterErrorDescription: "…" },
    }));
    expect(m.attributes).toEqual({ eventId: "e", contentType: "application/json" });
  });

  it.each([
    ["no triggerMetadata", "x", undefined, /has no triggerMetadata/],
    ["a batch (cardinality many)", ["a", "b"], metadata, /batch of 2 messages; register the function with cardinality "one"/],
    ["a missing messageId", "x", { ...metadata, messageId: undefined }, /messageId must be a non-empty string; got nothing/],
    ["a zero delivery count", "x", { ...metadata, deliveryCount: 0 }, /deliveryCount must be a whole number >= 1 .*got number 0/],
    ["a non-numeric delivery count", "x", { ...metadata, deliveryCount: "three" }, /deliveryCount must be a whole number >= 1 .*got "three"/],
    ["application properties as an array", "x", { ...metadata, applicationProperties: ["a"] }, /applicationProperties must be an object/],
    ["a bad carried count", "x", { ...metadata, applicationProperties: { "$webhooks.priorDeliveries": "-1" } }, /priorDeliveries must be a whole number >= 0; got "-1"/],
    ["no body", null, metadata, /has no body \(got null\)/],
  ])("refuses %s with a precise MalformedMessageError", (_what, body, meta, message) => {
    const attempt = () => fromServiceBusTrigger(body, contextWith(meta as Record<string, unknown> | undefined));
    expect(attempt).toThrow(MalformedMessageError);
    expect(attempt).toThrow(message);
  });
});

describe("Service Bus trigger on the test peer (host played by the test)", () => {
  const MAX_DELIVERY_COUNT = 3;
  let peer: ServiceBusTestPeer;
  let client: ServiceBusClient;
  let queueNumber = 0;

  beforeAll(async () => {
    peer = await startServiceBusTestPeer();
    client = new ServiceBusClient(peer.connectionString);
  });
  afterAll(async () => {
    await client?.close();
    await peer?.close();
  });

  async function setup() {
    const queueName = `trigger-${++queueNumber}`;
    peer.createQueue(queueName, { lockDurationMs: 30_000, maxDeliveryCount: MAX_DELIVERY_COUNT });
    const queue = await createServiceBusQueue({ connectionString: peer.connectionString, queueName });
    const receiver = client.createReceiver(queueName, { maxAutoLockRenewalDurationInMs: 0, skipParsingBodyAsJson: true });
    return { queueName, queue, receiver, close: async () => { await receiver.close(); await queue.close(); } };
  }

  it("completes the message when the handler returns", async () => {
    const { queueName, queue, receiver, close } = await setup();
    try {
      const body = JSON.stringify({ id: "evt_ok", type: "order.paid" });
      const { id } = await queue.send({ body, attributes: { partner: "stripe", eventId: "evt_ok" } });
      const seen: ReceivedMessage[] = [];
      const outcome = await deliver(receiver, serviceBusQueueHandler(async (m) => { seen.push(m); }));
      expect(outcome).toBe("completed");
      expect(seen).toEqual([expect.objectContaining({ id, body, deliveryCount: 1, attributes: { partner: "stripe", eventId: "evt_ok" } })]);
      expect(peer.stats(queueName)).toMatchObject({ active: 0, locked: 0, deadLettered: 0 });
    } finally {
      await close();
    }
  });

  it("abandons on every throw until Service Bus dead-letters it after MaxDeliveryCount", async () => {
    const { queue, receiver, close } = await setup();
    try {
      const body = JSON.stringify({ id: "evt_poison" });
      const { id } = await queue.send({ body, attributes: { partner: "stripe", eventId: "evt_poison" } });
      const counts: number[] = [];
      const handler = serviceBusQueueHandler(async (m) => {
        counts.push(m.deliveryCount);
        throw new Error("downstream answered 503");
      });
      const outcomes: string[] = [];
      for (let i = 0; i < MAX_DELIVERY_COUNT + 2; i++) outcomes.push(await deliver(receiver, handler));

      expect(counts).toEqual([1, 2, 3]);
      expect(outcomes).toEqual(["abandoned", "abandoned", "abandoned", "none", "none"]);
      const dead = await queue.receiveDeadLetters({ waitSeconds: 1 });
      expect(dead).toEqual([expect.objectContaining({
        id, body, reason: "MaxDeliveryCountExceeded", attributes: { partner: "stripe", eventId: "evt_poison" },
      })]);
      await queue.ackDeadLetter(dead[0]!);
    } finally {
      await close();
    }
  });

  it("counts on across the adapter's scheduled retry copy", async () => {
    const { queue, receiver, close } = await setup();
    try {
      const { id } = await queue.send({ body: "later", attributes: { eventId: "evt_later" } });
      const [first] = await queue.receive({ visibilitySeconds: 30, waitSeconds: 1 });
      await queue.retryAfter(first!, 1);
      const seen: ReceivedMessage[] = [];
      let outcome = "none";
      for (let i = 0; i < 20 && outcome === "none"; i++) outcome = await deliver(receiver, serviceBusQueueHandler(async (m) => { seen.push(m); }));
      expect(outcome).toBe("completed");
      expect(seen).toEqual([expect.objectContaining({ id, body: "later", deliveryCount: 2, attributes: { eventId: "evt_later" } })]);
    } finally {
      await close();
    }
  });
});
