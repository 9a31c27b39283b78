/**
 * A database as an earlier release left it, for migration tests: the migrations before a given
 * number applied (and recorded), on each backend the platform runs on.
 */
import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { openPglite } from "../../shared/db/pglite.js";
import { openPostgres } from "../../shared/db/postgres.js";
import type { Database } from "../../shared/db/port.js";
import { createServerDatabase } from "./databases.js";

const DIR = fileURLToPath(new URL("../../shared/sql/migrations/", import.meta.url));

/** Applies the migrations whose number is below `number` ("015": 001 … 014), as the release before it did. */
export async function migrateBefore(db: Database, number: string): Promise<void> {
  const files = (await readdir(DIR)).filter((f) => /^\d{3}_.+\.sql$/.test(f) && f < number).sort();
  await db.transaction(async (tx) => {
    await tx.query("CREATE TABLE schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())");
    for (const file of files) {
      await tx.exec(await readFile(DIR + file, "utf8"));
      await tx.query("INSERT INTO schema_migrations (name) VALUES ($1)", [file]);
    }
  });
}

/** An empty database per backend (no migration applied), closed and dropped by `close`. */
export function emptyDatabases(poolMax: number): { name: "pglite" | "postgres"; open: () => Promise<{ db: Database; close: () => Promise<void> }> }[] {
  return [
    { name: "pglite", open: async () => { const db = await openPglite(); return { db, close: () => db.close() }; } },
    { name: "postgres", open: async () => {
      const { url, drop } = await createServerDatabase();
      const db = openPostgres({ connectionString: url, max: poolMax });
      return { db, close: async () => { await db.close(); await drop(); } };
    } },
  ];
}
