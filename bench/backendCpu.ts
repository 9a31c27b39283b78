/**
 * CPU time of the PostgreSQL backends connected to one database, read from /proc (Linux, server on
 * this machine), so the benchmark can say how much of PostgreSQL's work each contender costs per
 * event. Background processes (WAL writer, checkpointer) serve every database and are left out.
 * Resolution: one clock tick (10 ms), fine over runs of seconds.
 */
import { readFile } from "node:fs/promises";
import type pg from "pg";

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU ms used so far by each backend (pid) of `client`'s database; null when /proc cannot be read. */
export async function backendCpu(client: pg.Client): Promise<Map<number, number> | null> {
  const r = await client.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'");
  const byPid = new Map<number, number>();
  for (const { pid } of r.rows) {
    let stat: string;
    try {
      stat = await readFile(`/proc/${pid}/stat`, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT" && byPid.size > 0) continue; // it just closed
      return null; // another machine's server, or no /proc
    }
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th fields.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    byPid.set(pid, ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND);
  }
  return byPid;
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
