/**
 * One database test suite, two backends. `describeEachBackend` runs the same tests against the
 * embedded PGlite and against a real PostgreSQL server, each on a fresh, migrated database.
 *
 * PostgreSQL comes from TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres).
 * Where no server answers, its half is skipped with a loud message, except under CI=true, where
 * a missing server is a failure: CI must run them all.
 */
import pg from "pg";
import { afterAll, beforeAll, describe } from "vitest";
import { openDatabase } from "../../shared/db/open.js";
import { ADMIN_URL, createServerDatabase } from "./serverDatabase.js";

export { ADMIN_URL, createServerDatabase };
import { migrate } from "../../shared/db/migrate.js";
import { openPglite, pgliteTemplate } from "../../shared/db/pglite.js";
import type { Database } from "../../shared/db/port.js";

export type BackendName = "pglite" | "postgres";


let serverProbe: Promise<boolean> | undefined;

/** Whether a PostgreSQL server answers at ADMIN_URL (asked once per test file). */
export function postgresAvailable(): Promise<boolean> {
  serverProbe ??= (async () => {
    const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 2000 });
    try {
      await client.connect();
      await client.query("SELECT 1");
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return serverProbe;
}

const serverUp = await postgresAvailable();
if (!serverUp) {
  const msg = `PostgreSQL is not answering at ${ADMIN_URL}: the postgres half of the DB suite is SKIPPED (only PGlite runs).`;
  if (process.env.CI) throw new Error(`${msg} CI must run both backends; start the server first.`);
  console.warn(`\n!!! ${msg}\n`);
}

/**
 * initdb plus migrations take seconds in PGlite (tens on a loaded machine): do them once per test
 * process and open each suite's database from the dump.
 */
let migratedPglite: Promise<Blob> | undefined;

/** Opens a fresh migrated database on `backend`; `close` also drops a server database. */
export async function openTestDatabase(backend: BackendName, poolSize = 10): Promise<{ db: Database; url?: string; close: () => Promise<void> }> {
  if (backend === "pglite") {
    migratedPglite ??= pgliteTemplate(migrate);
    const db = await openPglite(undefined, { loadDataDir: await migratedPglite });
    await migrate(db); // a no-op on the template; kept so a stale template can never hide a migration
    return { db, close: () => db.close() };
  }
  const { url, drop } = await createServerDatabase();
  const db = await openDatabase({ databaseUrl: url, poolSize });
  return { db, url, close: async () => { await db.close(); await drop(); } };
}

export interface BackendContext {
  /** The database of this describe block (fresh and migrated in beforeAll). */
  readonly db: Database;
  readonly backend: BackendName;
  /** The server URL of this database (postgres backend only). */
  readonly url: string | undefined;
}

/**
 * `describe(title)` once per backend, with a fresh database for the block.
 * @example
 * describeEachBackend("enqueue", (ctx) => {
 *   it("fans out", async () => { await ctx.db.query("SELECT 1"); });
 * });
 */
export function describeEachBackend(title: string, body: (ctx: BackendContext) => void, options: { poolSize?: number } = {}): void {
  for (const backend of ["pglite", "postgres"] as const) {
    const skip = backend === "postgres" && !serverUp;
    const block = skip ? describe.skip : describe;
    block(`${title} [${backend}]`, () => {
      let opened: Awaited<ReturnType<typeof openTestDatabase>> | undefined;
      const ctx: BackendContext = {
        get db() {
          if (!opened) throw new Error("database not open yet: use ctx.db inside tests or hooks");
          return opened.db;
        },
        backend,
        get url() { return opened?.url; },
      };
      // Generous: opening PGlite is CPU-bound and slow when the machine is busy.
      beforeAll(async () => { opened = await openTestDatabase(backend, options.poolSize); }, 180_000);
      afterAll(async () => { await opened?.close(); });
      body(ctx);
    });
  }
}
