/**
 * Issue 31, must show 1: the destination contract (contract.ts) for every kind, against the real
 * service or the best stand-in that runs here (services.ts says which, and what the Service Bus
 * test peer does not model). A service that is not running skips its kind loudly; under CI=true
 * it fails. Plus, per service, what only it can show: SQS throttling (a test peer in front of moto
 * answering ThrottlingException), a RabbitMQ message no queue is bound to receive, and the batch
 * calls' per-entry outcomes and order (SQS, EventBridge: batching.ts).
 */
import { afterAll, beforeAll } from "vitest";
import { MOTO_URL, motoAvailable, PUBSUB_EMULATOR_HOST, pubsubEmulatorAvailable, skipUnlessAvailable } from "../../support/emulators.js";
import { startServiceBusTestPeer, type ServiceBusTestPeer } from "../../support/serviceBusTestPeer.js";
import { destinationContract } from "./contract.js";
import { eventBridgeService, pubsubService, RABBITMQ_URL, rabbitmqService, serviceBusService, snsService, sqsService, tcpAnswers } from "./services.js";
import { eventBridgeBatching, sqsBatching } from "./batching.js";
import { rabbitmqSpecifics, sqsThrottling } from "./specifics.js";

const moto = await skipUnlessAvailable("moto_server (SQS, SNS, EventBridge)", MOTO_URL, motoAvailable);
const pubsub = await skipUnlessAvailable("the Pub/Sub emulator", PUBSUB_EMULATOR_HOST, pubsubEmulatorAvailable);
const broker = new URL(RABBITMQ_URL);
const rabbit = await skipUnlessAvailable("RabbitMQ", broker.host, () => tcpAnswers(broker.hostname, Number(broker.port || 5672)));

let peer: ServiceBusTestPeer | undefined;
beforeAll(async () => { peer = await startServiceBusTestPeer(); });
afterAll(async () => { await peer?.close(); });

destinationContract(sqsService, { skip: moto, ordered: "kept", extra: (ctx) => { sqsThrottling(ctx); sqsBatching(ctx); } });
destinationContract(snsService, { skip: moto, ordered: "kept" });
destinationContract(eventBridgeService, { skip: moto, ordered: "refused", extra: eventBridgeBatching });
destinationContract(pubsubService, { skip: pubsub, ordered: "kept" });
destinationContract(serviceBusService(() => peer!), { ordered: "kept" });
destinationContract(rabbitmqService, { skip: rabbit, ordered: "kept", extra: rabbitmqSpecifics });
