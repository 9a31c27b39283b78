/**
 * The bare-SDK side of bench:destinations: each service's own client library sending a prepared
 * message, with what the relay's sender puts on it (the envelope as body, the Standard Webhooks
 * headers as attributes, FIFO ids, a RabbitMQ confirm), and nothing else: no database, no
 * retries, no classification. Written against the SDKs directly, not through
 * shared/outbound/destinations, so the comparison includes our client code's cost too.
 */
export interface BareMessage {
  webhookId: string;
  body: string;
  attributes: Record<string, string>;
}

export interface BareSender {
  send(message: BareMessage): Promise<void>;
  close(): Promise<void>;
}

type Destination = Record<string, unknown> & { kind: string };

const awsConfig = (d: Destination) => ({
  region: (d.region as string | undefined) ?? "us-east-1",
  endpoint: d.endpoint as string,
  // A copy: the SDK writes into the credentials object it is given.
  credentials: { ...(d.credentials as { accessKeyId: string; secretAccessKey: string }) },
  maxAttempts: 1,
});
const stringAttributes = (a: Record<string, string>) => Object.fromEntries(Object.entries(a).map(([k, v]) => [k, { DataType: "String", StringValue: v }]));

export async function bareSender(destination: Record<string, unknown>): Promise<BareSender> {
  const d = destination as Destination;
  switch (d.kind) {
    case "sqs": {
      const sdk = await import("@aws-sdk/client-sqs");
      const client = new sdk.SQSClient(awsConfig(d));
      return {
        send: async (m) => { await client.send(new sdk.SendMessageCommand({ QueueUrl: d.queueUrl as string, MessageBody: m.body, MessageAttributes: stringAttributes(m.attributes) })); },
        close: async () => client.destroy(),
      };
    }
    case "sns": {
      const sdk = await import("@aws-sdk/client-sns");
      const client = new sdk.SNSClient({ ...awsConfig(d), region: (d.topicArn as string).split(":")[3]! });
      return {
        send: async (m) => { await client.send(new sdk.PublishCommand({ TopicArn: d.topicArn as string, Message: m.body, MessageAttributes: stringAttributes(m.attributes) })); },
        close: async () => client.destroy(),
      };
    }
    case "eventbridge": {
      const sdk = await import("@aws-sdk/client-eventbridge");
      const client = new sdk.EventBridgeClient(awsConfig(d));
      return {
        send: async (m) => {
          const detail = `{"headers":${JSON.stringify(m.attributes)},"body":${JSON.stringify(m.body)},"payload":${m.body}}`;
          const answer = await client.send(new sdk.PutEventsCommand({ Entries: [{ EventBusName: d.eventBus as string, Source: d.source as string, DetailType: "bench.created", Detail: detail }] }));
          if (answer.FailedEntryCount) throw new Error(`PutEvents refused: ${answer.Entries?.[0]?.ErrorCode}`);
        },
        close: async () => client.destroy(),
      };
    }
    case "pubsub": {
      const { PubSub } = await import("@google-cloud/pubsub");
      const [, project, topicId] = /^projects\/([^/]+)\/topics\/(.+)$/.exec(d.topic as string)!;
      const pubsub = new PubSub({ projectId: project, apiEndpoint: d.endpoint as string, emulatorMode: true, universeDomain: "googleapis.com" });
      const topic = pubsub.topic(topicId!, { batching: { maxMessages: 100, maxMilliseconds: 5 } });
      return {
        send: async (m) => { await topic.publishMessage({ data: Buffer.from(m.body), attributes: m.attributes }); },
        close: async () => { await topic.flush(); await pubsub.close(); },
      };
    }
    case "servicebus": {
      const { ServiceBusClient } = await import("@azure/service-bus");
      const client = new ServiceBusClient((d.credentials as { connectionString: string }).connectionString);
      const sender = client.createSender(d.queue as string);
      return {
        send: async (m) => { await sender.sendMessages({ body: Buffer.from(m.body), contentType: "application/json", messageId: m.webhookId, applicationProperties: m.attributes }); },
        close: async () => { await sender.close(); await client.close(); },
      };
    }
    case "rabbitmq": {
      const amqp = await import("amqplib");
      const creds = d.credentials as { username: string; password: string };
      const url = new URL(d.url as string);
      const connection = await amqp.connect({ protocol: "amqp", hostname: url.hostname, port: Number(url.port || 5672), username: creds.username, password: creds.password });
      const channel = await connection.createConfirmChannel();
      return {
        send: (m) => new Promise<void>((resolve, reject) => {
          channel.publish(d.exchange as string, d.routingKey as string, Buffer.from(m.body), { persistent: true, mandatory: true, contentType: "application/json", messageId: m.webhookId, headers: m.attributes }, (error: unknown) => (error ? reject(error) : resolve()));
        }),
        close: async () => { await connection.close(); },
      };
    }
  }
  throw new Error(`no bare sender for ${d.kind}`);
}
