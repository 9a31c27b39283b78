/**
 * What the GCP functions share, built once per instance: settings (Secret Manager secrets arrive
 * as environment variables, mounted by the stack), a small pg pool, the Pub/Sub topics and the
 * Cloud Storage claim-check store. Both speak Google's REST APIs (`node:http`, a token from the
 * metadata server): no Google client library is bundled or installed, only the Functions
 * Framework.
 *
 * The database: `DATABASE_URL` is the application role's (webhooks_app), opened over the TLS mode
 * the stack sets (`verify-ca` against the Cloud SQL instance's server CA, whose certificate names
 * the instance and not the private IP) and never migrated here; `DATABASE_ADMIN_URL`, the
 * owner's, is mounted on the migrate function only (`ownerDatabase`).
 */
import * as z from "zod/mini";
import { loadConfig } from "../../shared/config.js";
import { databaseTlsShape, openCloudDatabase } from "../../shared/cloud/database.js";
import type { Database } from "../../shared/db/port.js";
import { parsePartners, type PartnerConfig } from "../../shared/inbound/verify/index.js";
import { createGcsStore } from "../../shared/objectStore/gcs.js";
import type { ObjectStore } from "../../shared/objectStore/port.js";
import { createPubSubPublisher, type PubSubPublisher } from "../../shared/queue/pubsubPublisher.js";
import { metadataAccessToken } from "../../shared/cloud/googleAccessToken.js";
import { once } from "../../shared/cloud/once.js";
import { FunctionConfigError, poolSize, readSettings } from "../../shared/cloud/settings.js";
import { createLogger, type Logger } from "../../shared/telemetry/log.js";

const shape = {
  GOOGLE_CLOUD_PROJECT: z.string().check(z.minLength(1)),
  WEBHOOKS_TOPIC: z.string().check(z.minLength(1)),
  PARTNERS: z.optional(z.string().check(z.minLength(2))),
  DATABASE_URL: z.optional(z.string().check(z.minLength(1))),
  /** The owner's URL: the migrate function only. */
  DATABASE_ADMIN_URL: z.optional(z.string().check(z.minLength(1))),
  ...databaseTlsShape,
  /** The processor publishes a message it gives up on here, with a `deadLetterReason`. */
  WEBHOOKS_DEAD_LETTER_TOPIC: z.optional(z.string().check(z.minLength(1))),
  /** The subscription's max delivery attempts: on the last one a failure is dead-lettered with its reason. */
  WEBHOOKS_MAX_DELIVERY_ATTEMPTS: z.optional(z.coerce.number().check(z.int(), z.gte(5), z.lte(100))),
  WEBHOOKS_CLAIM_CHECK_BUCKET: z.optional(z.string().check(z.minLength(3))),
  /** A Cloud Storage JSON API root other than Google's (a local test peer); requests to it carry no token. */
  WEBHOOKS_STORAGE_API_ENDPOINT: z.optional(z.url()),
  /** host:port of the Pub/Sub emulator (tests, local runs): publishes go there, unauthenticated. */
  PUBSUB_EMULATOR_HOST: z.optional(z.string().check(z.minLength(3))),
  WEBHOOKS_DB_POOL_MAX: poolSize,
  /** Seconds the relay may run (its timeout minus a margin). Default: 240. */
  WEBHOOKS_RELAY_BUDGET_SECONDS: z._default(z.coerce.number().check(z.int(), z.gte(10), z.lte(3600)), 240),
};

export type GcpSettings = ReturnType<typeof readGcpSettings>;
export function readGcpSettings(env: Record<string, string | undefined> = process.env) {
  return readSettings(shape, env, "GCP");
}

export interface GcpRuntime {
  settings: GcpSettings;
  logger: Logger;
  tuning: ReturnType<typeof loadConfig>;
  partners(): Promise<ReadonlyMap<string, PartnerConfig>>;
  database(): Promise<Database>;
  /** A new pool as the owner (migrate only); the caller closes it. */
  ownerDatabase(): Promise<Database>;
  topic(): Promise<PubSubPublisher>;
  /** The dead-letter topic, or undefined when WEBHOOKS_DEAD_LETTER_TOPIC is not set. */
  deadLetterTopic(): Promise<PubSubPublisher | undefined>;
  objectStore(): Promise<ObjectStore | undefined>;
}

export function createGcpRuntime(env: Record<string, string | undefined> = process.env): GcpRuntime {
  const settings = readGcpSettings(env);
  const tuning = loadConfig(env);
  // One token for Pub/Sub and Cloud Storage, fetched on first use (not used with the emulator or a test endpoint).
  const accessToken = metadataAccessToken();
  const tls = { tls: settings.WEBHOOKS_DATABASE_TLS, caPem: settings.WEBHOOKS_DATABASE_CA_CERT };
  const publisher = (topic: string) =>
    createPubSubPublisher({ projectId: settings.GOOGLE_CLOUD_PROJECT, topic, emulatorHost: settings.PUBSUB_EMULATOR_HOST ?? "", accessToken });
  return {
    settings,
    logger: createLogger({ name: "webhooks-gcp", level: tuning.LOG_LEVEL }),
    tuning,
    partners: once(async () => {
      if (!settings.PARTNERS) throw new Error("Set PARTNERS (a Secret Manager secret mounted as an environment variable).");
      return parsePartners(settings.PARTNERS);
    }),
    database: once(async () => {
      if (!settings.DATABASE_URL) throw new Error("Set DATABASE_URL (a Secret Manager secret mounted as an environment variable).");
      return openCloudDatabase({ url: settings.DATABASE_URL, ...tls, poolMax: settings.WEBHOOKS_DB_POOL_MAX });
    }),
    async ownerDatabase() {
      if (!settings.DATABASE_ADMIN_URL) throw new FunctionConfigError("Set DATABASE_ADMIN_URL (the owner's URL, a Secret Manager secret the stack mounts on the migrate function).");
      return openCloudDatabase({ url: settings.DATABASE_ADMIN_URL, ...tls, poolMax: 1, checkSchema: false });
    },
    // Ingest publishes (REST); the subscriptions belong to the push processor and the DLQ reader.
    topic: once(async () => publisher(settings.WEBHOOKS_TOPIC)),
    deadLetterTopic: once(async () => (settings.WEBHOOKS_DEAD_LETTER_TOPIC ? publisher(settings.WEBHOOKS_DEAD_LETTER_TOPIC) : undefined)),
    objectStore: once(async () => {
      if (!settings.WEBHOOKS_CLAIM_CHECK_BUCKET) return undefined;
      const endpoint = settings.WEBHOOKS_STORAGE_API_ENDPOINT;
      return createGcsStore({ bucket: settings.WEBHOOKS_CLAIM_CHECK_BUCKET, ...(endpoint ? { apiEndpoint: endpoint } : { accessToken }) });
    }),
  };
}

let shared: GcpRuntime | undefined;
export function gcpRuntime(): GcpRuntime {
  shared ??= createGcpRuntime();
  return shared;
}
