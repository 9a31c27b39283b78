/**
 * The clients the ingest and processor functions open, passed to `azureRuntime` by their
 * registration modules (the relay passes none, so its bundle carries no Service Bus or Blob code).
 * With managed identity both authenticate through `@azure/identity`'s `ManagedIdentityCredential`
 * (on Functions: the platform's identity endpoint, `IDENTITY_ENDPOINT` + `IDENTITY_HEADER`, through
 * MSAL); the SDKs and the credential load on first use, each as its own chunk.
 */
import type { TokenCredential } from "@azure/core-auth";
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
    credential: await managedIdentity(settings.ServiceBusConnection__clientId),
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
  return createAzureBlobStore({
    container: settings.WEBHOOKS_CLAIM_CHECK_CONTAINER,
    accountUrl: settings.WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL,
    credential: await managedIdentity(settings.AZURE_CLIENT_ID ?? settings.ServiceBusConnection__clientId),
  });
}

/**
 * The app's user-assigned identity (its client id), or the system-assigned one without an id. One
 * credential per client id per instance: MSAL caches its tokens, so Service Bus and Blob Storage
 * share that cache when they use the same identity.
 */
const credentials = new Map<string, Promise<TokenCredential>>();
async function managedIdentity(clientId: string | undefined): Promise<TokenCredential> {
  // Without them the credential would try the VM metadata service, which Functions does not have,
  // and fail only at the first token, slowly and without naming what is missing.
  const missing = ["IDENTITY_ENDPOINT", "IDENTITY_HEADER"].filter((name) => !process.env[name]);
  if (missing.length > 0) throw new FunctionConfigError(`Managed identity: ${missing.join(" and ")} ${missing.length > 1 ? "are" : "is"} not set. The platform sets them in an app with an identity: assign the app its user-assigned identity (the stack does), or use a connection string.`);
  const key = clientId ?? "";
  let credential = credentials.get(key);
  if (!credential) {
    credential = import("./managedIdentity.js").then(({ ManagedIdentityCredential }) => (clientId ? new ManagedIdentityCredential({ clientId }) : new ManagedIdentityCredential()));
    credentials.set(key, credential);
  }
  return credential;
}

/** What ingest and the processor use: the queue (the processor schedules deferral copies on it) and the claim-check store. */
export const queueAndClaimChecks: AzureConnectors = { queue: openServiceBusQueue, objectStore: openBlobClaimChecks };
