import pg from "pg";
import type { Database, QueryResult, Transaction } from "./port.js";
import { preparedName } from "./prepared.js";

/** A statement for pg: named (prepared once per connection) when it was registered as hot. */
const statement = (text: string, values?: unknown[]): pg.QueryConfig => {
  const name = preparedName(text);
  return name === undefined ? { text, values } : { name, text, values };
};

export interface PostgresOptions {
  connectionString: string;
  /** Pool size. Default: 10. */
  max?: number;
  /** How long to wait for a connection before failing. Default: 5000 ms. */
  connectionTimeoutMillis?: number;
  /** TLS options for every connection (an `sslmode` in the URL is then ignored). Default: from the URL. */
  ssl?: pg.PoolConfig["ssl"];
  /** Called for each new connection (short-lived tokens such as RDS IAM). Default: the URL's password. */
  password?: () => Promise<string>;
}

/** Host, port, user, password and database of a `postgres://` URL; its query parameters are not used. */
function connectionFields(url: string): pg.PoolConfig {
  const u = new URL(url);
  return {
    host: decodeURIComponent(u.hostname).replace(/^\[(.*)\]$/, "$1"),
    port: u.port ? Number(u.port) : 5432,
    user: decodeURIComponent(u.username) || undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    database: decodeURIComponent(u.pathname.replace(/^\//, "")) || undefined,
  };
}

/** `Database` over a `pg.Pool`: for a PostgreSQL server given by `DATABASE_URL`. */
export function openPostgres(options: PostgresOptions): Database {
  const pool = new pg.Pool({
    // pg lets what the URL says win over explicit options, so with explicit TLS or a password
    // function the URL is taken apart here and passed as fields instead.
    ...(options.ssl !== undefined || options.password ? connectionFields(options.connectionString) : { connectionString: options.connectionString }),
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMillis ?? 5000,
    // TCP keepalive: a LISTEN connection idles for long, and a silently cut network must show.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...(options.ssl !== undefined ? { ssl: options.ssl } : {}),
    ...(options.password ? { password: options.password } : {}),
  });
  // An idle client losing its connection (server restart) must not crash the process.
  pool.on("error", () => {});

  const query = async <R>(text: string, values?: unknown[]): Promise<QueryResult<R>> => {
    const result = await pool.query(statement(text, values));
    return { rows: result.rows as R[], rowCount: result.rowCount };
  };

  return {
    kind: "postgres",
    query,
    async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      let broken = false;
      // A server that dies mid-transaction makes the client emit 'error': without a listener
      // that would crash the process; with one, the error surfaces as the query's rejection.
      const onError = () => { broken = true; };
      client.on("error", onError);
      try {
        await client.query("BEGIN");
        const tx: Transaction = {
          query: async <R>(text: string, values?: unknown[]) => {
            const r = await client.query(statement(text, values));
            return { rows: r.rows as R[], rowCount: r.rowCount };
          },
          exec: async (script) => { await client.query(script); },
        };
        const result = await fn(tx);
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => { broken = true; });
        throw error;
      } finally {
        client.off("error", onError);
        client.release(broken);
      }
    },
    /**
     * LISTEN on a connection of its own, kept for as long as the caller listens: when that
     * connection is lost (server restart, terminated backend, cut network), it is opened again
     * with a growing delay (0.25 s to 5 s) and LISTEN re-issued, and `onNotify` is called once
     * with an empty payload, because whatever was notified meanwhile was missed. Only the first
     * subscription's failure reaches the caller.
     */
    async listen(channel, onNotify) {
      const sql = `LISTEN ${pg.escapeIdentifier(channel)}`;
      let client: pg.PoolClient | undefined;
      let stopped = false;
      let retry: NodeJS.Timeout | undefined;
      let delay = 250;
      const handler = (msg: pg.Notification) => {
        if (msg.channel === channel) onNotify(msg.payload ?? "");
      };
      const lost = (c: pg.PoolClient) => {
        if (client !== c) return; // already handled (error, then end)
        client = undefined;
        c.off("notification", handler);
        c.release(true);
        if (!stopped) retry = setTimeout(resubscribe, delay);
      };
      const subscribe = async () => {
        const c = await pool.connect();
        c.on("error", () => lost(c));
        c.on("end", () => lost(c));
        c.on("notification", handler);
        try {
          await c.query(sql);
        } catch (error) {
          c.off("notification", handler);
          c.release(true);
          throw error;
        }
        if (stopped) {
          c.off("notification", handler);
          c.release(true);
          return;
        }
        client = c;
      };
      const resubscribe = () => {
        retry = undefined;
        subscribe().then(
          () => {
            delay = 250;
            if (!stopped) onNotify("");
          },
          () => {
            delay = Math.min(delay * 2, 5_000);
            if (!stopped) retry = setTimeout(resubscribe, delay);
          },
        );
      };
      await subscribe();
      return async () => {
        stopped = true;
        if (retry) clearTimeout(retry);
        const c = client;
        client = undefined;
        if (!c) return;
        c.off("notification", handler);
        await c.query(`UNLISTEN ${pg.escapeIdentifier(channel)}`).catch(() => {});
        c.release();
      };
    },
    async close() {
      await pool.end();
    },
  };
}
