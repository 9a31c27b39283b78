/**
 * The Service Bus queue and the managed identity the ingest, processor and management functions
 * use, passed to `azureRuntime` by their registration modules (the relay passes none, so its
 * bundle carries no Service Bus or Blob code; the Blob claim checks are in claimChecks.ts).
 * With managed identity both authenticate through `@azure/identity`'s `ManagedIdentityCredential`
 * (on Functions: the platform's identity endpoint, `IDENTITY_ENDPOINT` + `IDENTITY_HEADER`, through
 * MSAL); the SDKs and the credential load on first use, each as its own chunk.
 */
import type { TokenCredential } from "@azure/core-auth";
import { FunctionConfigError } from "../../shared/cloud/settings.js";
import type { QueueAdapter } from "../../shared/queue/port.js";
import type { AzureSettings } from "./runtime.js";

/** The Service Bus queue: a connection string (the test peer), or the namespace with the managed identity. */
export async function openServiceBusQueue(settings: AzureSettings, queueName = settings.WEBHOOKS_QUEUE_NAME): Promise<QueueAdapter> {
  const { createServiceBusQueue } = await import("../../shared/queue/serviceBus.js");
  if (!queueName) throw new FunctionConfigError("Set WEBHOOKS_QUEUE_NAME (the inbound Service Bus queue).");
  if (settings.ServiceBusConnection) return createServiceBusQueue({ connectionString: settings.ServiceBusConnection, queueName });
  if (!settings.ServiceBusConnection__fullyQualifiedNamespace) throw new Error("Set ServiceBusConnection__fullyQualifiedNamespace (or ServiceBusConnection).");
  return createServiceBusQueue({
    fullyQualifiedNamespace: settings.ServiceBusConnection__fullyQualifiedNamespace,
    credential: await managedIdentity(settings.ServiceBusConnection__clientId),
    queueName,
  });
}

/**
 * The app's user-assigned identity (its client id), or the system-assigned one without an id. One
 * credential per client id per instance: MSAL caches its tokens, so Service Bus and Blob Storage
 * share that cache when they use the same identity.
 */
const credentials = new Map<string, Promise<TokenCredential>>();
export async function managedIdentity(clientId: string | undefined): Promise<TokenCredential> {
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
