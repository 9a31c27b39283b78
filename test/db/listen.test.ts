/**
 * LISTEN survives its connection: after the backend is terminated (what a database restart, a
 * failover or an admin does to it), the subscription comes back by itself, says it may have missed
 * notifications, and receives the next ones. Before, the relay lost its instant wake-up until a
 * restart and fell back to its poll.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { openPostgres } from "../../shared/db/postgres.js";
import type { Database } from "../../shared/db/port.js";
import { ADMIN_URL, createServerDatabase, postgresAvailable } from "../support/databases.js";

let db: Database | undefined;
let database: Awaited<ReturnType<typeof createServerDatabase>> | undefined;
let skip = false;

beforeAll(async () => {
  if (!(await postgresAvailable())) {
    if (process.env.CI && process.env.CI !== "false") throw new Error("PostgreSQL is not available; CI must run the LISTEN test.");
    console.warn("\n!!! PostgreSQL is not available: the LISTEN reconnection test is SKIPPED.\n");
    skip = true;
    return;
  }
  database = await createServerDatabase("wh_listen");
  db = openPostgres({ connectionString: database.url, max: 4 });
});
afterAll(async () => {
  await db?.close();
  await database?.drop();
});

async function listeners(channel: string): Promise<number[]> {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND query = $2", [new URL(database!.url).pathname.slice(1), `LISTEN "${channel}"`]);
    return rows.map((r) => r.pid);
  } finally {
    await admin.end();
  }
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false> | T | undefined | false, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("Database.listen on PostgreSQL", () => {
  it("re-subscribes after its backend is terminated, wakes the listener once, and gets later notifications", async (t) => {
    if (skip) return t.skip();
    const got: string[] = [];
    const unlisten = await db!.listen("wakeups", (payload) => got.push(payload));
    await db!.query("SELECT pg_notify('wakeups', 'before')");
    await until("the first notification", () => got.includes("before"));

    const [pid] = await until("one LISTEN connection", async () => { const p = await listeners("wakeups"); return p.length === 1 && p; });
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query("SELECT pg_terminate_backend($1)", [pid]);
    await admin.end();

    await until("a new LISTEN connection", async () => { const p = await listeners("wakeups"); return p.length === 1 && p[0] !== pid; });
    await until("the 'may have missed some' wake-up", () => got.includes(""));
    await db!.query("SELECT pg_notify('wakeups', 'after')");
    await until("a notification after the reconnection", () => got.includes("after"));
    expect(got.filter((p) => p === "")).toHaveLength(1);

    await unlisten();
    await until("no LISTEN connection after unlisten", async () => (await listeners("wakeups")).length === 0);
  });
});
