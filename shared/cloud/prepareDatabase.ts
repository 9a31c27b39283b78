/**
 * The deploy's migrate step: with the owner's rights, apply the migrations and make the
 * application role the functions connect as. That role may read and write the platform's rows
 * and nothing else: no DDL, no other database, so a function that is compromised or wrong can
 * neither change the schema nor drop a table. Run by each cloud's `migrate` function (and safe
 * to run again: every statement is idempotent, and one transaction-scoped lock serialises
 * concurrent runs, since roles are shared by the whole server).
 */
import type { Database, Transaction } from "../db/port.js";
import { migrate } from "../db/migrate.js";

export const APP_ROLE = "webhooks_app";

/** A lock id only this module uses. */
const ROLE_LOCK = 7_310_420_119;

export interface PrepareOptions {
  /** Default: `webhooks_app`. */
  appRole?: string;
  /** Password the role logs in with (Azure, GCP). */
  password?: string;
  /** Log in with IAM tokens instead (Aurora: `GRANT rds_iam`); no password is set. */
  iamAuth?: boolean;
}

export interface PrepareResult {
  applied: string[];
  appRole: string;
  /** Whether the role had to be created (false: it existed and was brought up to date). */
  roleCreated: boolean;
}

const quoteLiteral = (text: string) => `'${text.replace(/'/g, "''")}'`;

export async function prepareDatabase(ownerDb: Database, options: PrepareOptions = {}): Promise<PrepareResult> {
  const role = options.appRole ?? APP_ROLE;
  // The role's name goes into DDL, which takes no parameters: only a plain identifier is accepted.
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(role)) throw new Error(`The application role must be a lower-case identifier, not ${JSON.stringify(role)}.`);
  if (options.iamAuth && options.password) throw new Error("Choose IAM authentication or a password for the application role, not both.");
  if (!options.iamAuth && !options.password) throw new Error("The application role needs a password (or iamAuth on Aurora).");
  if (options.password !== undefined && options.password.length < 16) throw new Error("The application role's password must have at least 16 characters.");

  const applied = await migrate(ownerDb);
  const roleCreated = await ownerDb.transaction(async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock($1)", [ROLE_LOCK]);
    const exists = (await tx.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [role])).rows.length > 0;
    if (!exists) await tx.exec(`CREATE ROLE ${role} LOGIN`);
    await tx.exec(`ALTER ROLE ${role} WITH LOGIN${options.password ? ` PASSWORD ${quoteLiteral(options.password)}` : " PASSWORD NULL"}`);
    if (options.iamAuth) await grantIamLogin(tx, role);
    await grantDataAccess(tx, role);
    return !exists;
  });
  return { applied, appRole: role, roleCreated };
}

/** Aurora's `rds_iam` makes the role log in with IAM tokens only. */
async function grantIamLogin(tx: Transaction, role: string): Promise<void> {
  const iam = await tx.query("SELECT 1 FROM pg_roles WHERE rolname = 'rds_iam'");
  if (iam.rows.length === 0) throw new Error("This server has no rds_iam role: IAM authentication exists on Amazon RDS and Aurora only.");
  await tx.exec(`GRANT rds_iam TO ${role}`);
}

/**
 * Rows of today's tables and sequences, and of those later migrations create (default privileges of
 * the owner running them). CREATE ROLE's defaults already deny superuser, CREATEDB and CREATEROLE.
 */
async function grantDataAccess(tx: Transaction, role: string): Promise<void> {
  // CONNECT on the database is PUBLIC's by default; a managed server's admin may not own it.
  await tx.exec(`
    GRANT USAGE ON SCHEMA public TO ${role};
    GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role};
    GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO ${role};
    ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${role};
    ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO ${role};
    REVOKE CREATE ON SCHEMA public FROM ${role};
  `);
}
