/** Shared pieces of the outbound benchmark: the receiver process, fresh databases, the payload. */
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createServerDatabase } from "../../test/support/serverDatabase.js";

export const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** A realistic small webhook body (~300 bytes), the same for every contender. */
export function eventData(i: number) {
  return { orderId: `ord_${i}`, customer: `cus_${i % 977}`, amountCents: 1000 + (i % 5000), currency: "EUR", items: [{ sku: "SKU-1", qty: 1 }, { sku: "SKU-2", qty: 2 }] };
}

export interface Receiver {
  url: string;
  stats(): Promise<{ count: number; cpuMs: number }>;
  stop(): Promise<void>;
}

/** Starts the no-op receiver in its own Node process (through tsx, like the bench itself). */
export async function startReceiver(): Promise<Receiver> {
  const child: ChildProcess = fork(fileURLToPath(new URL("./noopReceiver.ts", import.meta.url)), [], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`receiver exited with ${code}`)));
    child.on("message", (m: { ready?: number }) => { if (m.ready) resolve(m.ready); });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    stats: () => new Promise((resolve) => {
      const onMessage = (m: { count?: number; cpuMs?: number }) => {
        if (typeof m.count === "number") { child.off("message", onMessage); resolve(m as { count: number; cpuMs: number }); }
      };
      child.on("message", onMessage);
      child.send("stats");
    }),
    stop: () => new Promise((resolve) => { child.removeAllListeners("exit"); child.once("exit", () => resolve()); child.send("stop"); }),
  };
}

/** Creates an empty database on the server; `drop` removes it (connections forced out). */
export const freshDatabase = (prefix: string) => createServerDatabase(prefix, ADMIN_URL);

/** Resolves once `done()` holds, checking every `everyMs`; rejects after `timeoutMs`. */
export async function waitFor(done: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 5): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** CPU ms this process used since `start` (a `process.cpuUsage()` reading). */
export const cpuMsSince = (start: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
};

/**
 * CPU used by the PostgreSQL backends serving one database (Linux /proc), so a contender's cost
 * can be told apart from the machine's noise: its process CPU plus its backends' CPU per event
 * moves far less with the load than its throughput does. Backends that end mid-run are missed.
 */
export async function databaseCpu(databaseUrl: string): Promise<{ sinceMs(): Promise<number | null> }> {
  const { default: pg } = await import("pg");
  const { readFile } = await import("node:fs/promises");
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  const name = new URL(databaseUrl).pathname.slice(1);
  const read = async (): Promise<Map<number, number> | null> => {
    const { rows } = await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1", [name]);
    const ticks = new Map<number, number>();
    for (const { pid } of rows) {
      try {
        // Fields 14 and 15 (utime, stime) after the parenthesised command name, in clock ticks.
        const stat = await readFile(`/proc/${pid}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        ticks.set(pid, Number(fields[11]) + Number(fields[12]));
      } catch {
        return null; // not Linux, or PostgreSQL runs elsewhere
      }
    }
    return ticks;
  };
  const start = await read();
  return {
    async sinceMs() {
      const end = await read();
      await admin.end();
      if (!start || !end) return null;
      let ticks = 0;
      for (const [pid, t] of end) ticks += t - (start.get(pid) ?? 0);
      return ticks * 10; // USER_HZ is 100 on Linux
    },
  };
}
