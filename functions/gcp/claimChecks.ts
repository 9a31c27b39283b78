/**
 * The Cloud Storage claim-check store (`@google-cloud/storage`) ingest and the processor open, in
 * a module of its own so that the management function, which publishes only the relay's wake-ups
 * (connections.ts), carries no storage code (test/functions/bundles.test.ts).
 */
import type { ObjectStore } from "../../shared/objectStore/port.js";
import { pubsubTopic } from "./connections.js";
import type { GcpConnectors, GcpSettings } from "./runtime.js";

/** Undefined without `WEBHOOKS_CLAIM_CHECK_BUCKET`: payloads over the topic's limit are then refused (413). */
export async function gcsClaimChecks(settings: GcpSettings): Promise<ObjectStore | undefined> {
  if (!settings.WEBHOOKS_CLAIM_CHECK_BUCKET) return undefined;
  const { createGcsStore } = await import("../../shared/objectStore/gcs.js");
  const endpoint = settings.WEBHOOKS_STORAGE_API_ENDPOINT;
  return createGcsStore({ bucket: settings.WEBHOOKS_CLAIM_CHECK_BUCKET, ...(endpoint ? { apiEndpoint: endpoint } : {}) });
}

/** What ingest and the processor use. */
export const topicAndClaimChecks: GcpConnectors = { topic: pubsubTopic, objectStore: gcsClaimChecks };
