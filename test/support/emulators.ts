/**
 * Where the local stand-ins for the cloud queues answer, and what a test does when one is absent:
 * skip loudly on a workstation, FAIL under CI=true (CI must run them all).
 *
 * Start them with `source .ci/services.sh && start_services` (stop: `stop_services`).
 * - moto_server (SQS): MOTO_URL, default http://127.0.0.1:5000
 * - Google's Pub/Sub emulator: PUBSUB_EMULATOR_HOST, default 127.0.0.1:8085
 */
export const MOTO_URL = process.env.MOTO_URL ?? "http://127.0.0.1:5000";
export const PUBSUB_EMULATOR_HOST = process.env.PUBSUB_EMULATOR_HOST ?? "127.0.0.1:8085";

/** True when an HTTP server answers at `url` within two seconds (any status). */
export async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await response.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

export const motoAvailable = () => answers(`${MOTO_URL}/moto-api/`);
export const pubsubEmulatorAvailable = () => answers(`http://${PUBSUB_EMULATOR_HOST}/`);

/**
 * `undefined` when `service` answers; otherwise the skip reason (and a loud warning), or, under
 * CI=true, an error: a missing service must fail CI rather than silently shrink the suite.
 */
export async function skipUnlessAvailable(service: string, where: string, available: () => Promise<boolean>): Promise<string | undefined> {
  if (await available()) return undefined;
  const reason = `${service} is not answering at ${where}; start it with \`source .ci/services.sh && start_services\``;
  if (process.env.CI && process.env.CI !== "false") throw new Error(`${reason}. CI must run the emulator-backed tests.`);
  console.warn(`\n!!! ${reason}: its tests are SKIPPED.\n`);
  return reason;
}

/** Region and dummy credentials moto accepts; never real ones. */
export const MOTO_CLIENT_CONFIG = {
  endpoint: MOTO_URL,
  region: "us-east-1",
  credentials: { accessKeyId: "testing", secretAccessKey: "testing" },
};

/**
 * Creates a fresh SQS queue + DLQ on moto with a redrive policy (`maxReceiveCount`); `remove`
 * deletes both. The SDK is loaded here only, on first use.
 */
export async function createMotoQueuePair(maxReceiveCount: number): Promise<{ queueUrl: string; deadLetterQueueUrl: string; remove(): Promise<void> }> {
  const sdk = await import("@aws-sdk/client-sqs");
  const client = new sdk.SQSClient(MOTO_CLIENT_CONFIG);
  const name = `wh-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const dlq = await client.send(new sdk.CreateQueueCommand({ QueueName: `${name}-dlq` }));
  const { Attributes } = await client.send(new sdk.GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ["QueueArn"] }));
  const main = await client.send(new sdk.CreateQueueCommand({
    QueueName: name,
    Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: Attributes!.QueueArn, maxReceiveCount }) },
  }));
  return {
    queueUrl: main.QueueUrl!,
    deadLetterQueueUrl: dlq.QueueUrl!,
    async remove() {
      await client.send(new sdk.DeleteQueueCommand({ QueueUrl: main.QueueUrl })).catch(() => {});
      await client.send(new sdk.DeleteQueueCommand({ QueueUrl: dlq.QueueUrl })).catch(() => {});
      client.destroy();
    },
  };
}

export const PUBSUB_PROJECT = "multicloud-webhooks-test";

/**
 * Creates on the Pub/Sub emulator a topic, a dead-letter topic, a pull subscription with a
 * dead-letter policy (`maxDeliveryAttempts`, 5..100 as on Google Cloud) and a subscription on the
 * dead-letter topic; `remove` deletes them.
 */
export async function createEmulatorTopics(maxDeliveryAttempts: number): Promise<{
  projectId: string; topic: string; subscription: string; deadLetterTopic: string; deadLetterSubscription: string;
  subscriptionAckDeadlineSeconds: number; remove(): Promise<void>;
}> {
  process.env.PUBSUB_EMULATOR_HOST ??= PUBSUB_EMULATOR_HOST;
  const { PubSub } = await import("@google-cloud/pubsub");
  const pubsub = new PubSub({ projectId: PUBSUB_PROJECT, universeDomain: "googleapis.com", emulatorMode: true });
  const name = `wh-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const [topic] = await pubsub.createTopic(name);
  const [deadLetterTopic] = await pubsub.createTopic(`${name}-dlq`);
  const [deadLetterSubscription] = await deadLetterTopic.createSubscription(`${name}-dlq-reader`, { ackDeadlineSeconds: 10 });
  const [subscription] = await topic.createSubscription(`${name}-worker`, {
    ackDeadlineSeconds: 10,
    deadLetterPolicy: { deadLetterTopic: deadLetterTopic.name, maxDeliveryAttempts },
  });
  const short = (full: string) => full.split("/").pop()!;
  return {
    projectId: PUBSUB_PROJECT,
    topic: short(topic.name),
    subscription: short(subscription.name),
    deadLetterTopic: short(deadLetterTopic.name),
    deadLetterSubscription: short(deadLetterSubscription.name),
    subscriptionAckDeadlineSeconds: 10,
    async remove() {
      for (const thing of [subscription, deadLetterSubscription, topic, deadLetterTopic]) await thing.delete().catch(() => {});
      await pubsub.close();
    },
  };
}
