/**
 * The Pub/Sub topics the GCP ingest, processor and management functions publish on
 * (`@google-cloud/pubsub`: ingest publishes, the processor its dead letters, management the
 * relay's wake-ups in scheduled mode), passed to `gcpRuntime` by their registration modules. The
 * relay and migrate pass none, so their bundles carry no client (esbuild makes a chunk of every
 * dynamic import a bundle reaches, called or not). The Cloud Storage claim checks are in
 * claimChecks.ts, so that the management bundle carries no storage code. Each client loads on
 * first use.
 */
import type { PubSubPublisher } from "../../shared/queue/pubsubPublisher.js";
import type { GcpSettings } from "./runtime.js";

/** A publisher on `topic` (the emulator with PUBSUB_EMULATOR_HOST); the SDK loads at its first send. */
export async function pubsubTopic(settings: GcpSettings, topic: string): Promise<PubSubPublisher> {
  const { createPubSubPublisher } = await import("../../shared/queue/pubsubPublisher.js");
  return createPubSubPublisher({
    projectId: settings.GOOGLE_CLOUD_PROJECT, topic, emulatorHost: settings.PUBSUB_EMULATOR_HOST,
    timeoutMs: settings.WEBHOOKS_PUBLISH_TIMEOUT_SECONDS * 1000,
  });
}
