/**
 * The cloud functions read the encryption keys from each cloud's secret store, as the stacks
 * provide them: AWS `WEBHOOKS_ENCRYPTION_KEYS_SECRET_ARN` (Secrets Manager, here on moto), Azure
 * app setting `ENCRYPTION_KEYS` (a Key Vault reference the platform resolves), GCP env
 * `ENCRYPTION_KEYS` (a Secret Manager secret). `database()` installs them first, so whatever uses the
 * database (relay, management, processor) seals and opens secrets with them. On PostgreSQL.
 */
import { CreateSecretCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { createAwsRuntime } from "../../functions/aws/runtime.js";
import { createAzureRuntime } from "../../functions/azure/runtime.js";
import { createGcpRuntime } from "../../functions/gcp/runtime.js";
import { activeKeyring, useKeyring } from "../../shared/crypto/activeKeyring.js";
import { secretsByKey } from "../../shared/crypto/reencrypt.js";
import { migrate } from "../../shared/db/migrate.js";
import { openPostgres } from "../../shared/db/postgres.js";
import { createSubscription } from "../../shared/outbound/index.js";
import { createServerDatabase, postgresAvailable } from "../support/databases.js";
import { MOTO_CLIENT_CONFIG, MOTO_URL, motoAvailable, skipUnlessAvailable } from "../support/emulators.js";

const key = (fill: number) => Buffer.alloc(32, fill).toString("base64");
const KEYS = `cloud2:${key(42)},${process.env.ENCRYPTION_KEYS}`;

let url = "";
let drop: () => Promise<void> = async () => {};
let skipDb: string | undefined;
let skipMoto: string | undefined;

beforeAll(async () => {
  skipDb = await skipUnlessAvailable("PostgreSQL", "127.0.0.1:5432", postgresAvailable);
  skipMoto = await skipUnlessAvailable("moto", MOTO_URL, motoAvailable);
  if (skipDb) return;
  ({ url, drop } = await createServerDatabase());
  const owner = openPostgres({ connectionString: url, max: 1 });
  await migrate(owner);
  await owner.close();
  Object.assign(process.env, {
    AWS_ENDPOINT_URL: MOTO_URL, AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: MOTO_CLIENT_CONFIG.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: MOTO_CLIENT_CONFIG.credentials.secretAccessKey,
  });
});
afterAll(() => drop());
afterEach(() => useKeyring(undefined));

const dbEnv = () => ({ WEBHOOKS_DATABASE_TLS: "disable", LOG_LEVEL: "silent" });

it("AWS: the keys from Secrets Manager (WEBHOOKS_ENCRYPTION_KEYS_SECRET_ARN), installed by database(); what it writes is under the first", async (t) => {
  if (skipDb || skipMoto) return t.skip();
  const sm = new SecretsManagerClient(MOTO_CLIENT_CONFIG);
  const secret = await sm.send(new CreateSecretCommand({ Name: `enc-keys-${Date.now()}`, SecretString: KEYS }));
  const runtime = createAwsRuntime({ ...dbEnv(), WEBHOOKS_DATABASE_URL: url, WEBHOOKS_ENCRYPTION_KEYS_SECRET_ARN: secret.ARN! });
  const db = await runtime.database();
  try {
    expect(activeKeyring().primary.id).toBe("cloud2");
    const sub = await createSubscription(db, { url: "https://receiver.example/hooks", eventTypes: ["*"] });
    const { rows } = await db.query<{ secrets: string[] }>("SELECT secrets FROM outbound_subscriptions WHERE id = $1", [sub.id]);
    expect(rows[0]!.secrets[0]).toMatch(/^enc\.v1\.cloud2\./);
    expect((await secretsByKey(db)).cloud2).toBeGreaterThanOrEqual(1);
  } finally {
    await db.close();
  }
  // A value that is not a key list is refused, naming the secret, never quoting it.
  const bad = await sm.send(new CreateSecretCommand({ Name: `enc-keys-bad-${Date.now()}`, SecretString: `k1:${Buffer.alloc(16, 3).toString("base64")}` }));
  const broken = createAwsRuntime({ ...dbEnv(), WEBHOOKS_DATABASE_URL: url, WEBHOOKS_ENCRYPTION_KEYS_SECRET_ARN: bad.ARN! });
  const error = await broken.encryptionKeys().catch((e: Error) => e);
  expect(String(error)).toContain(bad.ARN!);
  expect(String(error)).toMatch(/exactly 32 bytes/);
  expect(String(error)).not.toContain(Buffer.alloc(16, 3).toString("base64"));
});

it("Azure: app setting ENCRYPTION_KEYS (a Key Vault reference, resolved); an unresolved reference is named", async (t) => {
  if (skipDb) return t.skip();
  const runtime = createAzureRuntime({ ...dbEnv(), DATABASE_URL: url, ENCRYPTION_KEYS: KEYS });
  const db = await runtime.database();
  try {
    expect(activeKeyring().primary.id).toBe("cloud2");
  } finally {
    await db.close();
  }
  const unresolved = createAzureRuntime({ ...dbEnv(), DATABASE_URL: url, ENCRYPTION_KEYS: "@Microsoft.KeyVault(SecretUri=https://v.vault.azure.net/secrets/encryption-keys/)" });
  await expect(unresolved.encryptionKeys()).rejects.toThrow(/ENCRYPTION_KEYS is a Key Vault reference the platform could not resolve/);
  await expect(unresolved.database()).rejects.toThrow(/Key Vault reference/);
});

it("GCP: env ENCRYPTION_KEYS (a Secret Manager secret)", async (t) => {
  if (skipDb) return t.skip();
  const runtime = createGcpRuntime({ ...dbEnv(), GOOGLE_CLOUD_PROJECT: "webhooks-test", DATABASE_URL: url, ENCRYPTION_KEYS: KEYS });
  const db = await runtime.database();
  try {
    expect(activeKeyring().primary.id).toBe("cloud2");
  } finally {
    await db.close();
  }
});
