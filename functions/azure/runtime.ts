/**
 * What the Azure functions share, built once per instance: settings (Key Vault references are
 * resolved into app settings by the platform before the code runs), a small pg pool, and, for the
 * functions that use them, the Service Bus queue and the Blob claim-check store. Those two are
 * `AzureConnectors` the registration module passes in (functions/azure/connections.ts): a bundle
 * carries only the clients its function can reach, so the relay carries neither.
 */
import * as z from "zod/mini";
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
  WEBHOOKS_QUEUE_NAME: z.string().check(z.minLength(1)),
  /** Managed-identity connection (local auth is off on the namespace)… */
  ServiceBusConnection__fullyQualifiedNamespace: z.optional(z.string().check(z.minLength(1))),
  ServiceBusConnection__clientId: z.optional(z.string().check(z.minLength(1))),
  /** …or a connection string (the test peer). */
  ServiceBusConnection: z.optional(z.string().check(z.minLength(1))),
  PARTNERS: z.optional(z.string().check(z.minLength(2))),
  DATABASE_URL: z.optional(z.string().check(z.minLength(1))),
  WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL: z.optional(z.url()),
  WEBHOOKS_CLAIM_CHECK_CONTAINER: z._default(z.string().check(z.minLength(3)), "claim-checks"),
  WEBHOOKS_CLAIM_CHECK_CONNECTION: z.optional(z.string().check(z.minLength(1))),
  /** The user-assigned managed identity for Blob Storage (the stack sets it); absent: ServiceBusConnection__clientId. */
  AZURE_CLIENT_ID: z.optional(z.string().check(z.minLength(1))),
  WEBHOOKS_DB_POOL_MAX: poolSize,
  /** Seconds the relay timer may run (the function timeout minus a margin). Default: 240. */
  WEBHOOKS_RELAY_BUDGET_SECONDS: z._default(z.coerce.number().check(z.int(), z.gte(10), z.lte(3600)), 240),
};

export type AzureSettings = ReturnType<typeof readAzureSettings>;
export function readAzureSettings(env: Record<string, string | undefined> = process.env) {
  return readSettings(shape, env, "Azure");
}

export interface AzureRuntime {
  settings: AzureSettings;
  logger: Logger;
  tuning: ReturnType<typeof loadConfig>;
  partners(): Promise<ReadonlyMap<string, PartnerConfig>>;
  database(): Promise<Database>;
  queue(): Promise<QueueAdapter>;
  objectStore(): Promise<ObjectStore | undefined>;
}

/** How a function opens the clients it uses; a function that never sends passes neither. */
export interface AzureConnectors {
  queue?: (settings: AzureSettings) => Promise<QueueAdapter>;
  objectStore?: (settings: AzureSettings) => Promise<ObjectStore | undefined>;
}

export function createAzureRuntime(env: Record<string, string | undefined> = process.env, connectors: AzureConnectors = {}): AzureRuntime {
  const settings = readAzureSettings(env);
  const tuning = loadConfig(env);
  return {
    settings,
    logger: createLogger({ name: "webhooks-azure", level: tuning.LOG_LEVEL }),
    tuning,
    partners: once(async () => {
      if (!settings.PARTNERS) throw new Error("Set PARTNERS (a Key Vault reference to the partners JSON).");
      return parsePartners(settings.PARTNERS);
    }),
    database: once(async () => {
      if (!settings.DATABASE_URL) throw new Error("Set DATABASE_URL (a Key Vault reference).");
      const db = openPostgres({ connectionString: settings.DATABASE_URL, max: settings.WEBHOOKS_DB_POOL_MAX });
      await migrate(db);
      return db;
    }),
    queue: once(async () => {
      if (!connectors.queue) throw new Error("This function was built without a Service Bus client; it cannot send.");
      return connectors.queue(settings);
    }),
    objectStore: once(async () => (connectors.objectStore ? connectors.objectStore(settings) : undefined)),
  };
}

let shared: AzureRuntime | undefined;
/** The instance's runtime, made on first use with the function's connectors. */
export function azureRuntime(connectors: AzureConnectors = {}): AzureRuntime {
  shared ??= createAzureRuntime(process.env, connectors);
  return shared;
}
