/**
 * Service Bus destinations (a queue or a topic): one send per attempt. The envelope is the body,
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
import { boundedId, type DestinationClient, type SendFailure } from "./message.js";

export async function openServiceBus(destination: OpenDestination & { kind: "servicebus" }): Promise<DestinationClient & { classify(error: unknown): SendFailure }> {
  const sdk = await import("@azure/service-bus");
  const connectionString = destination.secrets.connectionString;
  const client = connectionString
    ? new sdk.ServiceBusClient(connectionString)
    : new sdk.ServiceBusClient(destination.namespace, new (await import("@azure/identity")).DefaultAzureCredential());
  const sender = client.createSender((destination.queue ?? destination.topic)!);
  return {
    async send(message, signal) {
      await sender.sendMessages({
        body: Buffer.from(message.body, "utf8"),
        contentType: "application/json",
        messageId: boundedId(message.webhookId),
        ...(message.orderingKey !== null ? { sessionId: boundedId(message.orderingKey) } : {}),
        applicationProperties: message.attributes,
      }, { abortSignal: signal });
    },
    classify: classifyServiceBusError,
    async close() {
      await sender.close().catch(() => {});
      await client.close();
    },
  };
}
