/**
 * Pub/Sub destinations: one published message per attempt, the envelope as its data (bytes, as
 * signed), the Standard Webhooks headers as attributes, and an ordered subscription's ordering key
 * as the message's `orderingKey` (a subscription with message ordering enabled gets each key's
 * messages in order). Pub/Sub has no publish-side de-duplication id: consumers de-duplicate on
 * the webhook-id attribute (an exactly-once subscription de-duplicates its own redeliveries).
 * Publishes within a few milliseconds are batched into one request by the client library. A
 * failed publish pauses its ordering key in the library; it is resumed at once, since the relay
 * sends that key's next message only after this one succeeded. The only module that loads
 * @google-cloud/pubsub for destinations, on the first Pub/Sub destination.
 */
import type { OpenDestination } from "./config.js";
import { classifyGrpcError } from "./classify.js";
import type { DestinationClient, SendFailure } from "./message.js";

/** How long the library gathers concurrent publishes into one request (ms). */
const BATCH_MS = 5;

export async function openPubSub(destination: OpenDestination & { kind: "pubsub" }): Promise<DestinationClient & { classify(error: unknown): SendFailure }> {
  const sdk = await import("@google-cloud/pubsub");
  const [, projectId, topicId] = /^projects\/([^/]+)\/topics\/(.+)$/.exec(destination.topic)!;
  const credentials = destination.credentials && "clientEmail" in destination.credentials
    ? { credentials: { client_email: destination.credentials.clientEmail, private_key: destination.secrets.privateKey! } }
    : {};
  const pubsub = new sdk.PubSub({
    projectId,
    ...(destination.endpoint ? { apiEndpoint: destination.endpoint } : {}),
    ...(destination.emulator ? { emulatorMode: true } : {}),
    ...credentials,
  });
  // On the emulator there are no credentials to find: naming the universe spares google-auth its
  // probe of the GCE metadata server (shared/queue/pubsub.ts does the same).
  if (pubsub.isEmulator) pubsub.options.universeDomain ??= "googleapis.com";
  const topic = pubsub.topic(topicId!, { messageOrdering: true, batching: { maxMessages: 100, maxMilliseconds: BATCH_MS } });
  return {
    async send(message) {
      try {
        await topic.publishMessage({
          data: Buffer.from(message.body, "utf8"),
          attributes: message.attributes,
          ...(message.orderingKey !== null ? { orderingKey: message.orderingKey } : {}),
        });
      } catch (error) {
        if (message.orderingKey !== null) topic.resumePublishing(message.orderingKey);
        throw error;
      }
    },
    classify: classifyGrpcError,
    async close() {
      await topic.flush().catch(() => {});
      await pubsub.close();
    },
  };
}
