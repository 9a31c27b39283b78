/**
 * The AMQP test peer itself, driven by the real `@azure/service-bus` client: the operations the
 * adapter does not use but docs/queues-servicebus.md says the peer models. The adapter's own
 * behaviour is covered by serviceBus.test.ts (the shared contract) and serviceBusTrigger.test.ts.
 */
import { ServiceBusClient } from "@azure/service-bus";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServiceBusTestPeer, type ServiceBusTestPeer } from "../support/serviceBusTestPeer.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("Service Bus AMQP test peer, through the real SDK", () => {
  let peer: ServiceBusTestPeer;
  let client: ServiceBusClient;
  let n = 0;
  const queue = (options = {}) => {
    const name = `peer-${++n}`;
    peer.createQueue(name, options);
    return name;
  };

  beforeAll(async () => {
    peer = await startServiceBusTestPeer({ maxMessageSize: 4096 });
    client = new ServiceBusClient(peer.connectionString);
  });
  afterAll(async () => {
    await client?.close();
    await peer?.close();
  });

  it("peeks without locking, in sequence order", async () => {
    const name = queue();
    await client.createSender(name).sendMessages([{ body: "a", messageId: "a" }, { body: "b", messageId: "b" }]);
    const receiver = client.createReceiver(name);
    const peeked = await receiver.peekMessages(10);
    expect(peeked.map((m) => m.messageId)).toEqual(["a", "b"]);
    expect(peeked[0]!.sequenceNumber!.lessThan(peeked[1]!.sequenceNumber!)).toBe(true);
    expect(peer.stats(name)).toMatchObject({ active: 2, locked: 0 });
    expect(await receiver.peekMessages(10)).toEqual([]); // the SDK continues after the last peeked
    await receiver.close();
  });

  it("cancels a scheduled message before it is due", async () => {
    const name = queue();
    const sender = client.createSender(name);
    const [seq] = await sender.scheduleMessages({ body: "later" }, new Date(Date.now() + 60_000));
    expect(peer.stats(name)).toMatchObject({ scheduled: 1 });
    await sender.cancelScheduledMessages(seq!);
    expect(peer.stats(name)).toMatchObject({ scheduled: 0, active: 0 });
  });

  it("answers a settlement after the lock expired with MessageLockLost, and redelivers", async () => {
    const name = queue({ lockDurationMs: 300 });
    await client.createSender(name).sendMessages({ body: "slow", messageId: "slow" });
    const receiver = client.createReceiver(name, { maxAutoLockRenewalDurationInMs: 0 });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    await sleep(600);
    await expect(receiver.completeMessage(m!)).rejects.toMatchObject({ code: "MessageLockLost" });
    const [again] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    expect(again).toMatchObject({ messageId: "slow", deliveryCount: 1 });
    await receiver.completeMessage(again!);
    await receiver.close();
  });

  it("settles through $management once the receiving link is closed (update-disposition)", async () => {
    const name = queue();
    await client.createSender(name).sendMessages({ body: "x", messageId: "x" });
    const receiver = client.createReceiver(name, { maxAutoLockRenewalDurationInMs: 0 });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    await receiver.close();
    const other = client.createReceiver(name);
    await other.completeMessage(m!);
    expect(peer.stats(name)).toMatchObject({ active: 0, locked: 0 });
    await other.close();
  });

  it("removes messages handed to a receive-and-delete receiver", async () => {
    const name = queue();
    await client.createSender(name).sendMessages({ body: "gone", messageId: "gone" });
    const receiver = client.createReceiver(name, { receiveMode: "receiveAndDelete" });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    expect(m?.body).toBe("gone");
    expect(peer.stats(name)).toMatchObject({ active: 0, locked: 0 });
    await receiver.close();
  });

  it("advertises max_message_size: the SDK sizes batches by it, and larger messages are refused", async () => {
    const name = queue();
    const sender = client.createSender(name);
    const batch = await sender.createMessageBatch();
    expect(batch.maxSizeInBytes).toBe(4096);
    await expect(sender.sendMessages({ body: "z".repeat(5000) })).rejects.toMatchObject({ code: "MessageSizeExceeded", message: expect.stringContaining("exceeds the limit of 4096 bytes") });
    expect(peer.stats(name).active).toBe(0);
  });
});
