import { openPglite } from "./pglite.js";
import { openPostgres } from "./postgres.js";
import { migrate } from "./migrate.js";
import type { Database } from "./port.js";

export interface OpenOptions {
  /** A PostgreSQL URL. When absent, the embedded PGlite database is used. */
  databaseUrl?: string;
  /** Where PGlite keeps its files. Default: `.data/pglite`; `memory://` keeps nothing. */
  dataDir?: string;
  /** Pool size for a server. Default: 10. */
  poolSize?: number;
  /** Apply migrations before returning. Default: true. */
  migrate?: boolean;
}

/**
 * Opens the platform's database: PostgreSQL when `databaseUrl` is given, otherwise the embedded
 * PGlite default, persisted in `dataDir`. Migrations are applied unless told otherwise.
 */
export async function openDatabase(options: OpenOptions = {}): Promise<Database> {
  const db = options.databaseUrl
    ? openPostgres({ connectionString: options.databaseUrl, max: options.poolSize })
    : await openPglite(options.dataDir === "memory://" ? undefined : (options.dataDir ?? ".data/pglite"));
  if (options.migrate !== false) {
    try {
      await migrate(db);
    } catch (error) {
      await db.close().catch(() => {});
      throw error;
    }
  }
  return db;
}
