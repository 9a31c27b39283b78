/**
 * The clients the ingest and processor functions open, passed to `azureRuntime` by their
 * registration modules (the relay passes none, so its bundle carries no Service Bus or Blob code).
 * With managed identity both authenticate through our `ManagedIdentityCredential` (the platform's
 * identity endpoint), not `@azure/identity`; the clients load on first use.
 */
import { ManagedIdentityCredential } from "../../shared/cloud/azureManagedIdentity.js";
import { FunctionConfigError } from "../../shared/cloud/settings.js";
import type { ObjectStore } from "../../shared/objectStore/port.js";
import type { QueueAdapter } from "../../shared/queue/port.js";
import type { AzureConnectors, AzureSettings } from "./runtime.js";

/** The Service Bus queue: a connection string (the test peer), or the namespace with the managed identity. */
export async function openServiceBusQueue(settings: AzureSettings): Promise<QueueAdapter> {
  const { createServiceBusQueue } = await import("../../shared/queue/serviceBus.js");
  const queueName = settings.WEBHOOKS_QUEUE_NAME;
  if (!queueName) throw new FunctionConfigError("Set WEBHOOKS_QUEUE_NAME (the inbound Service Bus queue).");
  if (settings.ServiceBusConnection) return createServiceBusQueue({ connectionString: settings.ServiceBusConnection, queueName });
  if (!settings.ServiceBusConnection__fullyQualifiedNamespace) throw new Error("Set ServiceBusConnection__fullyQualifiedNamespace (or ServiceBusConnection).");
  return createServiceBusQueue({
    fullyQualifiedNamespace: settings.ServiceBusConnection__fullyQualifiedNamespace,
    credential: new ManagedIdentityCredential({ clientId: settings.ServiceBusConnection__clientId, clientIdSetting: "ServiceBusConnection__clientId" }),
    queueName,
  });
}

/** The Blob claim-check store, if one is configured: a connection string, or the account URL with the managed identity. */
export async function openBlobClaimChecks(settings: AzureSettings): Promise<ObjectStore | undefined> {
  if (!settings.WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL && !settings.WEBHOOKS_CLAIM_CHECK_CONNECTION) return undefined;
  const { createAzureBlobStore } = await import("../../shared/objectStore/azureBlob.js");
  if (settings.WEBHOOKS_CLAIM_CHECK_CONNECTION) {
    return createAzureBlobStore({ container: settings.WEBHOOKS_CLAIM_CHECK_CONTAINER, connectionString: settings.WEBHOOKS_CLAIM_CHECK_CONNECTION });
  }
  const clientId = settings.AZURE_CLIENT_ID ?? settings.ServiceBusConnection__clientId;
  return createAzureBlobStore({
    container: settings.WEBHOOKS_CLAIM_CHECK_CONTAINER,
    accountUrl: settings.WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL,
    credential: new ManagedIdentityCredential({ clientId, clientIdSetting: settings.AZURE_CLIENT_ID ? "AZURE_CLIENT_ID" : "ServiceBusConnection__clientId" }),
  });
}

/** What ingest and the processor use: the queue (the processor schedules deferral copies on it) and the claim-check store. */
export const queueAndClaimChecks: AzureConnectors = { queue: openServiceBusQueue, objectStore: openBlobClaimChecks };
