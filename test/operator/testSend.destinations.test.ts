/**
 * Issue 31 item 5: `POST /subscriptions/:id/test` works for every destination kind. Through the
 * management API of a running platform (its relay in the same process), a subscription of each kind
 * is created, sent a test event, and the test event reaches the service as the signed envelope,
 * verified with `standardwebhooks` from the message's attributes with the secret the creation
 * answered; the delivery is then `delivered`. The services are the contract suite's
 * (test/outbound/destinations/services.ts): SQS, SNS and EventBridge on moto, Pub/Sub on its
 * emulator, RabbitMQ on the local broker, Service Bus on the test peer (which models an entity's
 * send and receive, not Service Bus's own limits or authorization). A service that is not running
 * skips its kind loudly; under CI=true it fails.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeEachBackend } from "../support/databases.js";
import { MOTO_URL, motoAvailable, PUBSUB_EMULATOR_HOST, pubsubEmulatorAvailable, skipUnlessAvailable } from "../support/emulators.js";
import { startServiceBusTestPeer, type ServiceBusTestPeer } from "../support/serviceBusTestPeer.js";
import { consume } from "../outbound/destinations/contract.js";
import { eventBridgeService, pubsubService, RABBITMQ_URL, rabbitmqService, serviceBusService, snsService, sqsService, tcpAnswers, type Service, type Target } from "../outbound/destinations/services.js";
import { eventually, startTestPlatform, type TestPlatform } from "./harness.js";

const moto = await skipUnlessAvailable("moto_server (SQS, SNS, EventBridge)", MOTO_URL, motoAvailable);
const pubsub = await skipUnlessAvailable("the Pub/Sub emulator", PUBSUB_EMULATOR_HOST, pubsubEmulatorAvailable);
const broker = new URL(RABBITMQ_URL);
const rabbit = await skipUnlessAvailable("RabbitMQ", broker.host, () => tcpAnswers(broker.hostname, Number(broker.port || 5672)));

let peer: ServiceBusTestPeer | undefined;
beforeAll(async () => { peer = await startServiceBusTestPeer(); });
afterAll(async () => { await peer?.close(); });

const KINDS: [Service, string | undefined][] = [
  [sqsService, moto], [snsService, moto], [eventBridgeService, moto], [pubsubService, pubsub], [serviceBusService(() => peer!), undefined], [rabbitmqService, rabbit],
];

describeEachBackend("POST /subscriptions/:id/test for every destination kind", (ctx) => {
  let t: TestPlatform;
  const targets: Target[] = [];
  beforeAll(async () => { t = await startTestPlatform(ctx.db, {}); }, 120_000);
  afterAll(async () => {
    await t?.stop();
    for (const target of targets) await target.cleanup().catch(() => {});
  });

  for (const [service, skip] of KINDS) {
    it.skipIf(skip !== undefined)(`${service.kind}: the test event arrives signed, and its delivery is delivered`, async () => {
      const target = await service.target({ ordered: false });
      targets.push(target);
      // Event types no event of this test has: only the test event, sent to it alone, can reach it.
      const sub = await t.api("POST", "/subscriptions", { destination: target.destination, eventTypes: ["nothing.sent.here"] });
      expect(sub.destination.kind).toBe(service.kind);
      const sent = await t.api("POST", `/subscriptions/${sub.id}/test`, { data: { probe: service.kind } });
      expect(sent.deliveries).toEqual([{ id: expect.any(String), subscriptionId: sub.id, status: "pending" }]);
      const [message] = await consume(target, (got) => got.length >= 1);
      const payload = new Webhook(sub.secrets[0]).verify(message!.body, message!.attributes) as { type: string; data: unknown };
      expect(payload).toMatchObject({ type: "webhooks.test", data: { probe: service.kind } });
      expect(message!.attributes["webhook-id"]).toBe(sent.deliveries[0].id);
      const delivery = await eventually("the test delivery delivered", async () => {
        const d = await t.api("GET", `/deliveries/${sent.deliveries[0].id}`);
        return d.status === "delivered" ? d : undefined;
      });
      expect(delivery.subscriptionId).toBe(sub.id);
    }, 60_000);
  }
});

describe("the test send's kinds", () => {
  it("are every kind the API accepts besides http", async () => {
    const { DESTINATION_KINDS } = await import("../../shared/outbound/destinations/config.js");
    expect(KINDS.map(([s]) => s.kind).sort()).toEqual(DESTINATION_KINDS.filter((k) => k !== "http").sort());
  });
});
