/**
 * The wiring tests' harness and the two database modules every cloud function relies on: the
 * TLS-only PostgreSQL stand-in really refuses what a managed server refuses, `openCloudDatabase`
 * verifies what its mode says and never touches the schema, `prepareDatabase` leaves the
 * functions a role that can write rows and nothing else, and a function process sees the
 * environment it is given and nothing more.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { fileURLToPath } from "node:url";
import { openCloudDatabase } from "../../shared/cloud/database.js";
import { APP_ROLE, prepareDatabase } from "../../shared/cloud/prepareDatabase.js";
import { openPostgres } from "../../shared/db/postgres.js";
import { SchemaNotReadyError } from "../../shared/db/migrate.js";
import { startFunctionProcess, FunctionInvocationError } from "./support/functionProcess.js";
import { skipUnlessNode22 } from "./support/node22.js";
import { resolveRefs, parseReference, UnresolvedReferenceError } from "./support/terraformRefs.js";
import { startTlsPostgres, tlsPostgresUnavailable, type TlsPostgres } from "./support/tlsPostgres.js";

const APP_PASSWORD = "app-password-for-tests-0123456789";
let server: TlsPostgres | undefined;
let skipDb: string | undefined;

beforeAll(async () => {
  skipDb = tlsPostgresUnavailable();
  if (skipDb) {
    if (process.env.CI && process.env.CI !== "false") throw new Error(`${skipDb}. CI must run the wiring tests.`);
    console.warn(`\n!!! ${skipDb}: the TLS database tests are SKIPPED.\n`);
    return;
  }
  server = await startTlsPostgres({ trustRoles: ["iam_user"], mimicAurora: true });
}, 60_000);
afterAll(async () => { await server?.stop(); });

const asApp = (host = "localhost") => `postgres://${APP_ROLE}:${APP_PASSWORD}@${host}:${server!.port}/webhooks`;
const ownerDb = () => openPostgres({ connectionString: server!.adminUrl, ssl: server!.ssl, max: 4 });

describe("the TLS-only PostgreSQL stand-in", () => {
  it("refuses plain connections and a client that does not trust its CA", async (t) => {
    if (skipDb) return t.skip();
    const plain = new pg.Client({ connectionString: server!.adminUrl, ssl: false });
    await expect(plain.connect()).rejects.toThrow(/pg_hba|reject/i);
    const untrusting = new pg.Client({ connectionString: server!.adminUrl, ssl: { rejectUnauthorized: true } });
    await expect(untrusting.connect()).rejects.toThrow(/self.signed|unable to (get|verify)/i);
  });
});

describe("openCloudDatabase", () => {
  beforeAll(async () => {
    if (skipDb) return;
    const owner = ownerDb();
    await prepareDatabase(owner, { password: APP_PASSWORD });
    await owner.close();
  }, 60_000);

  it("verify-full: passes with the CA dialled by the name the certificate holds, fails by IP", async (t) => {
    if (skipDb) return t.skip();
    const db = await openCloudDatabase({ url: asApp(), tls: "verify-full", caPem: server!.caPem, poolMax: 1 });
    expect((await db.query<{ ssl: boolean }>("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")).rows[0]?.ssl).toBe(true);
    await db.close();
    await expect(openCloudDatabase({ url: asApp("127.0.0.1"), tls: "verify-full", caPem: server!.caPem, poolMax: 1 })).rejects.toThrow(/IP: 127\.0\.0\.1 is not in the cert's list/);
  });

  it("verify-full without the CA fails: Node's own store does not know a private CA", async (t) => {
    if (skipDb) return t.skip();
    await expect(openCloudDatabase({ url: asApp(), tls: "verify-full", poolMax: 1 })).rejects.toThrow(/self.signed|unable to (get|verify)/i);
  });

  it("verify-ca: passes by IP with the CA (Cloud SQL's case), fails with another CA, needs one", async (t) => {
    if (skipDb) return t.skip();
    const db = await openCloudDatabase({ url: asApp("127.0.0.1"), tls: "verify-ca", caPem: server!.caPem, poolMax: 1 });
    expect((await db.query<{ u: string }>("SELECT current_user AS u")).rows[0]?.u).toBe(APP_ROLE);
    await db.close();
    const other = await startTlsPostgres();
    try {
      await expect(openCloudDatabase({ url: asApp("127.0.0.1"), tls: "verify-ca", caPem: other.caPem, poolMax: 1 })).rejects.toThrow(/self.signed|unable to (get|verify)|signature/i);
    } finally {
      await other.stop();
    }
    await expect(openCloudDatabase({ url: asApp("127.0.0.1"), tls: "verify-ca", poolMax: 1 })).rejects.toThrow(/WEBHOOKS_DATABASE_CA_CERT/);
  }, 60_000);

  it("refuses TLS parameters in the URL, which would override the explicit mode", async () => {
    await expect(openCloudDatabase({ url: "postgres://u:p@db:5432/webhooks?sslmode=require", tls: "verify-full", poolMax: 1 })).rejects.toThrow(/Remove sslmode from the database URL/);
    await expect(openCloudDatabase({ url: "mysql://u@db/x", tls: "verify-full", poolMax: 1 })).rejects.toThrow(/must start with postgres:\/\//);
  });

  it("uses the password function for each connection (IAM tokens)", async (t) => {
    if (skipDb) return t.skip();
    let asked = 0;
    const db = await openCloudDatabase({
      url: `postgres://${APP_ROLE}@localhost:${server!.port}/webhooks`, tls: "verify-full", caPem: server!.caPem, poolMax: 1,
      password: async () => { asked++; return APP_PASSWORD; },
    });
    await db.query("SELECT 1");
    await db.close();
    expect(asked).toBeGreaterThan(0);
  });

  it("refuses a database whose schema is behind, naming the migrate step, and creates nothing", async (t) => {
    if (skipDb) return t.skip();
    const su = server!.superuser();
    await su.connect();
    await su.query("CREATE DATABASE empty_one OWNER webhooks_admin");
    await su.end();
    const url = server!.adminUrl.replace(/\/webhooks$/, "/empty_one");
    const error = await openCloudDatabase({ url, tls: "verify-full", caPem: server!.caPem, poolMax: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SchemaNotReadyError);
    expect((error as Error).message).toMatch(/migrate step/);
    const check = openPostgres({ connectionString: url, ssl: server!.ssl, max: 1 });
    expect((await check.query<{ t: string | null }>("SELECT to_regclass('schema_migrations')::text AS t")).rows[0]?.t).toBeNull();
    await check.close();
  });
});

describe("prepareDatabase: the application role", () => {
  it("may read and write every table but run no DDL, and a second concurrent run changes nothing", async (t) => {
    if (skipDb) return t.skip();
    const owner = ownerDb();
    const [a, b] = await Promise.all([prepareDatabase(owner, { password: APP_PASSWORD }), prepareDatabase(owner, { password: APP_PASSWORD })]);
    expect(a.applied).toEqual([]);
    expect(b.applied).toEqual([]);
    await owner.close();
    const app = await openCloudDatabase({ url: asApp(), tls: "verify-full", caPem: server!.caPem, poolMax: 1 });
    try {
      const tables = (await app.query<{ t: string }>("SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public'")).rows.map((r) => r.t);
      expect(tables.length).toBeGreaterThan(5);
      for (const table of tables) {
        const can = await app.query<{ s: boolean; i: boolean; u: boolean; d: boolean; tr: boolean }>(
          `SELECT has_table_privilege($1, 'SELECT') AS s, has_table_privilege($1, 'INSERT') AS i, has_table_privilege($1, 'UPDATE') AS u,
                  has_table_privilege($1, 'DELETE') AS d, has_table_privilege($1, 'TRUNCATE') AS tr`, [`public.${table}`]);
        expect({ table, ...can.rows[0] }).toEqual({ table, s: true, i: true, u: true, d: true, tr: false });
      }
      await expect(app.query("CREATE TABLE sneaky (id int)")).rejects.toThrow(/permission denied/);
      await expect(app.query("DROP TABLE schema_migrations")).rejects.toThrow(/must be owner/);
      await expect(app.query("ALTER TABLE schema_migrations ADD COLUMN x int")).rejects.toThrow(/must be owner/);
    } finally {
      await app.close();
    }
  });

  it("with iamAuth, grants rds_iam and sets no password", async (t) => {
    if (skipDb) return t.skip();
    const owner = ownerDb();
    await prepareDatabase(owner, { appRole: "iam_user", iamAuth: true });
    const row = (await owner.query<{ member: boolean }>("SELECT pg_has_role('iam_user', 'rds_iam', 'MEMBER') AS member")).rows[0];
    await owner.close();
    expect(row?.member).toBe(true);
    const su = server!.superuser();
    await su.connect();
    const pw = await su.query("SELECT rolpassword FROM pg_authid WHERE rolname = 'iam_user'");
    await su.end();
    expect(pw.rows[0]?.rolpassword).toBeNull();
  });

  it("refuses what it cannot do safely", async () => {
    const db = { query: async () => ({ rows: [], rowCount: 0 }) } as never;
    await expect(prepareDatabase(db, { appRole: "Robert'); DROP", password: APP_PASSWORD })).rejects.toThrow(/lower-case identifier/);
    await expect(prepareDatabase(db, {})).rejects.toThrow(/needs a password/);
    await expect(prepareDatabase(db, { password: "short" })).rejects.toThrow(/at least 16/);
    await expect(prepareDatabase(db, { password: APP_PASSWORD, iamAuth: true })).rejects.toThrow(/not both/);
  });
});

describe("a function process", () => {
  it("runs Node 22 with exactly the environment it is given", async (t) => {
    if (await skipUnlessNode22()) return t.skip();
    const fp = await startFunctionProcess({
      driver: fileURLToPath(new URL("./drivers/echo.mjs", import.meta.url)),
      bundleDir: fileURLToPath(new URL("./drivers", import.meta.url)),
      env: { ONLY_THIS: "1" },
    });
    try {
      const seen = await fp.invoke<{ version: string; env: Record<string, string> }>("env");
      expect(seen.version).toMatch(/^v22\./);
      expect(seen.env.ONLY_THIS).toBe("1");
      expect(Object.keys(seen.env).filter((k) => k !== "ONLY_THIS" && k !== "PATH" && !k.startsWith("NODE_CHANNEL"))).toEqual([]);
      const failure = await fp.invoke("fail", "x").catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(FunctionInvocationError);
      expect(failure).toMatchObject({ name: "TypeError", message: "failed as asked: x" });
    } finally {
      await fp.stop();
    }
  }, 200_000);
});

describe("Terraform references", () => {
  it("resolves known expressions and names every unknown one", () => {
    const resolve = (e: string) => (e === "aws_sqs_queue.q.url" ? "http://moto/q" : undefined);
    expect(resolveRefs({ a: ["${aws_sqs_queue.q.url}/x"] }, resolve)).toEqual({ a: ["http://moto/q/x"] });
    expect(() => resolveRefs({ a: "${aws_sqs_queue.q.arn}", b: "${var.x}" }, resolve, "processor env"))
      .toThrow(UnresolvedReferenceError);
    expect(() => resolveRefs("${aws_sqs_queue.q.arn}", resolve, "processor env")).toThrow(/processor env refers to .*\n- \$\{aws_sqs_queue\.q\.arn\}/);
    expect(parseReference("google_sql_database_instance.db_x.server_ca_cert[0].cert")).toEqual({ type: "google_sql_database_instance", name: "db_x", path: ["server_ca_cert", "0", "cert"] });
    expect(parseReference("data.aws_caller_identity.me.account_id")).toEqual({ type: "data.aws_caller_identity", name: "me", path: ["account_id"] });
    expect(parseReference("join(\",\", var.x)")).toBeUndefined();
  });
});
