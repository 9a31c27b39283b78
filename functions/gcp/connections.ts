/**
 * The clients the GCP ingest and processor functions open, passed to `gcpRuntime` by their
 * registration modules: the Pub/Sub topics (`@google-cloud/pubsub`: ingest publishes, the
 * processor publishes its dead letters) and the Cloud Storage claim-check store
 * (`@google-cloud/storage`). The relay and migrate pass none, so their bundles carry neither
 * client (esbuild makes a chunk of every dynamic import a bundle reaches, called or not).
 * Each client loads on first use.
 */
import type { ObjectStore } from "../../shared/objectStore/port.js";
import type { PubSubPublisher } from "../../shared/queue/pubsubPublisher.js";
import type { GcpConnectors, GcpSettings } from "./runtime.js";

/** A publisher on `topic` (the emulator with PUBSUB_EMULATOR_HOST); the SDK loads at its first send. */
export async function pubsubTopic(settings: GcpSettings, topic: string): Promise<PubSubPublisher> {
  const { createPubSubPublisher } = await import("../../shared/queue/pubsubPublisher.js");
  return createPubSubPublisher({
    projectId: settings.GOOGLE_CLOUD_PROJECT, topic, emulatorHost: settings.PUBSUB_EMULATOR_HOST,
    timeoutMs: settings.WEBHOOKS_PUBLISH_TIMEOUT_SECONDS * 1000,
  });
}

/** Undefined without `WEBHOOKS_CLAIM_CHECK_BUCKET`: payloads over the topic's limit are then refused (413). */
export async function gcsClaimChecks(settings: GcpSettings): Promise<ObjectStore | undefined> {
  if (!settings.WEBHOOKS_CLAIM_CHECK_BUCKET) return undefined;
  const { createGcsStore } = await import("../../shared/objectStore/gcs.js");
  const endpoint = settings.WEBHOOKS_STORAGE_API_ENDPOINT;
  return createGcsStore({ bucket: settings.WEBHOOKS_CLAIM_CHECK_BUCKET, ...(endpoint ? { apiEndpoint: endpoint } : {}) });
}

/** What ingest and the processor use. */
export const topicAndClaimChecks: GcpConnectors = { topic: pubsubTopic, objectStore: gcsClaimChecks };
