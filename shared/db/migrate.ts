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
  const files = (await readdir(MIGRATIONS_DIR)).filter((f) => /^\d{3}_.+\.sql$/.test(f)).sort();
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

