/**
 * The same relay in a cloud function (issue 34; not a test): the built AWS relay bundle
 * (`npm run build:functions`, dist/functions/aws/relay) in its own Node 22 process, loaded and
 * invoked as Lambda does (bench/functions/cloudRelayDriver.mjs), against a TLS-only PostgreSQL 15
 * (the wiring harness's, test/wiring/support/tlsPostgres.ts, verify-full with its private CA) and
 * the outbound bench's no-op receiver (its own process). One invocation per run delivers a
 * backlog of BENCH_CLOUDRELAY_EVENTS deliveries; the bench reports deliveries per second and per
 * GB-second of that invocation (memory GB × its duration).
 *
 * A function gets a share of a CPU, not this machine's two cores: each cloud's run is held to the
 * share its stack gives the relay (read from the synthesized stack: Lambda memory / 1769 MB,
 * Cloud Run's vCPU for its memory, one Elastic Premium EP1 instance) by a Linux CPU quota (a
 * cgroup v1 `cpu` group, as root); a row without a quota shows what the relay does with this
 * machine. The stack's relay settings go in as the stack sets them (relay mode, pool size,
 * timeout, TLS); the bundle is the AWS one for every row, the relay core (shared/cloud/relay.ts)
 * being the same in each cloud's bundle. Modes:
 * - listening (the stacks' default): the run listens; once the backlog is written the bench
 *   brings its deadline forward, and the run stops claiming, finishes and returns;
 * - scheduled: the run drains what is due and returns when idle. Its process first answers one
 *   invocation with nothing due (the idle tick's cost), so the measured one reuses its pool.
 * The medians go to bench/results/cloudRelay.json (with the date, commit and machine), which
 * `npm run compare` reads for the relay's cost per delivery and capacity (stacks/relayMeasured.ts).
 *
 *   npm run bench:cloudrelay
 *   env: BENCH_CLOUDRELAY_EVENTS (3000), BENCH_CLOUDRELAY_ROUNDS (3), BENCH_CLOUDRELAY_MODES (listening,scheduled),
 *        BENCH_CLOUDRELAY_ONLY=aws|gcp|azure|unlimited (one profile), BENCH_CLOUDRELAY_RESULTS (the file; "" writes none),
 *        BENCH_CLOUDRELAY_NODE_OPTIONS (replaces the stack's NODE_OPTIONS, a diagnostic: "--cpu-prof --cpu-prof-dir=/tmp/p"),
 *        BENCH_CLOUDRELAY_COMMIT (the commit measured, for a run from an exported tree)
 * Needs the PostgreSQL 15 binaries (/usr/lib/postgresql/15/bin), root for the CPU quota, and Node 22 from the npm registry.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, rmdirSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { buildFunctions } from "../functions/build.js";
import { migrate } from "../shared/db/migrate.js";
import { openPostgres } from "../shared/db/postgres.js";
import { enqueueMany } from "../shared/outbound/enqueue.js";
import { createSubscription } from "../shared/outbound/subscriptions.js";
import type { Cloud } from "../stacks/artifacts.js";
import { relayCpu, type RelayMeasurements, type RelayMode, type RelayProfile } from "../stacks/relayMeasured.js";
import { synthForChecks } from "../stacks/synthForChecks.js";
import { block, resourcesOf } from "../stacks/terraformJson.js";
import { startFunctionProcess, type FunctionProcess } from "../test/wiring/support/functionProcess.js";
import { node22 } from "../test/wiring/support/node22.js";
import { ADMIN_ROLE, startTlsPostgres, tlsPostgresUnavailable, type TlsPostgres } from "../test/wiring/support/tlsPostgres.js";
import { backendCpu, cpuBetween } from "./backendCpu.js";
import { eventData, receiverWindow, startReceiver, waitFor, type Receiver } from "./outbound/support.js";
import { median, printTable } from "./table.js";
import { useThrowawayEncryptionKey } from "./throwawayKey.js";
import { runBench } from "./runBench.js";

const ENCRYPTION_KEYS = useThrowawayEncryptionKey();
const EVENTS = Number(process.env.BENCH_CLOUDRELAY_EVENTS ?? 3000);
const ROUNDS = Number(process.env.BENCH_CLOUDRELAY_ROUNDS ?? 3);
const MODES = (process.env.BENCH_CLOUDRELAY_MODES ?? "listening,scheduled").split(",").map((m) => m.trim()) as RelayMode[];
const ONLY = process.env.BENCH_CLOUDRELAY_ONLY;
const root = fileURLToPath(new URL("..", import.meta.url));
const RESULTS = process.env.BENCH_CLOUDRELAY_RESULTS ?? join(root, "bench/results/cloudRelay.json");
const DRIVER = join(root, "bench/functions/cloudRelayDriver.mjs");
const CGROUP_CPU = "/sys/fs/cgroup/cpu";

/** One row of runs: a cloud's relay at its CPU share (or this machine's, `unlimited`). */
interface Profile { key: Cloud | "unlimited"; vcpu: number | null; memoryMb: number | null; basis: string; env: Record<string, string>; timeoutSeconds: number }

interface Run {
  profile: Profile["key"]; mode: RelayMode; round: number; deliveries: number;
  /** Invocation start → the last delivery written. */
  busySeconds: number;
  invocationSeconds: number;
  /** The function process's CPU over the invocation, and the PostgreSQL backends' and the receiver's over the same window. */
  cpuMs: number; dbCpuMs: number | null; receiverCpuMs: number;
  maxRssMb: number;
  /** Scheduled mode: the invocation before, with nothing due (cold: connects, checks the schema). */
  idleSeconds: number | null;
}

/** The relay's settings as each stack gives them; its database and CA are the bench's. */
function profiles(): Profile[] {
  const stacks = synthForChecks();
  const aws = resourcesOf(stacks.aws, "aws_lambda_function").find((f) => f.component === "relay")!.body;
  const vars = block(aws.environment).variables as Record<string, string>;
  // What the relay reads to tune itself, as the AWS stack sets it (the mode is set per run).
  // BENCH_CLOUDRELAY_NODE_OPTIONS replaces the stack's NODE_OPTIONS (a diagnostic: what --enable-source-maps costs).
  const env = { WEBHOOKS_DB_POOL_MAX: vars.WEBHOOKS_DB_POOL_MAX ?? "3", NODE_OPTIONS: process.env.BENCH_CLOUDRELAY_NODE_OPTIONS ?? vars.NODE_OPTIONS ?? "" };
  const timeoutSeconds = Number(aws.timeout);
  const clouds: Profile[] = (["aws", "gcp", "azure"] as const).map((cloud) => {
    const c = relayCpu(cloud, stacks[cloud]);
    return { key: cloud, vcpu: c.vcpu, memoryMb: c.memoryMb, basis: c.basis, env, timeoutSeconds };
  });
  const all = [...clouds, { key: "unlimited" as const, vcpu: null, memoryMb: clouds[0]!.memoryMb, basis: `no CPU quota: this machine's ${availableParallelism()} shared cores`, env, timeoutSeconds }];
  return ONLY ? all.filter((p) => p.key === ONLY) : all;
}

/** Holds `pid` (every thread) to `vcpu` of a CPU with a CFS quota; `release` removes the group once the process is gone. */
function limitCpu(pid: number, vcpu: number): { release(): void } {
  const dir = join(CGROUP_CPU, `bench-cloudrelay-${pid}`);
  mkdirSync(dir);
  writeFileSync(join(dir, "cpu.cfs_period_us"), "100000");
  writeFileSync(join(dir, "cpu.cfs_quota_us"), String(Math.round(vcpu * 100_000)));
  writeFileSync(join(dir, "cgroup.procs"), String(pid));
  return { release: () => { try { rmdirSync(dir); } catch { /* the kernel frees it with its last task */ } } };
}

/** Why the CPU quota cannot be set here, or undefined when it can. */
function cpuQuotaUnavailable(): string | undefined {
  try {
    const probe = join(CGROUP_CPU, `bench-cloudrelay-probe-${process.pid}`);
    mkdirSync(probe);
    rmdirSync(probe);
    return undefined;
  } catch (error) {
    return `cannot make a CPU quota group under ${CGROUP_CPU} (${(error as Error).message}; needs root and cgroup v1's cpu controller)`;
  }
}

let counter = 0;

async function runOnce(p: Profile, mode: RelayMode, round: number, server: TlsPostgres, receiver: Receiver): Promise<Run> {
  const name = `bench_cloudrelay_${process.pid}_${++counter}`;
  const su = server.superuser();
  await su.connect();
  await su.query(`CREATE DATABASE ${name} OWNER ${ADMIN_ROLE}`);
  const url = server.adminUrl.replace(/\/webhooks$/, `/${name}`);
  const db = openPostgres({ connectionString: url, ssl: server.ssl, max: 2 });
  let fp: FunctionProcess | undefined;
  let quota: { release(): void } | undefined;
  try {
    await migrate(db);
    await createSubscription(db, { url: `${receiver.url}/cloudrelay`, eventTypes: ["bench.*"] });
    fp = await startFunctionProcess({
      driver: DRIVER,
      bundleDir: join(root, "dist/functions/aws/relay"),
      env: {
        ...p.env, WEBHOOKS_RELAY_MODE: mode, WEBHOOKS_DATABASE_URL: url, WEBHOOKS_DATABASE_TLS: "verify-full", NODE_EXTRA_CA_CERTS: server.caFile,
        ENCRYPTION_KEYS, ALLOWED_DESTINATIONS: "127.0.0.1", LOG_LEVEL: "warn", NODE_ENV: "production",
      },
      args: [String(p.timeoutSeconds)],
      // Without this process's tsx loader: the bundle is plain JavaScript, started as Lambda starts it.
      execArgv: [],
    });
    if (p.vcpu !== null) quota = limitCpu(await fp.invoke<number>("pid"), p.vcpu);
    const idle = mode === "scheduled" ? await fp.invoke<{ wallMs: number }>("invoke", {}, 120_000) : null;
    for (let from = 0; from < EVENTS; from += 500) {
      const batch = Array.from({ length: Math.min(EVENTS, from + 500) - from }, (_, k) => ({ id: `evt_${from + k}`, type: "bench.created", data: eventData(from + k) }));
      await db.transaction((tx) => enqueueMany(tx, batch));
    }
    const watch = new pg.Client({ connectionString: url.replace(/^postgres:/, "postgresql:"), ssl: server.ssl });
    await watch.connect();
    try {
      const rx = await receiverWindow(receiver.stats);
      const rxStart = (await receiver.stats()).count;
      const dbBefore = await backendCpu(watch);
      const started = performance.now();
      const invocation = fp.invoke<{ wallMs: number; cpuMs: number; maxRssMb: number; summary: { deliveriesAttempted?: number } }>("invoke", {}, 900_000);
      let failed: unknown;
      invocation.catch((error: unknown) => { failed = error; });
      // The receiver's count first (no database work while the relay runs), then the completions.
      await waitFor(async () => { if (failed) throw failed; return (await receiver.stats()).count - rxStart >= EVENTS; }, 600_000, 50).catch((error: unknown) => { throw new Error(`${p.key}/${mode}: the backlog did not go out (${(error as Error).message}); function output:\n${fp!.output().slice(-3000)}`); });
      await waitFor(async () => (await watch.query<{ n: number }>("SELECT count(*)::int AS n FROM outbound_deliveries WHERE status = 'delivered'")).rows[0]!.n >= EVENTS, 60_000, 10);
      const busySeconds = (performance.now() - started) / 1000;
      if (mode === "listening") await fp.invoke("expire");
      const result = await invocation;
      const dbAfter = await backendCpu(watch);
      const received = await rx.end();
      return {
        profile: p.key, mode, round, deliveries: EVENTS, busySeconds, invocationSeconds: result.wallMs / 1000,
        cpuMs: result.cpuMs, dbCpuMs: dbBefore && dbAfter ? cpuBetween(dbBefore, dbAfter) : null, receiverCpuMs: received!.cpuMs,
        maxRssMb: result.maxRssMb, idleSeconds: idle ? idle.wallMs / 1000 : null,
      };
    } finally {
      await watch.end();
    }
  } finally {
    await fp?.stop();
    quota?.release();
    await db.close();
    await su.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await su.end();
  }
}

function profileOf(p: Profile, mode: RelayMode, runs: Run[]): RelayProfile | undefined {
  if (runs.length === 0 || p.key === "unlimited" || p.vcpu === null) return undefined;
  const rates = runs.map((r) => r.deliveries / r.busySeconds);
  const gbs = runs.map((r) => (p.memoryMb === null ? null : ((p.memoryMb / 1024) * r.invocationSeconds) / r.deliveries));
  return {
    cloud: p.key, mode, vcpu: p.vcpu, memoryMb: p.memoryMb,
    deliveriesPerSecond: round(median(rates), 1), cpuMsPerDelivery: round(median(runs.map((r) => r.cpuMs / r.deliveries)), 4),
    gbSecondsPerDelivery: p.memoryMb === null ? null : round(median(gbs as number[]), 7),
    idleInvocationSeconds: mode === "scheduled" ? round(median(runs.map((r) => r.idleSeconds!)), 3) : null,
    runs: runs.length, minPerSecond: round(Math.min(...rates), 1), maxPerSecond: round(Math.max(...rates), 1),
  };
}
const round = (x: number, digits: number) => Number(x.toFixed(digits));

/**
 * The commit measured: BENCH_CLOUDRELAY_COMMIT when set (a run from an exported tree, e.g.
 * `git archive HEAD`, so that other uncommitted work is not measured), else this checkout's HEAD,
 * marked `+changes` when shared/ or functions/ differ from it.
 */
function commitOf(): string {
  if (process.env.BENCH_CLOUDRELAY_COMMIT) return process.env.BENCH_CLOUDRELAY_COMMIT;
  try {
    const sha = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--", "shared", "functions"], { cwd: root, encoding: "utf8" }).trim() !== "";
    return `${sha}${dirty ? "+changes" : ""}`;
  } catch {
    return "unknown (not a git checkout; set BENCH_CLOUDRELAY_COMMIT)";
  }
}

async function main(): Promise<void> {
  const missing = tlsPostgresUnavailable();
  if (missing) throw new Error(`${missing}: the bench needs a TLS PostgreSQL like the clouds' (the wiring harness's).`);
  if (!(await node22())) throw new Error("Node 22 (the functions' runtime) could not be had from the npm registry (npx -p node@22).");
  const all = profiles();
  const noQuota = cpuQuotaUnavailable();
  const chosen = noQuota ? all.filter((p) => p.vcpu === null) : all;
  if (noQuota) console.log(`!!! ${noQuota}: only the row without a quota runs, and no results file is written (a cloud's figures need its CPU share).`);
  if (chosen.length === 0) throw new Error("nothing to run (BENCH_CLOUDRELAY_ONLY names a cloud, and the CPU quota cannot be set)");
  console.log("building the function bundles…");
  await buildFunctions();
  const server = await startTlsPostgres();
  const receiver = await startReceiver();
  const startLoad = loadavg();
  const runs: Run[] = [];
  let version = "";
  console.log(`cloud relay bench: ${EVENTS} deliveries per invocation, ${ROUNDS} interleaved rounds, modes ${MODES.join(", ")}; TLS PostgreSQL 15 on :${server.port}, receiver ${receiver.url} (own process)`);
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const order = chosen.flatMap((p) => MODES.map((mode) => ({ p, mode })));
      // ABBA: every other round in reverse, so no profile always runs first or last.
      for (const { p, mode } of round % 2 === 1 ? order : order.reverse()) {
        const r = await runOnce(p, mode, round, server, receiver);
        runs.push(r);
        console.log(`  round ${round}: ${p.key} (${p.vcpu ?? "no quota"} vCPU), ${mode}: ${Math.round(r.deliveries / r.busySeconds)}/s, invocation ${r.invocationSeconds.toFixed(1)} s, ${((r.cpuMs / r.deliveries) * 1000).toFixed(0)} µs CPU per delivery`);
      }
    }
    version = execFileSync((await node22())!, ["--version"], { encoding: "utf8" }).trim();
  } finally {
    await receiver.stop();
    await server.stop();
  }
  const endLoad = loadavg();

  const rows = [["relay (AWS bundle, Node " + version + ")", "mode", "vCPU", "memory MB", "deliveries/s (median)", "min", "max", "invocation s", "CPU µs/delivery", "CPU used / share", "PostgreSQL µs/delivery", "receiver µs/delivery", "peak RSS MB", "deliveries per GB-s", "idle invocation ms"]];
  const fmt = (x: number | null, digits = 0) => (x === null ? "-" : x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }));
  const profilesOut: RelayProfile[] = [];
  for (const p of chosen) {
    for (const mode of MODES) {
      const rs = runs.filter((r) => r.profile === p.key && r.mode === mode);
      if (rs.length === 0) continue;
      const rates = rs.map((r) => r.deliveries / r.busySeconds);
      const perDelivery = (pick: (r: Run) => number | null) => { const xs = rs.map(pick).filter((x): x is number => x !== null); return xs.length ? median(xs) : null; };
      const cpuUs = perDelivery((r) => (r.cpuMs / r.deliveries) * 1000)!;
      const share = perDelivery((r) => r.cpuMs / 1000 / r.invocationSeconds / (p.vcpu ?? availableParallelism()));
      const perGbs = p.memoryMb === null ? null : perDelivery((r) => r.deliveries / ((p.memoryMb! / 1024) * r.invocationSeconds));
      rows.push([`${p.key}: ${p.basis}`, mode, p.vcpu === null ? "-" : String(p.vcpu), p.memoryMb === null ? "- (instance)" : String(p.memoryMb),
        fmt(median(rates)), fmt(Math.min(...rates)), fmt(Math.max(...rates)), fmt(perDelivery((r) => r.invocationSeconds), 1), fmt(cpuUs),
        share === null ? "-" : `${(share * 100).toFixed(0)}%`, fmt(perDelivery((r) => (r.dbCpuMs === null ? null : (r.dbCpuMs / r.deliveries) * 1000))),
        fmt(perDelivery((r) => (r.receiverCpuMs / r.deliveries) * 1000)), fmt(perDelivery((r) => r.maxRssMb)), fmt(perGbs), fmt(perDelivery((r) => (r.idleSeconds === null ? null : r.idleSeconds * 1000)))]);
      const out = profileOf(p, mode, rs);
      if (out) profilesOut.push(out);
    }
  }
  console.log("");
  printTable(rows);
  console.log(`\nload average at start ${startLoad.map((x) => x.toFixed(1)).join(" ")}, at end ${endLoad.map((x) => x.toFixed(1)).join(" ")} on ${availableParallelism()} cores (${cpus()[0]?.model ?? "?"}), shared with other work: the quota caps a run's CPU, it cannot give back what other processes take.`);
  console.log("deliveries/s: the backlog over the invocation's busy time (start → last delivery written). Per GB-s: deliveries / (memory GB × the invocation's duration).");
  console.log("CPU used / share: the function's CPU over its invocation against the vCPU it was given (near 100 %: CPU-bound; the cloud's CPU, not PostgreSQL or the receiver, sets its speed).");

  if (!RESULTS || noQuota || ONLY) {
    console.log(`\nno results file written (${!RESULTS ? "BENCH_CLOUDRELAY_RESULTS is empty" : noQuota ? "no CPU quota" : "BENCH_CLOUDRELAY_ONLY ran one profile"}).`);
    return;
  }
  const results: RelayMeasurements & { "//": string; runs: Run[]; command: string; database: string } = {
    "//": "Written by `npm run bench:cloudrelay` (bench/cloudRelay.ts); read by `npm run compare` (stacks/relayMeasured.ts) for the relay's cost per delivery and capacity. Rerun the bench to update it, do not edit by hand.",
    measuredAt: new Date().toISOString(),
    commit: commitOf(),
    machine: {
      cpus: availableParallelism(), model: cpus()[0]?.model ?? "?", loadAverage: [round(startLoad[0]!, 1), round(endLoad[0]!, 1)],
      note: "a shared 2-core machine (other sessions' work ran beside the bench); each cloud's relay held to its CPU share by a Linux CFS quota",
    },
    node: version,
    command: `BENCH_CLOUDRELAY_EVENTS=${EVENTS} BENCH_CLOUDRELAY_ROUNDS=${ROUNDS} BENCH_CLOUDRELAY_MODES=${MODES.join(",")} npm run bench:cloudrelay`,
    database: "PostgreSQL 15 on this machine, TLS only (verify-full, private CA), fsync off; the relay logs in as the database owner",
    deliveriesPerRun: EVENTS,
    profiles: profilesOut,
    runs: runs.map((r) => ({ ...r, busySeconds: round(r.busySeconds, 3), invocationSeconds: round(r.invocationSeconds, 3), cpuMs: Math.round(r.cpuMs), dbCpuMs: r.dbCpuMs === null ? null : Math.round(r.dbCpuMs), receiverCpuMs: Math.round(r.receiverCpuMs), maxRssMb: Math.round(r.maxRssMb), idleSeconds: r.idleSeconds === null ? null : round(r.idleSeconds, 3) })),
  };
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(RESULTS, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nwrote ${RESULTS}: \`npm run compare\` prices the relay's deliveries with it.`);
}

runBench("bench:cloudrelay", main);
