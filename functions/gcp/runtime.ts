/**
 * What the GCP functions share, built once per instance: settings (Secret Manager secrets arrive
 * as environment variables, mounted by the stack), a small pg pool, the Pub/Sub topic and the
 * Cloud Storage claim-check store.
 */
import { z } from "zod";
import { loadConfig } from "../../shared/config.js";
import { migrate } from "../../shared/db/migrate.js";
import { openPostgres } from "../../shared/db/postgres.js";
import type { Database } from "../../shared/db/port.js";
import { parsePartners, type PartnerConfig } from "../../shared/inbound/verify/index.js";
import type { ObjectStore } from "../../shared/objectStore/port.js";
import type { QueueAdapter } from "../../shared/queue/port.js";
import { once } from "../../shared/cloud/once.js";
import { poolSize, readSettings } from "../../shared/cloud/settings.js";
import { createLogger, type Logger } from "../../shared/telemetry/log.js";

const shape = {
  GOOGLE_CLOUD_PROJECT: z.string().min(1),
  WEBHOOKS_TOPIC: z.string().min(1),
  PARTNERS: z.string().min(2).optional(),
  DATABASE_URL: z.string().min(1).optional(),
  WEBHOOKS_CLAIM_CHECK_BUCKET: z.string().min(3).optional(),
  /**
   * A Cloud Storage JSON API endpoint other than Google's (a local test peer). Not
   * STORAGE_EMULATOR_HOST: the client library reads that itself as a full base URL.
   */
  WEBHOOKS_STORAGE_API_ENDPOINT: z.string().url().optional(),
  WEBHOOKS_DB_POOL_MAX: poolSize,
  /** Seconds the relay may run (its timeout minus a margin). Default: 240. */
  WEBHOOKS_RELAY_BUDGET_SECONDS: z.coerce.number().int().min(10).max(3600).default(240),
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
  topic(): Promise<Pick<QueueAdapter, "send" | "limits">>;
  objectStore(): Promise<ObjectStore | undefined>;
}

export function createGcpRuntime(env: Record<string, string | undefined> = process.env): GcpRuntime {
  const settings = readGcpSettings(env);
  const tuning = loadConfig(env);
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
      const db = openPostgres({ connectionString: settings.DATABASE_URL, max: settings.WEBHOOKS_DB_POOL_MAX });
      await migrate(db);
      return db;
    }),
    topic: once(async () => {
      const { createPubSubQueue } = await import("../../shared/queue/pubsub.js");
      // Ingest only publishes; the subscriptions belong to the push processor and the DLQ reader.
      return createPubSubQueue({ projectId: settings.GOOGLE_CLOUD_PROJECT, topic: settings.WEBHOOKS_TOPIC, subscription: "-", deadLetterTopic: "-", deadLetterSubscription: "-" });
    }),
    objectStore: once(async () => {
      if (!settings.WEBHOOKS_CLAIM_CHECK_BUCKET) return undefined;
      const { createGcsStore } = await import("../../shared/objectStore/gcs.js");
      return createGcsStore({ bucket: settings.WEBHOOKS_CLAIM_CHECK_BUCKET, apiEndpoint: settings.WEBHOOKS_STORAGE_API_ENDPOINT });
    }),
  };
}

let shared: GcpRuntime | undefined;
export function gcpRuntime(): GcpRuntime {
  shared ??= createGcpRuntime();
  return shared;
}
