/**
 * The database port. The whole core speaks to PostgreSQL through `query(text, values)`, the shape
 * shared by `pg.Client`, `pg.Pool`, `pg.PoolClient` and our PGlite wrapper. Because it is one
 * function, `enqueue(tx, event)` can join the caller's own transaction whatever client they use.
 */
export interface QueryResult<R> {
  rows: R[];
  rowCount: number | null;
}

/** Anything that can run one parameterised statement: a pool, a client, a transaction. */
export interface Queryable {
  query<R = Record<string, unknown>>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
}

/** The handle a `transaction` callback gets: a `Queryable` that can also run a multi-statement script. */
export interface Transaction extends Queryable {
  /** Runs a script of several statements without parameters (migrations). */
  exec(script: string): Promise<void>;
}

export type DatabaseKind = "postgres" | "pglite";

/** A database we own (opened by us): adds transactions, LISTEN and shutdown to `Queryable`. */
export interface Database extends Queryable {
  readonly kind: DatabaseKind;
  /** Runs `fn` in one transaction: COMMIT when it resolves, ROLLBACK when it throws. */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /** Subscribes to NOTIFY on `channel`; resolves to an unsubscribe function. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** Raised when the database cannot be reached; HTTP boundaries turn it into 503. */
export class DatabaseUnavailableError extends Error {
  override name = "DatabaseUnavailableError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

const UNAVAILABLE_CODES = new Set([
  "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EHOSTUNREACH",
  "57P01", "57P02", "57P03", // admin_shutdown, crash_shutdown, cannot_connect_now
  "08000", "08001", "08003", "08004", "08006", // connection exceptions
  "53300", // too_many_connections
]);

/** True when `error` means "the database is not there right now", as opposed to a bad query. */
export function isUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseUnavailableError) return true;
  const e = error as { code?: string; message?: string } | undefined;
  if (e?.code && UNAVAILABLE_CODES.has(e.code)) return true;
  const msg = e?.message ?? "";
  return /Connection terminated|connection timeout|Client has encountered a connection error|terminating connection/i.test(msg);
}
