import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { Database } from "./port.js";

const MIGRATIONS_DIR = fileURLToPath(new URL("../sql/migrations/", import.meta.url));

/** A lock id only this project uses, so concurrent starts apply each migration once. */
const MIGRATION_LOCK = 7_310_420_117;

/**
 * Applies `shared/sql/migrations/NNN_name.sql` in order, each once, each in its own transaction.
 * Safe to call on every start and from several processes at once.
 */
export async function migrate(db: Database): Promise<string[]> {
  const files = await migrationFiles();
  const applied: string[] = [];
  await db.transaction(async (tx) => {
    // Must come first: the lock serialises concurrent starts before anyone reads the table.
    await tx.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      name text PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const done = new Set(
      (await tx.query<{ name: string }>("SELECT name FROM schema_migrations")).rows.map((r) => r.name),
    );
    for (const file of files) {
      if (done.has(file)) continue;
      const sql = await readFile(MIGRATIONS_DIR + file, "utf8");
      await tx.exec(sql);
      await tx.query("INSERT INTO schema_migrations (name) VALUES ($1)", [file]);
      applied.push(file);
    }
  });
  return applied;
}


async function migrationFiles(): Promise<string[]> {
  return (await readdir(MIGRATIONS_DIR)).filter((f) => /^\d{3}_.+\.sql$/.test(f)).sort();
}

/** The database lacks migrations this code needs; the message says which and what to do. */
export class SchemaNotReadyError extends Error {
  override name = "SchemaNotReadyError";
  constructor(readonly missing: string[], hint: string) {
    super(`The database schema is missing ${missing.length} migration(s) this code needs (${missing.join(", ")}). ${hint}`);
  }
}

/**
 * Checks, without changing anything, that every migration this code ships has been applied: for
 * processes that must not run DDL (the cloud functions connect as a role that cannot). Throws
 * SchemaNotReadyError naming the missing ones; `hint` says how to apply them.
 */
export async function assertMigrated(db: Database, hint = "Apply the migrations first."): Promise<void> {
  const files = await migrationFiles();
  const present = await db.query<{ table: string | null }>("SELECT to_regclass('schema_migrations')::text AS table");
  if (present.rows[0]?.table == null) throw new SchemaNotReadyError(files, hint);
  const done = new Set((await db.query<{ name: string }>("SELECT name FROM schema_migrations")).rows.map((r) => r.name));
  const missing = files.filter((f) => !done.has(f));
  if (missing.length > 0) throw new SchemaNotReadyError(missing, hint);
}
