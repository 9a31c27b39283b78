/**
 * What only one service can show (contract.test.ts adds these to its kind's contract):
 * - SQS throttling: moto never throttles, so the faulty proxy TEST PEER (test/support/
 *   faultyProxyTestPeer.ts) stands in front of it and answers the next sends with SQS's
 *   ThrottlingException; the answers it forwards are moto's.
 * - RabbitMQ: a message no queue is bound to receive is returned by the broker (mandatory), so the
 *   attempt fails as `unroutable` and is retried, and delivered once a queue is bound; a login the
 *   broker refuses is dead-lettered as `access_denied`.
 */
import { expect, it } from "vitest";
import type { Database } from "../../../shared/db/port.js";
import { createRelay, createSubscription, enqueue, getDelivery, listAttempts } from "../../../shared/outbound/index.js";
import { createTransport } from "../../../shared/outbound/transport.js";
import { MOTO_URL } from "../../support/emulators.js";
import { startFaultyProxyTestPeer } from "../../support/faultyProxyTestPeer.js";
import { waitFor } from "../support/receiver.js";
import { consume, FAST } from "./contract.js";
import { RABBITMQ_URL, rabbitmqService, sqsService } from "./services.js";

/** Runs `body` with a started relay (fast retries), stopped after. */
async function withRelay(db: Database, body: () => Promise<void>): Promise<void> {
  const transport = createTransport({ timeoutMs: 5000 });
  const relay = createRelay({ db, transport, retryPolicy: FAST, pollIntervalMs: 20 });
  await relay.start();
  try {
    await body();
  } finally {
    await relay.stop();
    await transport.close();
  }
}

export function sqsThrottling(ctx: { db: () => Database }): void {
  it("SQS: a throttled send (ThrottlingException) is retried with backoff and then delivered", async () => {
    const db = ctx.db();
    const target = await sqsService.target({ ordered: false });
    const proxy = await startFaultyProxyTestPeer(MOTO_URL);
    try {
      const sub = await createSubscription(db, { destination: { ...target.destination, endpoint: proxy.url }, eventTypes: ["*"] });
      proxy.failNext(2, { status: 400, body: JSON.stringify({ __type: "com.amazonaws.sqs#ThrottlingException", message: "Rate exceeded" }) });
      await enqueue(db, { id: "evt-throttled", type: "order.paid", data: {} });
      const id = `evt-throttled:${sub.id}`;
      await withRelay(db, async () => {
        await waitFor("delivered after the throttling", async () => (await getDelivery(db, id)).status === "delivered", 20_000);
      });
      const attempts = await listAttempts(db, id);
      expect(attempts.map((a) => [a.result, a.errorClass])).toEqual([["retryable", "throttled"], ["retryable", "throttled"], ["delivered", null]]);
      expect(attempts[0]!.responseExcerpt).toMatch(/Rate exceeded/);
      const got = await consume(target, (g) => g.length >= 1);
      expect(got.map((m) => m.attributes["webhook-id"])).toEqual([id]);
    } finally {
      await proxy.close();
      await target.cleanup();
    }
  });
}

export function rabbitmqSpecifics(ctx: { db: () => Database }): void {
  it("RabbitMQ: a login the broker refuses (a wrong password) is dead-lettered at once as access_denied", async () => {
    const db = ctx.db();
    const target = await rabbitmqService.target({ ordered: false });
    try {
      const destination = { ...target.destination, credentials: { username: "guest", password: "not-the-password" } };
      const sub = await createSubscription(db, { destination, eventTypes: ["*"] });
      await enqueue(db, { id: "evt-refused-login", type: "order.paid", data: {} });
      const id = `evt-refused-login:${sub.id}`;
      await withRelay(db, async () => {
        await waitFor("dead-lettered", async () => (await getDelivery(db, id)).status === "dead", 20_000);
      });
      const attempts = await listAttempts(db, id);
      expect(attempts.map((a) => [a.result, a.errorClass])).toEqual([["permanent", "access_denied"]]);
      expect(attempts[0]!.responseExcerpt).toMatch(/403|ACCESS.REFUSED/);
      expect(JSON.stringify(attempts)).not.toContain("not-the-password");
    } finally {
      await target.cleanup();
    }
  });

  it("RabbitMQ: a message no queue is bound to receive is retried as unroutable, and delivered once a queue is bound", async () => {
    const db = ctx.db();
    const amqp = await import("amqplib");
    const connection = await amqp.connect(RABBITMQ_URL);
    const channel = await connection.createChannel();
    const exchange = `wh-unbound-${Date.now().toString(36)}`;
    const queue = `${exchange}-q`;
    await channel.assertExchange(exchange, "direct", { durable: false });
    const target = await rabbitmqService.target({ ordered: false });
    try {
      const sub = await createSubscription(db, { destination: { ...target.destination, exchange }, eventTypes: ["*"], maxAttempts: 50 });
      await enqueue(db, { id: "evt-unroutable", type: "order.paid", data: {} });
      const id = `evt-unroutable:${sub.id}`;
      await withRelay(db, async () => {
        await waitFor("an unroutable attempt", async () => (await listAttempts(db, id)).some((a) => a.errorClass === "unroutable"), 20_000);
        await channel.assertQueue(queue, { durable: false });
        await channel.bindQueue(queue, exchange, "orders");
        await waitFor("delivered once bound", async () => (await getDelivery(db, id)).status === "delivered", 20_000);
      });
      const attempts = await listAttempts(db, id);
      expect(attempts.at(-1)).toMatchObject({ result: "delivered" });
      expect(attempts.slice(0, -1).every((a) => a.result === "retryable" && a.errorClass === "unroutable")).toBe(true);
      const m = await channel.get(queue, { noAck: true });
      expect(m && m.properties.messageId).toBe(id);
    } finally {
      await channel.deleteQueue(queue).catch(() => {});
      await channel.deleteExchange(exchange).catch(() => {});
      await connection.close().catch(() => {});
      await target.cleanup();
    }
  });
}
