/**
 * What the AWS functions share, built once per cold start and reused across invocations:
 * settings (validated, naming what is missing or misspelt), the partners and secrets from Secrets
 * Manager (Powertools Parameters, cached) and a small pg pool. The SQS queue pair and the S3
 * claim-check store come from `clients.ts`, wired in only by the functions that use them, so the
 * relay's bundle carries no SQS or S3 client. Only what a function asks for is built.
 *
 * The database: processor and relay log in as the application role (`WEBHOOKS_DATABASE_USER`,
 * webhooks_app) with an IAM token per connection (`@aws-sdk/rds-signer`, valid 15 minutes), over
 * TLS verified against Amazon's CA bundle (the stack sets NODE_EXTRA_CA_CERTS). Only migrate reads
 * the master secret (`WEBHOOKS_DATABASE_SECRET_ARN`), through `ownerDatabase()`.
 */
import * as z from "zod/mini";
import { loadConfig, type Config } from "../../shared/config.js";
import type { Database } from "../../shared/db/port.js";
import { parsePartners, type PartnerConfig } from "../../shared/inbound/verify/index.js";
import type { ObjectStore } from "../../shared/objectStore/port.js";
import type { QueueAdapter } from "../../shared/queue/port.js";
import { databaseTlsShape, openCloudDatabase } from "../../shared/cloud/database.js";
import { once } from "../../shared/cloud/once.js";
import { FunctionConfigError, managementBasePath, poolSize, readSettings, relayMode } from "../../shared/cloud/settings.js";
import { createLogger, type Logger } from "../../shared/telemetry/log.js";
import { installEncryptionKeys } from "../../shared/cloud/encryptionKeys.js";
import type { Keyring } from "../../shared/crypto/keyring.js";

const shape = {
  WEBHOOKS_QUEUE_URL: z.optional(z.url()),
  WEBHOOKS_DEAD_LETTER_QUEUE_URL: z.optional(z.url()),
  /** Secrets Manager secret holding the partners JSON (docs/inbound-partners.md). */
  WEBHOOKS_PARTNER_SECRETS_ARN: z.optional(z.string().check(z.minLength(1))),
  /** Or the partners JSON itself (tests; never a production secret in plain environment). */
  WEBHOOKS_PARTNERS: z.optional(z.string().check(z.minLength(2))),
  WEBHOOKS_CLAIM_CHECK_BUCKET: z.optional(z.string().check(z.minLength(3))),
  WEBHOOKS_DATABASE_HOST: z.optional(z.string().check(z.minLength(1))),
  WEBHOOKS_DATABASE_PORT: z._default(z.coerce.number().check(z.int(), z.gte(1), z.lte(65535)), 5432),
  WEBHOOKS_DATABASE_NAME: z._default(z.string().check(z.minLength(1)), "webhooks"),
  /** The application role, which logs in with an IAM token (rds-signer); migrate prepares it. */
  WEBHOOKS_DATABASE_USER: z.optional(z.string().check(z.regex(/^[a-z_][a-z0-9_]{0,62}$/, "a lower-case role name such as webhooks_app"))),
  /** The Aurora-managed master secret ({"username","password"}): the migrate function's only. */
  WEBHOOKS_DATABASE_SECRET_ARN: z.optional(z.string().check(z.minLength(1))),
  /** Or a full URL without TLS parameters (tests, or a database outside the stack). */
  WEBHOOKS_DATABASE_URL: z.optional(z.string().check(z.minLength(1))),
  ...databaseTlsShape,
  WEBHOOKS_DB_POOL_MAX: poolSize,
  WEBHOOKS_VERIFY_IN_PROCESSOR: z._default(z.enum(["true", "false"]), "false"),
  /** The alert webhook's signing secret (whsec_…), read by the relay when ALERT_WEBHOOK_URL is set. */
  WEBHOOKS_ALERT_SECRET_ARN: z.optional(z.string().check(z.minLength(1))),
  /** The encryption keys of secrets at rest (Secrets Manager, SecretString = `<keyId>:<base64>[,…]`, docs/secrets.md). */
  WEBHOOKS_ENCRYPTION_KEYS_SECRET_ARN: z.optional(z.string().check(z.minLength(1))),
  /** The management API's admin token (Secrets Manager, SecretString = the token): the management function's. */
  WEBHOOKS_ADMIN_TOKEN_SECRET_ARN: z.optional(z.string().check(z.minLength(1))),
  /** Where the ingress mounts the management API (e.g. `/api`); absent: at the root. */
  WEBHOOKS_MANAGEMENT_BASE_PATH: z.optional(managementBasePath),
  /** The relay's mode (stack key `relayMode`): `listening` (default) or `scheduled`. */
  WEBHOOKS_RELAY_MODE: relayMode,
  /** Scheduled mode, the management function: the relay function it wakes (asynchronous Invoke) after a send. */
  WEBHOOKS_RELAY_FUNCTION: z.optional(z.string().check(z.minLength(1))),
};

export type AwsSettings = ReturnType<typeof readAwsSettings>;

/**
 * Validates the function's settings. A `WEBHOOKS_…` name the functions do not know is refused,
 * not ignored: a setting the stack misspells would otherwise fall back to its default unseen.
 */
export function readAwsSettings(env: Record<string, string | undefined> = process.env) {
  const unknown = Object.keys(env).filter((name) => name.startsWith("WEBHOOKS_") && !(name in shape));
  if (unknown.length > 0) {
    throw new FunctionConfigError(
      `The AWS function cannot start: it does not know ${unknown.join(", ")} (known: ${Object.keys(shape).join(", ")}). ` +
        "Fix the name in the stack (stacks/aws/) or remove it.",
    );
  }
  return readSettings(shape, env, "AWS");
}

async function secretString(arn: string): Promise<string> {
  const { getSecret } = await import("@aws-lambda-powertools/parameters/secrets");
  // Cached for five minutes: a rotated secret is picked up without a redeploy.
  const value = await getSecret(arn, { maxAge: 300 });
  if (typeof value !== "string" || value === "") throw new Error(`Secret ${arn} is empty or binary; it must hold text.`);
  return value;
}

/** Where to connect, and how to log in, for a role the stack named. */
function databaseUrl(settings: AwsSettings, user: string, password?: string): string {
  if (!settings.WEBHOOKS_DATABASE_HOST) throw new FunctionConfigError("Set WEBHOOKS_DATABASE_HOST (the Aurora writer endpoint), or WEBHOOKS_DATABASE_URL.");
  const u = new URL(`postgres://${settings.WEBHOOKS_DATABASE_HOST}:${settings.WEBHOOKS_DATABASE_PORT}/${settings.WEBHOOKS_DATABASE_NAME}`);
  u.username = user;
  if (password !== undefined) u.password = password;
  return u.toString();
}

/** A fresh IAM token for each new connection (the signer signs locally; no call to AWS). */
async function iamTokens(settings: AwsSettings, user: string): Promise<() => Promise<string>> {
  const { Signer } = await import("@aws-sdk/rds-signer");
  const signer = new Signer({ hostname: settings.WEBHOOKS_DATABASE_HOST!, port: settings.WEBHOOKS_DATABASE_PORT, username: user });
  return () => signer.getAuthToken();
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
  /** As the application role; refuses a schema the migrate step has not brought up to date. Installs the encryption keys first. */
  database(): Promise<Database>;
  /**
   * Installs the keys of secrets at rest from `WEBHOOKS_ENCRYPTION_KEYS_SECRET_ARN` (cached five
   * minutes, so a rotation is picked up), else ENCRYPTION_KEYS; undefined when neither is set.
   */
  encryptionKeys(): Promise<Keyring | undefined>;
  /** A new pool of one, as the master user from the RDS-managed secret: for the migrate function only (it closes it). */
  ownerDatabase(): Promise<Database>;
  queue(): Promise<QueueAdapter>;
  objectStore(): Promise<ObjectStore | undefined>;
  /** The local platform's tuning variables (OUTBOUND_*, INBOX_*), with their defaults. */
  tuning: Config;
  /** The tuning with ALERT_WEBHOOK_SECRET read from `WEBHOOKS_ALERT_SECRET_ARN` when that is set (the relay's). */
  relayTuning(): Promise<Config>;
  /**
   * The management API's admin token from `WEBHOOKS_ADMIN_TOKEN_SECRET_ARN` (cached five minutes,
   * so a rotation is picked up); undefined when the setting is absent. Throws when unreadable.
   */
  adminToken(): Promise<string | undefined>;
}

export function createAwsRuntime(env: Record<string, string | undefined> = process.env, clients: AwsClients = {}): AwsRuntime {
  const settings = readAwsSettings(env);
  const tuning = loadConfig(env);
  const logger = createLogger({ name: "webhooks-aws", level: tuning.LOG_LEVEL });
  const tls = { tls: settings.WEBHOOKS_DATABASE_TLS, caPem: settings.WEBHOOKS_DATABASE_CA_CERT };
  const keysArn = settings.WEBHOOKS_ENCRYPTION_KEYS_SECRET_ARN;
  const encryptionKeys = async () =>
    installEncryptionKeys(keysArn ? await secretString(keysArn) : env.ENCRYPTION_KEYS, keysArn ? `secret ${keysArn}` : "ENCRYPTION_KEYS");
  // Whatever uses the database may read or write a subscription's secrets: the keys come first.
  const withKeys = <T>(open: () => Promise<T>) => async () => { await encryptionKeys(); return open(); };
  return {
    encryptionKeys,
    settings,
    logger,
    tuning,
    partners: once(async () => {
      if (settings.WEBHOOKS_PARTNERS) return parsePartners(settings.WEBHOOKS_PARTNERS);
      if (!settings.WEBHOOKS_PARTNER_SECRETS_ARN) throw new FunctionConfigError("Set WEBHOOKS_PARTNER_SECRETS_ARN (the Secrets Manager secret with the partners JSON).");
      return parsePartners(await secretString(settings.WEBHOOKS_PARTNER_SECRETS_ARN));
    }),
    database: withKeys(once(async () => {
      // Two connections per instance: Lambda runs one invocation at a time per instance, and
      // concurrency × pool must stay under the database's connection limit.
      const poolMax = settings.WEBHOOKS_DB_POOL_MAX;
      if (settings.WEBHOOKS_DATABASE_URL) return openCloudDatabase({ url: settings.WEBHOOKS_DATABASE_URL, ...tls, poolMax });
      const user = settings.WEBHOOKS_DATABASE_USER;
      if (!user) throw new FunctionConfigError("Set WEBHOOKS_DATABASE_USER (the application role, webhooks_app) and WEBHOOKS_DATABASE_HOST, or WEBHOOKS_DATABASE_URL.");
      return openCloudDatabase({ url: databaseUrl(settings, user), ...tls, poolMax, password: await iamTokens(settings, user) });
    })),
    ownerDatabase: async () => {
      let url = settings.WEBHOOKS_DATABASE_URL;
      if (!url) {
        const arn = settings.WEBHOOKS_DATABASE_SECRET_ARN;
        if (!arn) throw new FunctionConfigError("Set WEBHOOKS_DATABASE_SECRET_ARN (the RDS-managed master secret) and WEBHOOKS_DATABASE_HOST, or WEBHOOKS_DATABASE_URL.");
        const creds = JSON.parse(await secretString(arn)) as { username?: string; password?: string };
        if (!creds.username || !creds.password) throw new Error(`Secret ${arn} must be JSON with "username" and "password".`);
        url = databaseUrl(settings, creds.username, creds.password);
      }
      return openCloudDatabase({ url, ...tls, poolMax: 1, checkSchema: false });
    },
    queue: once(async () => {
      if (!clients.queue) throw new Error("This function was built without an SQS client; pass one to createAwsRuntime (functions/aws/clients.ts).");
      return clients.queue(settings);
    }),
    objectStore: once(async () => (clients.objectStore ? clients.objectStore(settings) : undefined)),
    adminToken: async () => (settings.WEBHOOKS_ADMIN_TOKEN_SECRET_ARN ? (await secretString(settings.WEBHOOKS_ADMIN_TOKEN_SECRET_ARN)).trim() : undefined),
    relayTuning: async () => {
      if (!settings.WEBHOOKS_ALERT_SECRET_ARN) return tuning;
      try {
        // Validated like a local ALERT_WEBHOOK_SECRET (whsec_…); cached five minutes like every secret.
        return loadConfig({ ...env, ALERT_WEBHOOK_SECRET: (await secretString(settings.WEBHOOKS_ALERT_SECRET_ARN)).trim() });
      } catch (error) {
        // Deliveries must not stop for an alert secret nobody filled yet; alerts are then only
        // logged, never signed with a secret the receiver cannot know.
        logger.error({ err: error, secret: settings.WEBHOOKS_ALERT_SECRET_ARN },
          "the alert webhook's signing secret is unreadable (empty, missing or not whsec_…): alerts are logged, not sent; put the secret in (docs/deploy-aws.md)");
        return { ...tuning, ALERT_WEBHOOK_URL: undefined };
      }
    },
  };
}

let shared: AwsRuntime | undefined;
/** The runtime of this Lambda instance (created at the first invocation), with the function's clients. */
export function awsRuntime(clients: AwsClients = {}): AwsRuntime {
  shared ??= createAwsRuntime(process.env, clients);
  return shared;
}
