import { mkdir } from "node:fs/promises";
import { PGlite } from "@electric-sql/pglite";
import type { Database, Queryable, QueryResult, Transaction } from "./port.js";
import { lockDataDir, type DataDirLock } from "./dataDirLock.js";

/**
 * `Database` over PGlite: PostgreSQL compiled to WebAssembly, in this process. It is the embedded
 * default, so a newcomer needs no server. `dataDir` persists to disk; `undefined` keeps it in memory.
 * PGlite has one connection: transactions run one at a time, which keeps SKIP LOCKED trivially right.
 */
export async function openPglite(dataDir?: string, options: { loadDataDir?: Blob } = {}): Promise<Database> {
  let lock: DataDirLock | undefined;
  if (dataDir) {
    await mkdir(dataDir, { recursive: true });
    // One process at a time on a data directory (shared/db/dataDirLock.ts): throws DataDirLockedError.
    lock = lockDataDir(dataDir);
  }
  try {
    // `loadDataDir` starts from a dumped data directory instead of running initdb (much faster).
    const db = await PGlite.create({ dataDir, loadDataDir: options.loadDataDir });
    return wrapPglite(db, () => lock?.release());
  } catch (error) {
    lock?.release();
    throw error;
  }
}

/**
 * A data-directory dump of a fresh in-memory PGlite after `prepare` ran on it (e.g. migrations):
 * pass it as `loadDataDir` to open copies quickly (tests open one database per suite).
 */
export async function pgliteTemplate(prepare: (db: Database) => Promise<unknown>): Promise<Blob> {
  const raw = await PGlite.create();
  try {
    await prepare(wrapPglite(raw));
    return await raw.dumpDataDir("none");
  } finally {
    await raw.close();
  }
}

function wrapPglite(db: PGlite, onClose: () => void = () => {}): Database {
  const wrap = (runner: Pick<PGlite, "query">): Queryable => ({
    async query<R>(text: string, values?: unknown[]): Promise<QueryResult<R>> {
      const result = await runner.query<R>(text, values as unknown[]);
      return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length };
    },
  });
  const top = wrap(db);

  return {
    kind: "pglite",
    query: top.query,
    transaction: (fn) =>
      db.transaction((tx) => {
        const handle: Transaction = { ...wrap(tx), exec: async (script) => { await tx.exec(script); } };
        return fn(handle);
      }),
    async listen(channel, onNotify) {
      const unsubscribe = await db.listen(channel, onNotify);
      return async () => { await unsubscribe(); };
    },
    async close() {
      try {
        if (!db.closed) await db.close();
      } finally {
        onClose();
      }
    },
  };
}
