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
  /**
   * Subscribes to NOTIFY on `channel`; resolves to an unsubscribe function. The subscription
   * outlives lost connections: once it is back, `onNotify("")` says notifications may have been
   * missed meanwhile.
   */
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

/** Errors of the operating system's network stack: nothing answered, or the connection broke. */
const NETWORK_ERRNOS = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN", "ECONNABORTED"]);

/**
 * Whether a SQLSTATE means "no usable connection right now", by PostgreSQL's documented classes
 * (Appendix A, "PostgreSQL Error Codes") rather than code by code:
 * - class 08, connection exception: every code;
 * - class 57P, operator intervention on the server (admin or crash shutdown, cannot connect now,
 *   database dropped, idle session timeout);
 * - class 53, insufficient resources (too many connections, out of memory, disk full,
 *   configuration limit exceeded): the server is there but cannot serve;
 * - 55000 object_not_in_prerequisite_state, only as "database … is not currently accepting
 *   connections" (ALTER DATABASE … ALLOW_CONNECTIONS false): the rest of class 55 is about locks
 *   and object states, which a retry later does not fix by itself.
 */
export function isUnavailableSqlState(code: string, message = ""): boolean {
  if (code.startsWith("08") || code.startsWith("57P") || code.startsWith("53")) return true;
  return code === "55000" && /not currently accepting connections/i.test(message);
}

/** True when `error` means "the database is not there right now", as opposed to a bad query. */
export function isUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseUnavailableError) return true;
  const e = error as { code?: unknown; message?: string; cause?: unknown; errors?: unknown[] } | undefined;
  if (!e || typeof e !== "object") return false;
  const code = typeof e.code === "string" ? e.code : "";
  const msg = e.message ?? "";
  if (NETWORK_ERRNOS.has(code)) return true;
  if (/^[0-9A-Z]{5}$/.test(code)) return isUnavailableSqlState(code, msg);
  // pg's own words for a connection that broke, or never came (pool timeout, TLS cut short).
  if (/Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|terminating connection|Client was closed|socket hang up/i.test(msg)) return true;
  // Node wraps several connect failures (IPv4 and IPv6 tried) in an AggregateError.
  if (Array.isArray(e.errors) && e.errors.some(isUnavailable)) return true;
  return e.cause !== undefined && e.cause !== error ? isUnavailable(e.cause) : false;
}
