/**
 * CPU time of the PostgreSQL backends connected to one database, read from /proc (Linux, server on
 * this machine), so the benchmark can say how much of PostgreSQL's work each contender costs per
 * event. Background processes (WAL writer, checkpointer) serve every database and are left out.
 * Resolution: the scheduler's nanoseconds (/proc/<pid>/schedstat, its first field: time on a CPU)
 * where the kernel has it, else one clock tick (10 ms, /proc/<pid>/stat): a tick is too coarse for
 * short runs spread over several backends (±1 tick per backend was ±5 % of a 2 000-event run).
 */
import { readFile } from "node:fs/promises";
import type pg from "pg";

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU ms used so far by each backend (pid) of `client`'s database; null when /proc cannot be read. */
export async function backendCpu(client: pg.Client): Promise<Map<number, number> | null> {
  const r = await client.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'");
  const byPid = new Map<number, number>();
  for (const { pid } of r.rows) {
    let ms: number;
    try {
      ms = await cpuMsOf(pid);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT" && byPid.size > 0) continue; // it just closed
      return null; // another machine's server, or no /proc
    }
    byPid.set(pid, ms);
  }
  return byPid;
}

/** CPU ms used so far by process `pid`: schedstat's nanoseconds, or stat's ticks (user + system). */
async function cpuMsOf(pid: number): Promise<number> {
  try {
    const ns = Number((await readFile(`/proc/${pid}/schedstat`, "utf8")).split(" ")[0]);
    if (Number.isFinite(ns)) return ns / 1e6;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") throw error; // the process is gone
  }
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  // Fields after the parenthesised command name; utime and stime are the 14th and 15th fields.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/**
 * CPU ms the backends used between two readings. Pool connections come and go (pg closes idle
 * ones after 10 s): a new backend counts from zero, and one gone since `before` did no work that
 * is counted (it was idle before it closed).
 */
export function cpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let ms = 0;
  for (const [pid, used] of after) ms += used - (before.get(pid) ?? 0);
  return ms;
}
