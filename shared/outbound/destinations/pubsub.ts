/**
 * Pub/Sub destinations: one published message per attempt, the envelope as its data (bytes, as
 * signed), the Standard Webhooks headers as attributes, and an ordered subscription's ordering key
 * as the message's `orderingKey` (a subscription with message ordering enabled gets each key's
 * messages in order). Pub/Sub has no publish-side de-duplication id: consumers de-duplicate on
 * the webhook-id attribute (an exactly-once subscription de-duplicates its own redeliveries).
 * The attempts that reach the client together (coalesce.ts) are published and flushed at once, in
 * the library's requests; a lone one waits up to BATCH_MS for company in the library. A
 * failed publish pauses its ordering key in the library; it is resumed at once, since the relay
 * sends that key's next message only after this one succeeded. The only module that loads
 * @google-cloud/pubsub for destinations, on the first Pub/Sub destination.
 */
import type { OpenDestination } from "./config.js";
import { classifyGrpcError } from "./classify.js";
import type { DestinationClient, DestinationMessage, SendFailure } from "./message.js";

/** How long the library gathers a lone publish with others into one request (ms). */
const BATCH_MS = 5;
/** Most messages and bytes in one of the library's requests, and so in one group of ours. */
const MAX_BATCH_MESSAGES = 100;
const MAX_BATCH_BYTES = 1024 * 1024;

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
  const topic = pubsub.topic(topicId!, { messageOrdering: true, batching: { maxMessages: MAX_BATCH_MESSAGES, maxBytes: MAX_BATCH_BYTES, maxMilliseconds: BATCH_MS } });
  const publish = async (message: DestinationMessage): Promise<void> => {
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
  };
  return {
    async send(message) {
      await publish(message);
    },
    async sendBatch(messages) {
      const outcomes = messages.map((m) => publish(m).then(() => null, (error: unknown) => classifyGrpcError(error)));
      // The group is complete: sent now rather than after the library's gathering window.
      void topic.flush().catch(() => {});
      return Promise.all(outcomes);
    },
    batch: { maxMessages: MAX_BATCH_MESSAGES, maxBytes: MAX_BATCH_BYTES, sizeOf: (message) => Buffer.byteLength(message.body) },
    classify: classifyGrpcError,
    async close() {
      await topic.flush().catch(() => {});
      await pubsub.close();
    },
  };
}
