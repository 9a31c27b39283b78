/**
 * The queue contract on Service Bus: the real `@azure/service-bus` client, through our adapter,
 * against the in-process AMQP test peer (test/support/serviceBusTestPeer.ts). No Service Bus
 * emulator runs on this machine (the official one is a container); the peer models the parts of
 * the service the adapter uses, and docs/queues-servicebus.md says what it leaves out.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createServiceBusQueue, ServiceBusConfigError } from "../../shared/queue/serviceBus.js";
import { InvalidReceiptError, MessageRejectedError } from "../../shared/queue/validate.js";
import { startServiceBusTestPeer, type ServiceBusTestPeer } from "../support/serviceBusTestPeer.js";
import { queueContract } from "./contract.js";

const MAX_DELIVERY_COUNT = 3;
/** Short, so the contract's `visibilitySeconds: 1` lapses in a few seconds (a lock is a queue property). */
const LOCK_DURATION_MS = 2000;

let peer: Promise<ServiceBusTestPeer> | undefined;
let queues = 0;
afterAll(async () => { await (await peer)?.close(); });

async function open(queueOptions = {}) {
  peer ??= startServiceBusTestPeer();
  const p = await peer;
  const queueName = `contract-${++queues}`;
  p.createQueue(queueName, { lockDurationMs: LOCK_DURATION_MS, maxDeliveryCount: MAX_DELIVERY_COUNT, ...queueOptions });
  const queue = await createServiceBusQueue({ connectionString: p.connectionString, queueName });
  return { queue, queueName, peer: p, maxDeliveries: MAX_DELIVERY_COUNT, cleanup: () => queue.close() };
}

queueContract("servicebus on the AMQP test peer", open);

describe("Service Bus specifics (test peer)", () => {
  it("holds a lock longer than the queue's lock duration by renewing it", async () => {
    const { queue, queueName, peer: p, cleanup } = await open();
    try {
      await queue.send({ body: "held", attributes: { eventId: "held-1" } });
      const [m] = await queue.receive({ visibilitySeconds: 8, waitSeconds: 1 });
      expect(m?.body).toBe("held");
      // Three lock durations later the lock is still ours: nobody else receives it...
      await new Promise((r) => setTimeout(r, 3 * LOCK_DURATION_MS));
      expect(await queue.receive({ visibilitySeconds: 1, waitSeconds: 1 })).toEqual([]);
      expect(p.stats(queueName).locked).toBe(1);
      // ...and completing it still works.
      await queue.ack(m!);
      expect(p.stats(queueName)).toMatchObject({ active: 0, locked: 0 });
    } finally {
      await cleanup();
    }
  });

  it("carries the delivery count and the message id across a scheduled retry", async () => {
    const { queue, queueName, peer: p, cleanup } = await open();
    try {
      const { id } = await queue.send({ body: "again", attributes: { eventId: "again-1" } });
      const [first] = await queue.receive({ visibilitySeconds: 30, waitSeconds: 1 });
      expect(await queue.retryAfter(first!, 2)).toEqual({ scheduled: true, delaySeconds: 2 });
      expect(p.stats(queueName)).toMatchObject({ active: 0, scheduled: 1 });
      let again: Awaited<ReturnType<typeof queue.receive>> = [];
      for (let i = 0; i < 100 && again.length === 0; i++) again = await queue.receive({ visibilitySeconds: 30, waitSeconds: 1 });
      expect(again[0]).toMatchObject({ id, body: "again", deliveryCount: 2, attributes: { eventId: "again-1" } });
      expect(Object.keys(again[0]!.attributes).some((k) => k.startsWith("$"))).toBe(false);
      await queue.ack(again[0]!);
    } finally {
      await cleanup();
    }
  });

  it("holds back a message sent with delaySeconds (scheduled enqueue time) until it is due", async () => {
    const { queue, queueName, peer: p, cleanup } = await open();
    try {
      const { id } = await queue.send({ body: "delayed", attributes: { eventId: "delayed-1" }, delaySeconds: 2 });
      expect(p.stats(queueName)).toMatchObject({ active: 0, scheduled: 1 });
      expect(await queue.receive({ visibilitySeconds: 30 })).toEqual([]);
      let got: Awaited<ReturnType<typeof queue.receive>> = [];
      for (let i = 0; i < 100 && got.length === 0; i++) got = await queue.receive({ visibilitySeconds: 30, waitSeconds: 1 });
      expect(got[0]).toMatchObject({ id, body: "delayed", deliveryCount: 1 });
      await queue.ack(got[0]!);
    } finally {
      await cleanup();
    }
  });

  it("refuses a receipt it did not hand out, and a second settlement", async () => {
    const { queue, cleanup } = await open();
    try {
      await queue.send({ body: "once" });
      const [m] = await queue.receive({ visibilitySeconds: 30, waitSeconds: 1 });
      await queue.ack(m!);
      await expect(queue.ack(m!)).rejects.toBeInstanceOf(InvalidReceiptError);
      await expect(queue.ack({ ...m!, receipt: "not-a-lock-token" })).rejects.toThrow(/settled by the adapter that received it/);
    } finally {
      await cleanup();
    }
  });

  it("refuses oversized messages before sending, with the standard tier's 256 KiB limit", async () => {
    const { queue, cleanup } = await open();
    try {
      expect(queue.limits.maxMessageBytes).toBe(256 * 1024);
      await expect(queue.send({ body: "x".repeat(256 * 1024 + 1) })).rejects.toBeInstanceOf(MessageRejectedError);
      await expect(queue.send({ body: "x", delaySeconds: queue.limits.maxDelaySeconds + 1 })).rejects.toThrow(/maximum/);
    } finally {
      await cleanup();
    }
  });

  it("splits a batch larger than the link's maximum message size into several AMQP batches", async () => {
    const { queue, queueName, peer: p, cleanup } = await open();
    try {
      // 40 messages of 20 KiB: about 800 KiB, over the 256 KiB the peer advertises per transfer.
      const body = "y".repeat(20 * 1024);
      const { ids } = await queue.sendBatch(Array.from({ length: 40 }, (_, i) => ({ body, attributes: { eventId: `big-${i}` } })));
      expect(new Set(ids).size).toBe(40);
      expect(p.stats(queueName).active).toBe(40);
    } finally {
      await cleanup();
    }
  });

  it("names the missing queue when the entity does not exist", async () => {
    const p = await (peer ??= startServiceBusTestPeer());
    const queue = await createServiceBusQueue({ connectionString: p.connectionString, queueName: "no-such-queue" });
    try {
      await expect(queue.send({ body: "x" })).rejects.toMatchObject({
        code: "MessagingEntityNotFound", message: expect.stringContaining("'no-such-queue' could not be found"),
      });
    } finally {
      await queue.close();
    }
  });

  it.each([
    ["neither a connection string nor a namespace", { queueName: "q" }, /set connectionString \(SAS\), or fullyQualifiedNamespace/],
    ["both", { queueName: "q", connectionString: "Endpoint=sb://x/;SharedAccessKeyName=a;SharedAccessKey=b", fullyQualifiedNamespace: "x.servicebus.windows.net" }, /not both/],
    ["a namespace given as a URL", { queueName: "q", fullyQualifiedNamespace: "sb://x.servicebus.windows.net/" }, /must be a host name .*got "sb:\/\/x/],
    ["no queue name", { queueName: "", connectionString: "Endpoint=sb://x/;SharedAccessKeyName=a;SharedAccessKey=b" }, /queueName is required/],
  ])("refuses options with %s, saying what to set", async (_what, options, message) => {
    await expect(createServiceBusQueue(options)).rejects.toThrow(ServiceBusConfigError);
    await expect(createServiceBusQueue(options)).rejects.toThrow(message);
  });
});
