/**
 * The Blob claim-check store ingest and the processor open, in a module of its own so that the
 * management function, which opens only the relay's wake-up queue (connections.ts), carries no
 * Blob code (test/functions/bundles.test.ts).
 */
import type { ObjectStore } from "../../shared/objectStore/port.js";
import { managedIdentity, openServiceBusQueue } from "./connections.js";
import type { AzureConnectors, AzureSettings } from "./runtime.js";

/** The Blob claim-check store, if one is configured: a connection string, or the account URL with the managed identity. */
export async function openBlobClaimChecks(settings: AzureSettings): Promise<ObjectStore | undefined> {
  if (!settings.WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL && !settings.WEBHOOKS_CLAIM_CHECK_CONNECTION) return undefined;
  const { createAzureBlobStore } = await import("../../shared/objectStore/azureBlob.js");
  if (settings.WEBHOOKS_CLAIM_CHECK_CONNECTION) {
    return createAzureBlobStore({ container: settings.WEBHOOKS_CLAIM_CHECK_CONTAINER, connectionString: settings.WEBHOOKS_CLAIM_CHECK_CONNECTION });
  }
  return createAzureBlobStore({
    container: settings.WEBHOOKS_CLAIM_CHECK_CONTAINER,
    accountUrl: settings.WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL,
    credential: await managedIdentity(settings.AZURE_CLIENT_ID ?? settings.ServiceBusConnection__clientId),
  });
}

/** What ingest and the processor use: the queue (the processor schedules deferral copies on it) and the claim-check store. */
export const queueAndClaimChecks: AzureConnectors = { queue: openServiceBusQueue, objectStore: openBlobClaimChecks };
