/**
 * A throwaway PostgreSQL 15 server for the wiring tests, shaped like the clouds' managed ones in
 * what the functions can get wrong:
 * - it accepts TLS only (`hostssl`; a plain connection is refused), with a server certificate
 *   from a private CA made here, which is in no trust store: a function trusts it only if the
 *   stack told it where the CA is;
 * - the certificate names `localhost` and no IP: dialled as 127.0.0.1 (as a function dials
 *   Cloud SQL's private IP) only `verify-ca` passes; dialled as localhost, `verify-full` does too;
 * - the databases' owner is an admin that is not a superuser (`webhooks_admin`, with CREATEROLE,
 *   like Aurora's master user, Azure's and Cloud SQL's admin), and password logins use SCRAM;
 * - `mimicAurora` adds Aurora's `rds_iam` role; roles in `trustRoles` get in without a password,
 *   the stand-in for IAM tokens, which nothing here can check.
 *
 * It needs the Debian PostgreSQL 15 binaries and openssl. As root, the server runs as the
 * `postgres` user (initdb refuses root). `stop()` kills it and removes its files.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { makeCertificate } from "./certificates.js";
import { freePort } from "../../support/freePort.js";

const run = promisify(execFile);
const BIN = process.env.PG_BIN_DIR ?? "/usr/lib/postgresql/15/bin";

export const ADMIN_ROLE = "webhooks_admin";
export const DATABASE = "webhooks";

export interface TlsPostgres {
  port: number;
  /** The private CA (PEM file and text): what the stack must make the function trust. */
  caFile: string;
  caPem: string;
  adminPassword: string;
  /** `postgres://webhooks_admin:…@localhost:<port>/webhooks` (no TLS parameters: pass `ssl`). */
  adminUrl: string;
  /** pg `ssl` options that verify this server fully when dialled as localhost. */
  ssl: { ca: string; rejectUnauthorized: true };
  /** A client as the server's superuser (over the Unix socket), for the test's own checks. */
  superuser(): pg.Client;
  stop(): Promise<void>;
}

export interface TlsPostgresOptions {
  /** Roles let in without a password (over TLS only): the stand-in for IAM token logins. */
  trustRoles?: string[];
  /** Create Aurora's `rds_iam` role, which IAM-authenticated roles are granted. */
  mimicAurora?: boolean;
}

/** Why the server cannot run here, or undefined when it can. */
export function tlsPostgresUnavailable(): string | undefined {
  if (!existsSync(join(BIN, "initdb"))) return `PostgreSQL 15 binaries not found in ${BIN} (apt-get install postgresql-15, or set PG_BIN_DIR)`;
  return undefined;
}


export async function startTlsPostgres(options: TlsPostgresOptions = {}): Promise<TlsPostgres> {
  const missing = tlsPostgresUnavailable();
  if (missing) throw new Error(missing);
  const root = mkdtempSync(join(tmpdir(), "wiring-pg-"));
  const data = join(root, "data");
  const asRoot = userInfo().uid === 0;
  // As root, every file the server touches belongs to `postgres`; the CA stays readable to us.
  const owned = async (command: string, args: string[]) =>
    asRoot ? run("runuser", ["-u", "postgres", "--", command, ...args]) : run(command, args);
  if (asRoot) chownSync(root, ...(await postgresIds()));
  // The certificate names localhost and no IP (see above).
  await makeCertificate(root, "DNS:localhost", "wiring-test private CA");
  if (asRoot) for (const f of ["server.key", "server.crt", "ca.pem"]) chownSync(join(root, f), ...(await postgresIds()));
  await run("chmod", ["600", join(root, "server.key")]);
  const superPassword = `super-${Math.random().toString(36).slice(2)}-${Date.now()}`;
  writeFileSync(join(root, "pw"), superPassword);
  if (asRoot) chownSync(join(root, "pw"), ...(await postgresIds()));
  await owned(join(BIN, "initdb"), ["-D", data, "-U", "postgres", "--pwfile", join(root, "pw"), "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-instructions"]);
  rmSync(join(root, "pw"));

  const trust = (options.trustRoles ?? []).join(",");
  const hba = [
    "local all postgres trust",
    ...(trust ? [`hostssl all ${trust} 127.0.0.1/32 trust`, `hostssl all ${trust} ::1/128 trust`] : []),
    "hostssl all all 127.0.0.1/32 scram-sha-256",
    "hostssl all all ::1/128 scram-sha-256",
    // Anything else, plain TCP above all, is refused.
    "host all all 0.0.0.0/0 reject",
    "host all all ::/0 reject",
  ];
  writeFileSync(join(data, "pg_hba.conf"), `${hba.join("\n")}\n`);
  if (asRoot) chownSync(join(data, "pg_hba.conf"), ...(await postgresIds()));

  const port = await freePort();
  const args = ["-D", data, "-p", String(port), "-k", root, "-c", "listen_addresses=localhost", "-c", "ssl=on",
    "-c", `ssl_cert_file=${join(root, "server.crt")}`, "-c", `ssl_key_file=${join(root, "server.key")}`,
    "-c", "fsync=off", "-c", "max_connections=60", "-c", "log_min_messages=warning"];
  const child: ChildProcess = asRoot
    ? spawn("runuser", ["-u", "postgres", "--", join(BIN, "postgres"), ...args], { stdio: ["ignore", "ignore", "pipe"] })
    : spawn(join(BIN, "postgres"), args, { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr?.on("data", (chunk: Buffer) => { log = (log + chunk.toString()).slice(-4000); });

  const superuser = () => new pg.Client({ host: root, port, user: "postgres", database: "postgres" });
  await waitUntilReady(superuser, () => log, child);

  const adminPassword = `admin-${Math.random().toString(36).slice(2)}-${Date.now()}`;
  const admin = superuser();
  await admin.connect();
  try {
    await admin.query(`CREATE ROLE ${ADMIN_ROLE} LOGIN CREATEROLE PASSWORD '${adminPassword}'`);
    await admin.query(`CREATE DATABASE ${DATABASE} OWNER ${ADMIN_ROLE}`);
    if (options.mimicAurora) await admin.query("CREATE ROLE rds_iam NOLOGIN");
  } finally {
    await admin.end();
  }
  const caPem = readFileSync(join(root, "ca.pem"), "utf8");
  return {
    port,
    caFile: join(root, "ca.pem"),
    caPem,
    adminPassword,
    adminUrl: `postgres://${ADMIN_ROLE}:${adminPassword}@localhost:${port}/${DATABASE}`,
    ssl: { ca: caPem, rejectUnauthorized: true },
    superuser,
    async stop() {
      // Through pg_ctl: a signal to runuser may not reach the server it started.
      await owned(join(BIN, "pg_ctl"), ["-D", data, "stop", "-m", "immediate", "-w"]).catch(() => child.kill("SIGKILL"));
      await new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        const timer = setTimeout(() => { child.kill("SIGKILL"); resolve(); }, 5000);
        child.once("exit", () => { clearTimeout(timer); resolve(); });
      });
      rmSync(root, { recursive: true, force: true });
    },
  };
}

let ids: [number, number] | undefined;
async function postgresIds(): Promise<[number, number]> {
  if (!ids) {
    const uid = Number((await run("id", ["-u", "postgres"])).stdout.trim());
    const gid = Number((await run("id", ["-g", "postgres"])).stdout.trim());
    ids = [uid, gid];
  }
  return ids;
}

async function waitUntilReady(client: () => pg.Client, log: () => string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`The test PostgreSQL exited (${child.exitCode}):\n${log()}`);
    const c = client();
    try {
      await c.connect();
      await c.end();
      return;
    } catch {
      await c.end().catch(() => {});
      if (Date.now() > deadline) throw new Error(`The test PostgreSQL did not start within 20 s:\n${log()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
