/**
 * Service Bus destinations (a queue or a topic): one send per attempt, the attempts that reach the
 * client together as one message batch (coalesce.ts), except an ordered subscription's, each sent
 * alone (a batch goes to one session and partition). The envelope is the body,
 * as bytes (an AMQP data section, exactly what was signed; JavaScript consumers receive it with
 * `skipParsingBodyAsJson: true`), the Standard Webhooks headers are application properties,
 * `messageId` is the delivery id (an entity with duplicate detection drops a repeat within its
 * window), `contentType` application/json, and an ordered subscription's ordering key is the
 * `sessionId` (a session-enabled entity keeps each key's messages in order). Sent with the
 * connection string's key when given, else the relay's Entra ID identity (DefaultAzureCredential:
 * a managed identity in Azure, AZURE_CLIENT_ID for a user-assigned one). The only module that
 * loads @azure/service-bus for destinations, on the first Service Bus destination.
 */
import type { OpenDestination } from "./config.js";
import { classifyServiceBusError } from "./classify.js";
import { boundedId, type DestinationClient, type DestinationMessage, type SendFailure } from "./message.js";

/** Most messages the senders group for one send (the SDK's batch then splits them by its size limit). */
const MAX_BATCH_MESSAGES = 100;
/** Most body bytes grouped for one send: a standard namespace takes 256 KiB per batch. */
const MAX_BATCH_BYTES = 256 * 1024;

export async function openServiceBus(destination: OpenDestination & { kind: "servicebus" }): Promise<DestinationClient & { classify(error: unknown): SendFailure }> {
  const sdk = await import("@azure/service-bus");
  const connectionString = destination.secrets.connectionString;
  const client = connectionString
    ? new sdk.ServiceBusClient(connectionString)
    : new sdk.ServiceBusClient(destination.namespace, new (await import("@azure/identity")).DefaultAzureCredential());
  const sender = client.createSender((destination.queue ?? destination.topic)!);
  const toMessage = (message: DestinationMessage) => ({
    body: Buffer.from(message.body, "utf8"),
    contentType: "application/json",
    messageId: boundedId(message.webhookId),
    ...(message.orderingKey !== null ? { sessionId: boundedId(message.orderingKey) } : {}),
    applicationProperties: message.attributes,
  });
  return {
    async send(message, signal) {
      await sender.sendMessages(toMessage(message), { abortSignal: signal });
    },
    async sendBatch(messages, signal) {
      // As many as fit in one batch (the link's size limit, which the SDK knows), then the next.
      const results: (SendFailure | null)[] = [];
      let next = 0;
      while (next < messages.length) {
        const from = next;
        try {
          const batch = await sender.createMessageBatch({ abortSignal: signal });
          while (next < messages.length && batch.tryAddMessage(toMessage(messages[next]!))) next += 1;
          if (next === from) {
            // Too large even alone: sent alone, it fails as a lone send does (MessageSizeExceeded).
            next += 1;
            await sender.sendMessages(toMessage(messages[from]!), { abortSignal: signal });
          } else {
            await sender.sendMessages(batch, { abortSignal: signal });
          }
          for (let i = from; i < next; i++) results.push(null);
        } catch (error) {
          // No batch could be made (the link is down, the deadline passed): that is every remaining message's failure.
          if (next === from) next = messages.length;
          const failure = classifyServiceBusError(error);
          for (let i = from; i < next; i++) results.push(failure);
        }
      }
      return results;
    },
    batch: {
      maxMessages: MAX_BATCH_MESSAGES,
      maxBytes: MAX_BATCH_BYTES,
      sizeOf: (message) => Buffer.byteLength(message.body),
      // A batch goes to one partition and one session: a session's messages are sent alone.
      shares: (message) => message.orderingKey === null,
    },
    classify: classifyServiceBusError,
    async close() {
      await sender.close().catch(() => {});
      await client.close();
    },
  };
}
