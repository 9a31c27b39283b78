/**
 * How a cloud function opens the platform's database: over TLS that is said explicitly (never
 * inferred from an `sslmode` in a URL), as the application role, and without running DDL. The
 * schema is the migrate step's business (`prepareDatabase`, run once per deploy with owner
 * rights); a function finding it behind refuses to start with a message saying so.
 *
 * TLS modes:
 * - `verify-full`: the chain and the host name are checked, against Node's trust store (which
 *   includes `NODE_EXTRA_CA_CERTS`) or, when given, against `caPem` alone. Aurora (Amazon's CA
 *   bundle) and Azure Flexible Server (public roots) take this.
 * - `verify-ca`: the chain is checked against `caPem` alone, the host name is not. Cloud SQL's
 *   server certificate comes from a per-instance CA and names the instance, not the private IP
 *   the function dials, so the CA is the identity there.
 * - `disable`: plain TCP, for tests against a local server only.
 */
import type { ConnectionOptions } from "node:tls";
import * as z from "zod/mini";
import { assertMigrated } from "../db/migrate.js";
import type { Database } from "../db/port.js";
import { openPostgres } from "../db/postgres.js";
import { FunctionConfigError } from "./settings.js";

export const DATABASE_TLS_MODES = ["verify-full", "verify-ca", "disable"] as const;
export type DatabaseTlsMode = (typeof DATABASE_TLS_MODES)[number];

/** What a function's runtime tells a cold start to do when the schema is behind the code. */
export const MIGRATE_STEP_HINT = "Run the deploy's migrate step (docs/deploy.md), then retry; the functions never change the schema themselves.";

/** The settings shared by every cloud's functions: the TLS mode and, where the stack gives one, the CA. */
export const databaseTlsShape = {
  WEBHOOKS_DATABASE_TLS: z._default(z.enum(DATABASE_TLS_MODES), "verify-full"),
  /** PEM of the CA that signs the server's certificate (public data, not a secret). */
  WEBHOOKS_DATABASE_CA_CERT: z.optional(z.string().check(z.regex(/-----BEGIN CERTIFICATE-----/, "a PEM certificate (-----BEGIN CERTIFICATE-----…)"))),
};

export interface CloudDatabaseOptions {
  /** `postgres://user[:password]@host:port/database`, without TLS parameters. */
  url: string;
  tls: DatabaseTlsMode;
  caPem?: string;
  poolMax: number;
  /** For each new connection: a short-lived token (RDS IAM) instead of the URL's password. */
  password?: () => Promise<string>;
  /** Whether to check the schema before handing the database out. Default: true. */
  checkSchema?: boolean;
}

/** The `ssl` option pg passes to `tls.connect` for a mode; throws FunctionConfigError when the mode needs a CA it was not given. */
export function tlsOptions(tls: DatabaseTlsMode, caPem?: string): false | ConnectionOptions {
  switch (tls) {
    case "disable":
      return false;
    case "verify-full":
      return caPem ? { rejectUnauthorized: true, ca: caPem } : { rejectUnauthorized: true };
    case "verify-ca":
      if (!caPem) throw new FunctionConfigError("WEBHOOKS_DATABASE_TLS=verify-ca needs the server's CA in WEBHOOKS_DATABASE_CA_CERT (the stack sets it).");
      // The chain must lead to this CA; the name in the certificate is not compared with the host dialled.
      return { rejectUnauthorized: true, ca: caPem, checkServerIdentity: () => undefined };
  }
}

/** Refuses URL parameters that would change TLS behind the explicit mode's back. */
function checkUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new FunctionConfigError("The database URL is not a URL; expected postgres://user:password@host:5432/database.");
  }
  if (!/^postgres(ql)?:$/.test(parsed.protocol)) throw new FunctionConfigError(`The database URL must start with postgres://, not ${parsed.protocol}//.`);
  const tlsParams = [...parsed.searchParams.keys()].filter((k) => /^ssl/.test(k));
  if (tlsParams.length > 0) {
    throw new FunctionConfigError(`Remove ${tlsParams.join(", ")} from the database URL: TLS is set by WEBHOOKS_DATABASE_TLS (and WEBHOOKS_DATABASE_CA_CERT).`);
  }
}

/** Opens the pool and, unless told not to, checks the schema is current (one query; nothing written). */
export async function openCloudDatabase(options: CloudDatabaseOptions): Promise<Database> {
  checkUrl(options.url);
  const db = openPostgres({
    connectionString: options.url,
    max: options.poolMax,
    ssl: tlsOptions(options.tls, options.caPem),
    ...(options.password ? { password: options.password } : {}),
  });
  if (options.checkSchema === false) return db;
  try {
    await assertMigrated(db, MIGRATE_STEP_HINT);
  } catch (error) {
    await db.close().catch(() => {});
    throw missingRole(error, options.url) ?? error;
  }
  return db;
}

/**
 * The application role is made by the migrate step too, so before the first migrate the login
 * itself fails (28000 "role … does not exist"): say so, and what to run, instead of PostgreSQL's
 * bare message.
 */
function missingRole(error: unknown, url: string): FunctionConfigError | undefined {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code !== "28000" || typeof message !== "string" || !/^role ".*" does not exist$/.test(message)) return undefined;
  const role = decodeURIComponent(new URL(url).username);
  return new FunctionConfigError(`The application role "${role}" does not exist on the database server yet. ${MIGRATE_STEP_HINT}`);
}
