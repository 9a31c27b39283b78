/**
 * What the AWS functions share, built once per cold start and reused across invocations:
 * settings (validated, naming what is missing), the partners and database credentials from
 * Secrets Manager (Powertools Parameters, cached) and a small pg pool. The SQS queue pair and the
 * S3 claim-check store come from `clients.ts`, wired in only by the functions that use them, so
 * the relay's bundle carries no SQS or S3 client. Only what a function asks for is built.
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
  WEBHOOKS_QUEUE_URL: z.url(),
  WEBHOOKS_DEAD_LETTER_QUEUE_URL: z.optional(z.url()),
  /** Secrets Manager secret holding the partners JSON (docs/inbound-partners.md). */
  WEBHOOKS_PARTNER_SECRETS_ARN: z.optional(z.string().check(z.minLength(1))),
  /** Or the partners JSON itself (tests; never a production secret in plain environment). */
  WEBHOOKS_PARTNERS: z.optional(z.string().check(z.minLength(2))),
  WEBHOOKS_CLAIM_CHECK_BUCKET: z.optional(z.string().check(z.minLength(3))),
  WEBHOOKS_DATABASE_HOST: z.optional(z.string().check(z.minLength(1))),
  WEBHOOKS_DATABASE_PORT: z._default(z.coerce.number().check(z.int(), z.gte(1), z.lte(65535)), 5432),
  WEBHOOKS_DATABASE_NAME: z._default(z.string().check(z.minLength(1)), "webhooks"),
  /** The Aurora-managed master secret ({"username","password"}). */
  WEBHOOKS_DATABASE_SECRET_ARN: z.optional(z.string().check(z.minLength(1))),
  /** Or a full URL (tests, or a database outside the stack). */
  WEBHOOKS_DATABASE_URL: z.optional(z.string().check(z.minLength(1))),
  WEBHOOKS_DATABASE_SSL: z._default(z.enum(["verify-full", "require", "disable"]), "verify-full"),
  WEBHOOKS_DB_POOL_MAX: poolSize,
  WEBHOOKS_VERIFY_IN_PROCESSOR: z._default(z.enum(["true", "false"]), "false"),
};

export type AwsSettings = ReturnType<typeof readAwsSettings>;

export function readAwsSettings(env: Record<string, string | undefined> = process.env) {
  return readSettings(shape, env, "AWS");
}

async function secretString(arn: string): Promise<string> {
  const { getSecret } = await import("@aws-lambda-powertools/parameters/secrets");
  // Cached for five minutes: a rotated secret is picked up without a redeploy.
  const value = await getSecret(arn, { maxAge: 300 });
  if (typeof value !== "string" || value === "") throw new Error(`Secret ${arn} is empty or binary; it must hold text.`);
  return value;
}

/**
 * The SDK clients a function uses, passed by its entry module (`clients.ts` has them): a module
 * the runtime imported itself would land in every function's bundle.
 */
export interface AwsClients {
  queue?: (settings: AwsSettings) => Promise<QueueAdapter>;
  objectStore?: (settings: AwsSettings) => Promise<ObjectStore | undefined>;
}

export interface AwsRuntime {
  settings: AwsSettings;
  logger: Logger;
  partners(): Promise<ReadonlyMap<string, PartnerConfig>>;
  database(): Promise<Database>;
  queue(): Promise<QueueAdapter>;
  objectStore(): Promise<ObjectStore | undefined>;
  /** The local platform's tuning variables (OUTBOUND_*, INBOX_*), with their defaults. */
  tuning: ReturnType<typeof loadConfig>;
}

export function createAwsRuntime(env: Record<string, string | undefined> = process.env, clients: AwsClients = {}): AwsRuntime {
  const settings = readAwsSettings(env);
  const tuning = loadConfig(env);
  const logger = createLogger({ name: "webhooks-aws", level: tuning.LOG_LEVEL });
  return {
    settings,
    logger,
    tuning,
    partners: once(async () => {
      if (settings.WEBHOOKS_PARTNERS) return parsePartners(settings.WEBHOOKS_PARTNERS);
      if (!settings.WEBHOOKS_PARTNER_SECRETS_ARN) throw new Error("Set WEBHOOKS_PARTNER_SECRETS_ARN (the Secrets Manager secret with the partners JSON).");
      return parsePartners(await secretString(settings.WEBHOOKS_PARTNER_SECRETS_ARN));
    }),
    database: once(async () => {
      let url = settings.WEBHOOKS_DATABASE_URL;
      if (!url) {
        if (!settings.WEBHOOKS_DATABASE_HOST || !settings.WEBHOOKS_DATABASE_SECRET_ARN) {
          throw new Error("Set WEBHOOKS_DATABASE_HOST and WEBHOOKS_DATABASE_SECRET_ARN (or WEBHOOKS_DATABASE_URL).");
        }
        const creds = JSON.parse(await secretString(settings.WEBHOOKS_DATABASE_SECRET_ARN)) as { username?: string; password?: string };
        if (!creds.username || !creds.password) throw new Error(`Secret ${settings.WEBHOOKS_DATABASE_SECRET_ARN} must be JSON with "username" and "password".`);
        const u = new URL(`postgres://${settings.WEBHOOKS_DATABASE_HOST}:${settings.WEBHOOKS_DATABASE_PORT}/${settings.WEBHOOKS_DATABASE_NAME}`);
        u.username = creds.username;
        u.password = creds.password;
        if (settings.WEBHOOKS_DATABASE_SSL !== "disable") u.searchParams.set("sslmode", settings.WEBHOOKS_DATABASE_SSL);
        url = u.toString();
      }
      // Two connections per instance: Lambda runs one invocation at a time per instance, and
      // concurrency × pool must stay under the database's connection limit.
      const db = openPostgres({ connectionString: url, max: settings.WEBHOOKS_DB_POOL_MAX });
      await migrate(db);
      return db;
    }),
    queue: once(async () => {
      if (!clients.queue) throw new Error("This function was built without an SQS client; pass one to createAwsRuntime (functions/aws/clients.ts).");
      return clients.queue(settings);
    }),
    objectStore: once(async () => (clients.objectStore ? clients.objectStore(settings) : undefined)),
  };
}

let shared: AwsRuntime | undefined;
/** The runtime of this Lambda instance (created at the first invocation), with the function's clients. */
export function awsRuntime(clients: AwsClients = {}): AwsRuntime {
  shared ??= createAwsRuntime(process.env, clients);
  return shared;
}
