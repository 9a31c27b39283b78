/**
 * What the Azure functions share, built once per instance: settings (Key Vault references are
 * resolved into app settings by the platform before the code runs), a small pg pool as the
 * application role over explicit TLS (never running DDL: the migrate function does that), and,
 * for the functions that use them, the Service Bus queue and the Blob claim-check store. Those two
 * are `AzureConnectors` the registration module passes in (functions/azure/connections.ts): a
 * bundle carries only the clients its function can reach, so the relay carries neither.
 */
import * as z from "zod/mini";
import { loadConfig } from "../../shared/config.js";
import { databaseTlsShape, openCloudDatabase } from "../../shared/cloud/database.js";
import type { Database } from "../../shared/db/port.js";
import { parsePartners, type PartnerConfig } from "../../shared/inbound/verify/index.js";
import type { ObjectStore } from "../../shared/objectStore/port.js";
import type { QueueAdapter } from "../../shared/queue/port.js";
import { once } from "../../shared/cloud/once.js";
import { FunctionConfigError, managementBasePath, poolSize, readSettings, relayMode } from "../../shared/cloud/settings.js";
import { createLogger, type Logger } from "../../shared/telemetry/log.js";
import { installEncryptionKeys } from "../../shared/cloud/encryptionKeys.js";
import type { Keyring } from "../../shared/crypto/keyring.js";

const shape = {
  /** The inbound queue (ingest and processor; the relay and migrate apps have none). */
  WEBHOOKS_QUEUE_NAME: z.optional(z.string().check(z.minLength(1))),
  /** Managed-identity connection (local auth is off on the namespace)… */
  ServiceBusConnection__fullyQualifiedNamespace: z.optional(z.string().check(z.minLength(1))),
  ServiceBusConnection__clientId: z.optional(z.string().check(z.minLength(1))),
  /** …or a connection string (the test peer). */
  ServiceBusConnection: z.optional(z.string().check(z.minLength(1))),
  PARTNERS: z.optional(z.string().check(z.minLength(2))),
  /** The application role's URL (webhooks_app), without TLS parameters. */
  DATABASE_URL: z.optional(z.string().check(z.minLength(1))),
  /** The owner's URL: the migrate app's alone. */
  DATABASE_ADMIN_URL: z.optional(z.string().check(z.minLength(1))),
  ...databaseTlsShape,
  WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL: z.optional(z.url()),
  WEBHOOKS_CLAIM_CHECK_CONTAINER: z._default(z.string().check(z.minLength(3)), "claim-checks"),
  WEBHOOKS_CLAIM_CHECK_CONNECTION: z.optional(z.string().check(z.minLength(1))),
  /** The user-assigned managed identity for Blob Storage (the stack sets it); absent: ServiceBusConnection__clientId. */
  AZURE_CLIENT_ID: z.optional(z.string().check(z.minLength(1))),
  WEBHOOKS_DB_POOL_MAX: poolSize,
  /** Seconds the relay timer may run (the function timeout minus a margin). Default: 240. */
  WEBHOOKS_RELAY_BUDGET_SECONDS: z._default(z.coerce.number().check(z.int(), z.gte(10), z.lte(3600)), 240),
  /** Failures before the inbox: delayed retries of a message before it is dead-lettered. Default: 5. */
  WEBHOOKS_RETRY_MAX_ATTEMPTS: z._default(z.coerce.number().check(z.int(), z.gte(1), z.lte(100)), 5),
  /** The first retry's delay, seconds; each next one doubles, up to 15 minutes. Default: 30. */
  WEBHOOKS_RETRY_BASE_SECONDS: z._default(z.coerce.number().check(z.int(), z.gte(1), z.lte(900)), 30),
  /** Where the management API is mounted, the host's route prefix included (`/api`); absent: at the root. */
  WEBHOOKS_MANAGEMENT_BASE_PATH: z.optional(managementBasePath),
  /** The relay's mode (stack key `relayMode`): `listening` (default) or `scheduled`. */
  WEBHOOKS_RELAY_MODE: relayMode,
  /**
   * Scheduled mode: the Service Bus queue of the relay's wake-ups. The management app sends
   * `{"wake": true}` to it after a write that makes deliveries due; the relay app's `relayWake`
   * trigger runs a woken run.
   */
  WEBHOOKS_RELAY_WAKE_QUEUE: z.optional(z.string().check(z.minLength(1))),
};

/** Settings only the Functions host reads: the binding expressions of the timer triggers (`%…%`). */
const HOST_SETTINGS = new Set(["WEBHOOKS_RELAY_SCHEDULE", "WEBHOOKS_RELAY_OFFSET_SCHEDULE", "WEBHOOKS_MIGRATE_SCHEDULE"]);

export type AzureSettings = ReturnType<typeof readAzureSettings>;
/** The settings; a `WEBHOOKS_*` setting this code does not know (a stack and function disagreeing on a name) stops the cold start. */
export function readAzureSettings(env: Record<string, string | undefined> = process.env) {
  const unknown = Object.keys(env).filter((k) => k.startsWith("WEBHOOKS_") && !(k in shape) && !HOST_SETTINGS.has(k));
  if (unknown.length > 0) throw new FunctionConfigError(`The Azure function does not know ${unknown.join(", ")}: a stack and function disagreeing on a setting's name? (known: ${Object.keys(shape).filter((k) => k.startsWith("WEBHOOKS_")).join(", ")})`);
  return readSettings(shape, env, "Azure");
}

export interface AzureRuntime {
  settings: AzureSettings;
  logger: Logger;
  tuning: ReturnType<typeof loadConfig>;
  partners(): Promise<ReadonlyMap<string, PartnerConfig>>;
  /** The application's pool; installs the encryption keys first. */
  database(): Promise<Database>;
  /**
   * Installs the keys of secrets at rest from app setting ENCRYPTION_KEYS (a Key Vault reference,
   * docs/secrets.md); undefined when unset. Throws when the reference is unresolved.
   */
  encryptionKeys(): Promise<Keyring | undefined>;
  /** A new pool as the owner (DATABASE_ADMIN_URL), for the migrate step; the caller closes it. */
  ownerDatabase(): Promise<Database>;
  queue(): Promise<QueueAdapter>;
  objectStore(): Promise<ObjectStore | undefined>;
  /**
   * The management API's admin token: app setting ADMIN_TOKEN, a Key Vault reference the platform
   * resolves before the code runs; undefined when unset. Throws when the reference is unresolved.
   */
  adminToken(): Promise<string | undefined>;
}

/** How a function opens the clients it uses; a function that never sends passes neither. */
export interface AzureConnectors {
  queue?: (settings: AzureSettings) => Promise<QueueAdapter>;
  objectStore?: (settings: AzureSettings) => Promise<ObjectStore | undefined>;
}

export function createAzureRuntime(env: Record<string, string | undefined> = process.env, connectors: AzureConnectors = {}): AzureRuntime {
  const settings = readAzureSettings(env);
  const tuning = loadConfig(env);
  const tls = { tls: settings.WEBHOOKS_DATABASE_TLS, caPem: settings.WEBHOOKS_DATABASE_CA_CERT };
  const encryptionKeys = async () => installEncryptionKeys(keyVaultValue("ENCRYPTION_KEYS", env.ENCRYPTION_KEYS), "app setting ENCRYPTION_KEYS");
  // Whatever uses the database may read or write a subscription's secrets: the keys come first.
  const withKeys = <T>(open: () => Promise<T>) => async () => { await encryptionKeys(); return open(); };
  return {
    encryptionKeys,
    settings,
    logger: createLogger({ name: "webhooks-azure", level: tuning.LOG_LEVEL }),
    tuning,
    partners: once(async () => {
      if (!settings.PARTNERS) throw new Error("Set PARTNERS (a Key Vault reference to the partners JSON).");
      return parsePartners(settings.PARTNERS);
    }),
    database: withKeys(once(async () => {
      if (!settings.DATABASE_URL) throw new FunctionConfigError("Set DATABASE_URL (a Key Vault reference to the database-url secret).");
      return openCloudDatabase({ url: settings.DATABASE_URL, ...tls, poolMax: settings.WEBHOOKS_DB_POOL_MAX });
    })),
    ownerDatabase: async () => {
      if (!settings.DATABASE_ADMIN_URL) throw new FunctionConfigError("Set DATABASE_ADMIN_URL (a Key Vault reference to the database-admin-url secret; the migrate app only).");
      return openCloudDatabase({ url: settings.DATABASE_ADMIN_URL, ...tls, poolMax: 1, checkSchema: false });
    },
    queue: once(async () => {
      if (!connectors.queue) throw new Error("This function was built without a Service Bus client; it cannot send.");
      return connectors.queue(settings);
    }),
    objectStore: once(async () => (connectors.objectStore ? connectors.objectStore(settings) : undefined)),
    adminToken: async () => keyVaultValue("ADMIN_TOKEN", env.ADMIN_TOKEN),
  };
}

/**
 * An app setting that is a Key Vault reference: the platform replaces it with the secret's value,
 * or leaves the reference text in place when it cannot (no access, no such secret, the identity
 * not yet granted). That text must never be taken for the value.
 */
export function keyVaultValue(name: string, value: string | undefined): string | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  if (/^@Microsoft\.KeyVault\(/i.test(value.trim())) {
    throw new FunctionConfigError(`App setting ${name} is a Key Vault reference the platform could not resolve (the app's identity cannot read the secret, or it does not exist); check the reference's status in the Function App's configuration.`);
  }
  return value;
}

let shared: AzureRuntime | undefined;
/** The instance's runtime, made on first use with the function's connectors. */
export function azureRuntime(connectors: AzureConnectors = {}): AzureRuntime {
  shared ??= createAzureRuntime(process.env, connectors);
  return shared;
}
