/**
 * What the GCP functions share, built once per instance: settings (Secret Manager secrets arrive
 * as environment variables, mounted by the stack), a small pg pool, the Pub/Sub topics and the
 * Cloud Storage claim-check store. Those two are the official clients (`@google-cloud/pubsub`,
 * `@google-cloud/storage`, each authenticated by its google-auth-library with the service
 * account's token from the metadata server), opened by the `GcpConnectors` a registration module
 * passes in (functions/gcp/claimChecks.ts: ingest and the processor; connections.ts: the
 * management function's wake-up topic) and loaded on first use: a publish, a claim-check. Only
 * the Functions Framework is installed by the buildpack.
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
import type { ObjectStore } from "../../shared/objectStore/port.js";
import type { PubSubPublisher } from "../../shared/queue/pubsubPublisher.js";
import { once } from "../../shared/cloud/once.js";
import { FunctionConfigError, managementBasePath, poolSize, readSettings, relayMode } from "../../shared/cloud/settings.js";
import { createLogger, type Logger } from "../../shared/telemetry/log.js";
import { installEncryptionKeys } from "../../shared/cloud/encryptionKeys.js";
import type { Keyring } from "../../shared/crypto/keyring.js";

const shape = {
  GOOGLE_CLOUD_PROJECT: z.string().check(z.minLength(1)),
  /** The inbound topic, which ingest publishes to; the relay and migrate need none. */
  WEBHOOKS_TOPIC: z.optional(z.string().check(z.minLength(1))),
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
  /** Seconds a publish may take, the client's retries included, before ingest answers 503. Default: 10. */
  WEBHOOKS_PUBLISH_TIMEOUT_SECONDS: z._default(z.coerce.number().check(z.gte(1), z.lte(60)), 10),
  WEBHOOKS_DB_POOL_MAX: poolSize,
  /** Seconds the relay may run (its timeout minus a margin). Default: 240. */
  WEBHOOKS_RELAY_BUDGET_SECONDS: z._default(z.coerce.number().check(z.int(), z.gte(10), z.lte(3600)), 240),
  /** Where the gateway mounts the management API (e.g. `/api`, kept in the path); absent: at the root. */
  WEBHOOKS_MANAGEMENT_BASE_PATH: z.optional(managementBasePath),
  /** The relay's mode (stack key `relayMode`): `listening` (default) or `scheduled`. */
  WEBHOOKS_RELAY_MODE: relayMode,
  /** Scheduled mode, the management function: the Pub/Sub topic it publishes the relay's wake-up to (pushed to the relay). */
  WEBHOOKS_RELAY_WAKE_TOPIC: z.optional(z.string().check(z.regex(/^[A-Za-z][A-Za-z0-9._~%+-]{2,254}$/, "a Pub/Sub topic id"))),
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
  /** The application's pool; installs the encryption keys first. */
  database(): Promise<Database>;
  /** Installs the keys of secrets at rest from env ENCRYPTION_KEYS (a Secret Manager secret, docs/secrets.md); undefined when unset. */
  encryptionKeys(): Promise<Keyring | undefined>;
  /** A new pool as the owner (migrate only); the caller closes it. */
  ownerDatabase(): Promise<Database>;
  topic(): Promise<PubSubPublisher>;
  /** The dead-letter topic, or undefined when WEBHOOKS_DEAD_LETTER_TOPIC is not set. */
  deadLetterTopic(): Promise<PubSubPublisher | undefined>;
  objectStore(): Promise<ObjectStore | undefined>;
  /** The management API's admin token: env ADMIN_TOKEN, a Secret Manager secret the stack mounts; undefined when unset. */
  adminToken(): Promise<string | undefined>;
}

/** How a function opens the clients it uses; the relay and migrate pass neither. Read at first use. */
export interface GcpConnectors {
  topic?: (settings: GcpSettings, topic: string) => Promise<PubSubPublisher>;
  objectStore?: (settings: GcpSettings) => Promise<ObjectStore | undefined>;
}

export function createGcpRuntime(env: Record<string, string | undefined> = process.env, connectors: GcpConnectors = {}): GcpRuntime {
  const settings = readGcpSettings(env);
  const tuning = loadConfig(env);
  const tls = { tls: settings.WEBHOOKS_DATABASE_TLS, caPem: settings.WEBHOOKS_DATABASE_CA_CERT };
  const publisher = (topic: string) => {
    if (!connectors.topic) throw new Error("This function was built without a Pub/Sub client; it cannot publish.");
    return connectors.topic(settings, topic);
  };
  const encryptionKeys = async () => installEncryptionKeys(env.ENCRYPTION_KEYS, "ENCRYPTION_KEYS");
  // Whatever uses the database may read or write a subscription's secrets: the keys come first.
  const withKeys = <T>(open: () => Promise<T>) => async () => { await encryptionKeys(); return open(); };
  return {
    encryptionKeys,
    settings,
    logger: createLogger({ name: "webhooks-gcp", level: tuning.LOG_LEVEL }),
    tuning,
    partners: once(async () => {
      if (!settings.PARTNERS) throw new Error("Set PARTNERS (a Secret Manager secret mounted as an environment variable).");
      return parsePartners(settings.PARTNERS);
    }),
    database: withKeys(once(async () => {
      if (!settings.DATABASE_URL) throw new Error("Set DATABASE_URL (a Secret Manager secret mounted as an environment variable).");
      return openCloudDatabase({ url: settings.DATABASE_URL, ...tls, poolMax: settings.WEBHOOKS_DB_POOL_MAX });
    })),
    async ownerDatabase() {
      if (!settings.DATABASE_ADMIN_URL) throw new FunctionConfigError("Set DATABASE_ADMIN_URL (the owner's URL, a Secret Manager secret the stack mounts on the migrate function).");
      return openCloudDatabase({ url: settings.DATABASE_ADMIN_URL, ...tls, poolMax: 1, checkSchema: false });
    },
    // Ingest publishes; the subscriptions belong to the push processor and the DLQ reader.
    topic: once(async () => {
      if (!settings.WEBHOOKS_TOPIC) throw new FunctionConfigError("Set WEBHOOKS_TOPIC (the inbound Pub/Sub topic ingest publishes to; the stack sets it).");
      return publisher(settings.WEBHOOKS_TOPIC);
    }),
    deadLetterTopic: once(async () => (settings.WEBHOOKS_DEAD_LETTER_TOPIC ? publisher(settings.WEBHOOKS_DEAD_LETTER_TOPIC) : undefined)),
    objectStore: once(async () => (connectors.objectStore ? connectors.objectStore(settings) : undefined)),
    adminToken: async () => (env.ADMIN_TOKEN?.trim() ? env.ADMIN_TOKEN : undefined),
  };
}

let shared: GcpRuntime | undefined;
const sharedConnectors: GcpConnectors = {};
/**
 * The instance's runtime, made on first use. A deployed bundle registers one function, so the
 * connectors are that function's; several registrations in one process (the in-process tests)
 * share one runtime with the union of their connectors.
 */
export function gcpRuntime(connectors: GcpConnectors = {}): GcpRuntime {
  Object.assign(sharedConnectors, connectors);
  shared ??= createGcpRuntime(process.env, sharedConnectors);
  return shared;
}
