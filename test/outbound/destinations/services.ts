/**
 * The destination contract's services (contract.test.ts): for each kind, a fresh destination on
 * the real service or the best stand-in that runs here, and a consumer reading what arrived there:
 *
 * - sqs, sns, eventbridge: moto (MOTO_URL). SNS is read through an SQS queue subscribed with raw
 *   message delivery; EventBridge through a rule on the bus whose target is an SQS queue.
 * - pubsub: Google's Pub/Sub emulator, through a pull subscription with message ordering.
 * - servicebus: the Service Bus TEST PEER (test/support/serviceBusTestPeer.ts, an AMQP 1.0 peer the
 *   real SDK talks to). It does NOT model: duplicate detection (two sends of one MessageId are two
 *   messages there; Azure drops the second within the entity's window), sessions (sessionId is kept
 *   and read back, but no session receiver or lock exists), topics and subscriptions, SAS tokens
 *   (any key is accepted: an access refusal cannot be shown), throttling (ServerBusy).
 * - rabbitmq: the local broker (RABBITMQ_URL, default amqp://guest:guest@127.0.0.1:5672).
 */
import { connect as connectAmqp } from "node:net";
import type { Message as SqsMessage } from "@aws-sdk/client-sqs";
import { MOTO_CLIENT_CONFIG, MOTO_URL, PUBSUB_EMULATOR_HOST } from "../../support/emulators.js";
import type { ServiceBusTestPeer } from "../../support/serviceBusTestPeer.js";

export const RABBITMQ_URL = process.env.RABBITMQ_URL ?? "amqp://guest:guest@127.0.0.1:5672";
const ACCOUNT = "123456789012";

/** One message as a consumer got it: the body and the attributes a verifier needs, plus the service's ids. */
export interface Consumed {
  body: string;
  attributes: Record<string, string>;
  /** SQS FIFO MessageDeduplicationId, Service Bus MessageId, AMQP message-id. */
  serviceId?: string;
  /** SQS FIFO MessageGroupId, Service Bus sessionId, Pub/Sub orderingKey. */
  group?: string;
}

export interface Target {
  /** The `destination` of a subscription delivering here. */
  destination: Record<string, unknown>;
  /** Everything consumed since the last call (each message once, acknowledged). */
  read(): Promise<Consumed[]>;
  cleanup(): Promise<void>;
}

export interface Service {
  kind: string;
  /** Whether the service itself drops a repeat of a delivery id (SQS FIFO, SNS FIFO on moto). */
  dedupes: boolean;
  /** A fresh destination; `ordered`: one that keeps order (a FIFO queue or topic, ordering enabled). */
  target(options: { ordered: boolean }): Promise<Target>;
  /** A destination of this kind whose entity does not exist (refused: not_found). */
  missing(): Promise<Record<string, unknown>>;
  /** A destination of this kind on an address where nothing listens (retryable: no answer). */
  unreachable(port: number): Record<string, unknown>;
}

const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
const MOTO = { endpoint: MOTO_URL, region: "us-east-1", credentials: { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "testing" } };

/** Receives everything now in an SQS queue (attributes included), deleting what it read. */
async function drainSqs(queueUrl: string): Promise<SqsMessage[]> {
  const sdk = await import("@aws-sdk/client-sqs");
  const client = new sdk.SQSClient(MOTO_CLIENT_CONFIG);
  try {
    const out: SqsMessage[] = [];
    for (;;) {
      const { Messages = [] } = await client.send(new sdk.ReceiveMessageCommand({
        QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, MessageAttributeNames: ["All"], MessageSystemAttributeNames: ["All"], VisibilityTimeout: 30,
      }));
      if (Messages.length === 0) return out;
      out.push(...Messages);
      for (const m of Messages) await client.send(new sdk.DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }));
    }
  } finally {
    client.destroy();
  }
}

const sqsAttributes = (m: SqsMessage): Record<string, string> =>
  Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue ?? ""]));

async function createSqsQueue(name: string, fifo: boolean): Promise<{ url: string; arn: string; remove(): Promise<void> }> {
  const sdk = await import("@aws-sdk/client-sqs");
  const client = new sdk.SQSClient(MOTO_CLIENT_CONFIG);
  const { QueueUrl } = await client.send(new sdk.CreateQueueCommand({ QueueName: fifo ? `${name}.fifo` : name, Attributes: fifo ? { FifoQueue: "true" } : {} }));
  const { Attributes } = await client.send(new sdk.GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["QueueArn"] }));
  return {
    url: QueueUrl!,
    arn: Attributes!.QueueArn!,
    async remove() {
      await client.send(new sdk.DeleteQueueCommand({ QueueUrl })).catch(() => {});
      client.destroy();
    },
  };
}

export const sqsService: Service = {
  kind: "sqs",
  dedupes: true,
  async target({ ordered }) {
    const queue = await createSqsQueue(unique("dest"), ordered);
    return {
      destination: { kind: "sqs", queueUrl: queue.url, ...MOTO },
      async read() {
        return (await drainSqs(queue.url)).map((m) => ({ body: m.Body!, attributes: sqsAttributes(m), serviceId: m.Attributes?.MessageDeduplicationId, group: m.Attributes?.MessageGroupId }));
      },
      cleanup: () => queue.remove(),
    };
  },
  async missing() {
    return { kind: "sqs", queueUrl: `${MOTO_URL}/${ACCOUNT}/${unique("absent")}`, ...MOTO };
  },
  unreachable(port) {
    return { kind: "sqs", queueUrl: `http://127.0.0.1:${port}/${ACCOUNT}/q`, ...MOTO, endpoint: `http://127.0.0.1:${port}` };
  },
};

export const snsService: Service = {
  kind: "sns",
  dedupes: true,
  async target({ ordered }) {
    const sdk = await import("@aws-sdk/client-sns");
    const client = new sdk.SNSClient(MOTO_CLIENT_CONFIG);
    const name = unique("topic");
    const { TopicArn } = await client.send(new sdk.CreateTopicCommand({ Name: ordered ? `${name}.fifo` : name, Attributes: ordered ? { FifoTopic: "true" } : {} }));
    const queue = await createSqsQueue(unique("sns-reader"), ordered);
    await client.send(new sdk.SubscribeCommand({ TopicArn, Protocol: "sqs", Endpoint: queue.arn, Attributes: { RawMessageDelivery: "true" } }));
    return {
      destination: { kind: "sns", topicArn: TopicArn, endpoint: MOTO.endpoint, credentials: MOTO.credentials },
      async read() {
        return (await drainSqs(queue.url)).map((m) => ({ body: m.Body!, attributes: sqsAttributes(m), serviceId: m.Attributes?.MessageDeduplicationId, group: m.Attributes?.MessageGroupId }));
      },
      async cleanup() {
        await client.send(new sdk.DeleteTopicCommand({ TopicArn })).catch(() => {});
        client.destroy();
        await queue.remove();
      },
    };
  },
  async missing() {
    return { kind: "sns", topicArn: `arn:aws:sns:us-east-1:${ACCOUNT}:${unique("absent")}`, endpoint: MOTO.endpoint, credentials: MOTO.credentials };
  },
  unreachable(port) {
    return { kind: "sns", topicArn: `arn:aws:sns:us-east-1:${ACCOUNT}:t`, endpoint: `http://127.0.0.1:${port}`, credentials: MOTO.credentials };
  },
};

export const eventBridgeService: Service = {
  kind: "eventbridge",
  dedupes: false,
  async target() {
    const sdk = await import("@aws-sdk/client-eventbridge");
    const client = new sdk.EventBridgeClient(MOTO_CLIENT_CONFIG);
    const bus = unique("bus");
    const source = unique("webhooks.test");
    await client.send(new sdk.CreateEventBusCommand({ Name: bus }));
    const queue = await createSqsQueue(unique("eb-reader"), false);
    await client.send(new sdk.PutRuleCommand({ Name: `${bus}-all`, EventBusName: bus, EventPattern: JSON.stringify({ source: [source] }) }));
    await client.send(new sdk.PutTargetsCommand({ Rule: `${bus}-all`, EventBusName: bus, Targets: [{ Id: "reader", Arn: queue.arn }] }));
    return {
      destination: { kind: "eventbridge", eventBus: bus, source, region: "us-east-1", endpoint: MOTO.endpoint, credentials: MOTO.credentials },
      async read() {
        // The rule's target gets the EventBridge event; its detail carries headers, body and payload.
        return (await drainSqs(queue.url)).map((m) => {
          const event = JSON.parse(m.Body!) as { "detail-type": string; source: string; detail: { headers: Record<string, string>; body: string } };
          return { body: event.detail.body, attributes: { ...event.detail.headers, "x-detail-type": event["detail-type"] } };
        });
      },
      async cleanup() {
        await client.send(new sdk.RemoveTargetsCommand({ Rule: `${bus}-all`, EventBusName: bus, Ids: ["reader"] })).catch(() => {});
        await client.send(new sdk.DeleteRuleCommand({ Name: `${bus}-all`, EventBusName: bus })).catch(() => {});
        await client.send(new sdk.DeleteEventBusCommand({ Name: bus })).catch(() => {});
        client.destroy();
        await queue.remove();
      },
    };
  },
  async missing() {
    return { kind: "eventbridge", eventBus: unique("absent"), region: "us-east-1", endpoint: MOTO.endpoint, credentials: MOTO.credentials };
  },
  unreachable(port) {
    return { kind: "eventbridge", eventBus: "default", region: "us-east-1", endpoint: `http://127.0.0.1:${port}`, credentials: MOTO.credentials };
  },
};

export const pubsubService: Service = {
  kind: "pubsub",
  dedupes: false,
  async target({ ordered }) {
    const { PubSub } = await import("@google-cloud/pubsub");
    const pubsub = new PubSub({ projectId: "multicloud-webhooks-test", apiEndpoint: PUBSUB_EMULATOR_HOST, emulatorMode: true, universeDomain: "googleapis.com" });
    const name = unique("dest");
    const [topic] = await pubsub.createTopic(name);
    const [subscription] = await topic.createSubscription(`${name}-reader`, { enableMessageOrdering: ordered, ackDeadlineSeconds: 60 });
    const got: Consumed[] = [];
    subscription.on("message", (m: { data: Buffer; attributes: Record<string, string>; orderingKey?: string; ack(): void }) => {
      got.push({ body: m.data.toString("utf8"), attributes: { ...m.attributes }, group: m.orderingKey || undefined });
      m.ack();
    });
    subscription.on("error", () => {});
    return {
      destination: { kind: "pubsub", topic: `projects/multicloud-webhooks-test/topics/${name}`, endpoint: PUBSUB_EMULATOR_HOST, emulator: true },
      async read() {
        return got.splice(0, got.length);
      },
      async cleanup() {
        await subscription.close().catch(() => {});
        await subscription.delete().catch(() => {});
        await topic.delete().catch(() => {});
        await pubsub.close();
      },
    };
  },
  async missing() {
    return { kind: "pubsub", topic: `projects/multicloud-webhooks-test/topics/${unique("absent")}`, endpoint: PUBSUB_EMULATOR_HOST, emulator: true };
  },
  unreachable(port) {
    return { kind: "pubsub", topic: "projects/multicloud-webhooks-test/topics/none", endpoint: `127.0.0.1:${port}`, emulator: true };
  },
};

/** Service Bus on the test peer (see the module comment for what it does not model). */
export function serviceBusService(peer: () => ServiceBusTestPeer): Service {
  return {
    kind: "servicebus",
    dedupes: false,
    async target() {
      const { ServiceBusClient } = await import("@azure/service-bus");
      const name = unique("dest");
      peer().createQueue(name);
      const client = new ServiceBusClient(peer().connectionString);
      const receiver = client.createReceiver(name, { receiveMode: "receiveAndDelete", skipParsingBodyAsJson: true });
      return {
        destination: { kind: "servicebus", queue: name, credentials: { connectionString: peer().connectionString } },
        async read() {
          const out: Consumed[] = [];
          for (;;) {
            const batch = await receiver.receiveMessages(50, { maxWaitTimeInMs: 300 });
            if (batch.length === 0) return out;
            for (const m of batch) {
              out.push({
                body: Buffer.isBuffer(m.body) ? m.body.toString("utf8") : String(m.body),
                attributes: Object.fromEntries(Object.entries(m.applicationProperties ?? {}).map(([k, v]) => [k, String(v)])),
                serviceId: String(m.messageId),
                group: m.sessionId,
              });
            }
          }
        },
        async cleanup() {
          await receiver.close().catch(() => {});
          await client.close();
        },
      };
    },
    async missing() {
      return { kind: "servicebus", queue: unique("absent"), credentials: { connectionString: peer().connectionString } };
    },
    unreachable(port) {
      return { kind: "servicebus", queue: "q", credentials: { connectionString: `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=k;SharedAccessKey=none;UseDevelopmentEmulator=true` } };
    },
  };
}

export const rabbitmqService: Service = {
  kind: "rabbitmq",
  dedupes: false,
  async target() {
    const amqp = await import("amqplib");
    const connection = await amqp.connect(RABBITMQ_URL);
    const channel = await connection.createChannel();
    const exchange = unique("wh-x");
    const queue = unique("wh-q");
    await channel.assertExchange(exchange, "direct", { durable: false, autoDelete: false });
    await channel.assertQueue(queue, { durable: false, exclusive: false });
    await channel.bindQueue(queue, exchange, "orders");
    const broker = new URL(RABBITMQ_URL);
    return {
      destination: { kind: "rabbitmq", url: `amqp://${broker.host}`, exchange, routingKey: "orders", credentials: { username: decodeURIComponent(broker.username), password: decodeURIComponent(broker.password) } },
      async read() {
        const out: Consumed[] = [];
        for (;;) {
          const m = await channel.get(queue, { noAck: true });
          if (!m) return out;
          const headers = Object.fromEntries(Object.entries(m.properties.headers ?? {}).map(([k, v]) => [k, Buffer.isBuffer(v) ? v.toString("utf8") : String(v)]));
          out.push({ body: m.content.toString("utf8"), attributes: headers, serviceId: m.properties.messageId });
        }
      },
      async cleanup() {
        await channel.deleteQueue(queue).catch(() => {});
        await channel.deleteExchange(exchange).catch(() => {});
        await connection.close().catch(() => {});
      },
    };
  },
  async missing() {
    const broker = new URL(RABBITMQ_URL);
    return { kind: "rabbitmq", url: `amqp://${broker.host}`, exchange: unique("absent-x"), routingKey: "orders", credentials: { username: decodeURIComponent(broker.username), password: decodeURIComponent(broker.password) } };
  },
  unreachable(port) {
    return { kind: "rabbitmq", url: `amqp://127.0.0.1:${port}`, exchange: "amq.direct", routingKey: "orders" };
  },
};

/** Whether something accepts TCP connections at host:port within two seconds. */
export function tcpAnswers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connectAmqp({ host, port, timeout: 2000 });
    socket.once("connect", () => { socket.destroy(); resolve(true); });
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => { socket.destroy(); resolve(false); });
  });
}
