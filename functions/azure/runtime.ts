/**
 * What the Azure functions share, built once per instance: settings (Key Vault references are
 * resolved into app settings by the platform before the code runs), a small pg pool, the Service
 * Bus queue (managed identity) and the Blob claim-check store.
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
  WEBHOOKS_QUEUE_NAME: z.string().min(1),
  /** Managed-identity connection (local auth is off on the namespace)… */
  ServiceBusConnection__fullyQualifiedNamespace: z.string().min(1).optional(),
  ServiceBusConnection__clientId: z.string().min(1).optional(),
  /** …or a connection string (the test peer). */
  ServiceBusConnection: z.string().min(1).optional(),
  PARTNERS: z.string().min(2).optional(),
  DATABASE_URL: z.string().min(1).optional(),
  WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL: z.string().url().optional(),
  WEBHOOKS_CLAIM_CHECK_CONTAINER: z.string().min(3).default("claim-checks"),
  WEBHOOKS_CLAIM_CHECK_CONNECTION: z.string().min(1).optional(),
  WEBHOOKS_DB_POOL_MAX: poolSize,
  /** Seconds the relay timer may run (the function timeout minus a margin). Default: 240. */
  WEBHOOKS_RELAY_BUDGET_SECONDS: z.coerce.number().int().min(10).max(3600).default(240),
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

export function createAzureRuntime(env: Record<string, string | undefined> = process.env): AzureRuntime {
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
      const { createServiceBusQueue } = await import("../../shared/queue/serviceBus.js");
      if (settings.ServiceBusConnection) return createServiceBusQueue({ connectionString: settings.ServiceBusConnection, queueName: settings.WEBHOOKS_QUEUE_NAME });
      if (!settings.ServiceBusConnection__fullyQualifiedNamespace) throw new Error("Set ServiceBusConnection__fullyQualifiedNamespace (or ServiceBusConnection).");
      return createServiceBusQueue({
        fullyQualifiedNamespace: settings.ServiceBusConnection__fullyQualifiedNamespace,
        managedIdentityClientId: settings.ServiceBusConnection__clientId,
        queueName: settings.WEBHOOKS_QUEUE_NAME,
      });
    }),
    objectStore: once(async () => {
      if (!settings.WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL && !settings.WEBHOOKS_CLAIM_CHECK_CONNECTION) return undefined;
      const { createAzureBlobStore } = await import("../../shared/objectStore/azureBlob.js");
      return createAzureBlobStore({
        container: settings.WEBHOOKS_CLAIM_CHECK_CONTAINER,
        accountUrl: settings.WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL,
        connectionString: settings.WEBHOOKS_CLAIM_CHECK_CONNECTION,
      });
    }),
  };
}

let shared: AzureRuntime | undefined;
export function azureRuntime(): AzureRuntime {
  shared ??= createAzureRuntime();
  return shared;
}
