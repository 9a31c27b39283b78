/** Shared pieces of the outbound benchmark: the receiver process, fresh databases, the payload. */
import { fork, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createServerDatabase } from "../../test/support/serverDatabase.js";
import { backendCpu, cpuBetween } from "../backendCpu.js";

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

/** Reads the receiver's POST count and CPU ms so far (`Receiver.stats`), handed to each run. */
export type ReceiverStats = Receiver["stats"];

/** The whole machine's CPU over a window: every process's (busy) and what the cores could give (total), ms. */
export interface MachineCpu { busyMs: number; totalMs: number }

/** Every core's time so far, from /proc/stat's `cpu` line (clock ticks of 10 ms); null without /proc. */
function machineTicks(): { busy: number; total: number } | null {
  try {
    const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
    const [user, nice, system, idle, iowait, irq, softirq, steal] = fields as [number, number, number, number, number, number, number, number];
    const total = user + nice + system + idle + iowait + irq + softirq + steal;
    return { busy: total - idle - iowait, total };
  } catch {
    return null;
  }
}

/** What the receiver and the whole machine did over one run's measured window. */
export interface WindowReading { posts: number; cpuMs: number; machine: MachineCpu | null }

/**
 * The receiver's CPU and POSTs over one run's measured window: everything shares the machine's
 * cores, so what the receiver burns per event limits every contender's rate as much as their own
 * CPU does. It also reads the whole machine's CPU over the same window (/proc/stat): beyond the
 * contender, its PostgreSQL backends and the receiver, what other processes (other tenants,
 * PostgreSQL's background writers) took, and how long the cores sat idle. Without a reader
 * (warm-up runs) `end()` gives null.
 */
export async function receiverWindow(stats?: ReceiverStats): Promise<{ end(): Promise<WindowReading | null> }> {
  const start = stats ? await stats() : null;
  const machineStart = machineTicks();
  return {
    async end() {
      if (!stats || !start) return null;
      const machineEnd = machineTicks();
      const now = await stats();
      const machine = machineStart && machineEnd ? { busyMs: (machineEnd.busy - machineStart.busy) * 10, totalMs: (machineEnd.total - machineStart.total) * 10 } : null;
      return { posts: now.count - start.count, cpuMs: now.cpuMs - start.cpuMs, machine };
    },
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
 * CPU used by the PostgreSQL backends serving one database (bench/backendCpu.ts), so a
 * contender's cost can be told apart from the machine's noise: its process CPU plus its backends'
 * CPU per event moves far less with the load than its throughput does.
 */
export async function databaseCpu(databaseUrl: string): Promise<{ sinceMs(): Promise<number | null> }> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const start = await backendCpu(client);
  return {
    async sinceMs() {
      const end = await backendCpu(client);
      await client.end();
      return start && end ? cpuBetween(start, end) : null;
    },
  };
}

/** What one contender's run measured. */
export interface RunResult {
  events: number;
  enqueuePerSecond: number;
  seconds: number;
  perSecond: number;
  cpuMsPerEvent: number;
  /** CPU of the PostgreSQL backends serving the run, per event (null where /proc cannot tell). */
  dbCpuMsPerEvent: number | null;
  /** CPU of the receiver process over the run, per event (null when no reader was given). */
  receiverCpuMsPerEvent: number | null;
  /** Every process's CPU on the machine over the run, and what the cores could have given (null without /proc or a reader). */
  machine: MachineCpu | null;
  breakdown: string[];
}

/** A run's result from its raw measures; the CPU line closes the contender's own breakdown. */
export function runResult(
  m: {
    events: number; enqueueSeconds: number; seconds: number; cpuMs: number; dbCpuMs: number | null; process: string;
    /** The receiver over the same window, and how many POSTs it should have seen (0 without HTTP). */
    receiver: WindowReading | null; expectedPosts: number;
  },
  breakdown: string[],
): RunResult {
  const perEvent = (ms: number) => ((ms / m.events) * 1000).toFixed(0);
  const cpuLine = `${m.process} CPU: ${perEvent(m.cpuMs)} µs per event (${((m.cpuMs / (m.seconds * 1000)) * 100).toFixed(0)}% of one core)`
    + (m.dbCpuMs === null ? "" : `; its PostgreSQL backends: ${perEvent(m.dbCpuMs)} µs per event`)
    + (m.receiver === null ? "" : `; receiver: ${perEvent(m.receiver.cpuMs)} µs per event`
      + (m.receiver.posts === m.expectedPosts ? "" : ` (it counted ${m.receiver.posts} POSTs, expected ${m.expectedPosts})`));
  return {
    events: m.events,
    enqueuePerSecond: m.events / m.enqueueSeconds,
    seconds: m.seconds,
    perSecond: m.events / m.seconds,
    cpuMsPerEvent: m.cpuMs / m.events,
    dbCpuMsPerEvent: m.dbCpuMs === null ? null : m.dbCpuMs / m.events,
    receiverCpuMsPerEvent: m.receiver === null ? null : m.receiver.cpuMs / m.events,
    machine: m.receiver?.machine ?? null,
    breakdown: [...breakdown, cpuLine],
  };
}
