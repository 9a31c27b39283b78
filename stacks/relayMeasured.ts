/**
 * The relay's measured speed in a cloud function (issue 34): what `npm run bench:cloudrelay`
 * (bench/cloudRelay.ts) wrote to bench/results/cloudRelay.json, read and checked here for the
 * comparison, which prices a delivery at the relay run time it takes instead of an assumed
 * duration. The bench runs the built relay bundle on Node 22 against a TLS PostgreSQL with each
 * cloud's relay held to the CPU share its function gets (a Linux CPU quota): Lambda's memory /
 * 1769 MB, Cloud Run's vCPU for its memory, an Elastic Premium instance's vCPU. Both read that
 * share from a synthesized stack with `relayCpu`, so bench and comparison agree on it.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { TerraformJson } from "./app.js";
import type { Cloud } from "./artifacts.js";
import { CLOUD_RUN_FUNCTION_CPU, ELASTIC_PREMIUM_VCPUS, LAMBDA_MB_PER_VCPU } from "./serviceFacts.js";
import { block, resourcesOf } from "./terraformJson.js";

export const RELAY_RESULTS_FILE = fileURLToPath(new URL("../bench/results/cloudRelay.json", import.meta.url));

export class RelayMeasurementError extends Error {
  override name = "RelayMeasurementError";
}

export type RelayMode = "listening" | "scheduled";

/** What a stack gives its relay function: the CPU share and memory a run has, and how it runs. */
export interface RelayCpu {
  cloud: Cloud;
  /** vCPU the function gets (a share of one when under 1). */
  vcpu: number;
  /** Memory billed per second (GB-seconds); null where the plan bills instances, not GB-seconds (Azure Elastic Premium). */
  memoryMb: number | null;
  mode: RelayMode;
  /** How the vCPU was read, for the reader. */
  basis: string;
}

/** The relay's CPU share, memory and mode as the synthesized stack sets them. */
export function relayCpu(cloud: Cloud, json: TerraformJson): RelayCpu {
  if (cloud === "aws") {
    const fn = resourcesOf(json, "aws_lambda_function").find((f) => f.component === "relay")?.body ?? {};
    const memoryMb = Number(fn.memory_size ?? 128);
    const mode = (block(fn.environment).variables as Record<string, string> | undefined)?.WEBHOOKS_RELAY_MODE === "scheduled" ? "scheduled" : "listening";
    return { cloud, vcpu: round3(memoryMb / LAMBDA_MB_PER_VCPU.value), memoryMb, mode, basis: `memory_size ${memoryMb} MB / ${LAMBDA_MB_PER_VCPU.value} MB per vCPU` };
  }
  if (cloud === "gcp") {
    const service = block(resourcesOf(json, "google_cloudfunctions2_function").find((f) => f.component === "relay")?.body.service_config);
    const memory = String(service.available_memory ?? "256Mi");
    const memoryMb = memory.endsWith("Gi") ? Number.parseFloat(memory) * 1024 : Number.parseFloat(memory);
    const vcpu = Number(service.available_cpu ?? CLOUD_RUN_FUNCTION_CPU.value[memory]);
    const mode = (service.environment_variables as Record<string, string> | undefined)?.WEBHOOKS_RELAY_MODE === "scheduled" ? "scheduled" : "listening";
    return { cloud, vcpu, memoryMb, mode, basis: service.available_cpu ? `available_cpu ${service.available_cpu}` : `the vCPU of available_memory ${memory}` };
  }
  const sku = String(resourcesOf(json, "azurerm_service_plan")[0]?.body.sku_name ?? "?");
  const app = resourcesOf(json, "azurerm_linux_function_app").find((a) => a.component === "relay")?.body ?? {};
  const mode = (app.app_settings as Record<string, string> | undefined)?.WEBHOOKS_RELAY_MODE === "scheduled" ? "scheduled" : "listening";
  return { cloud, vcpu: ELASTIC_PREMIUM_VCPUS.value[sku] ?? Number.NaN, memoryMb: null, mode, basis: `one ${sku} instance's vCPU` };
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** The medians of one cloud's relay, in one mode, at its CPU share: a row of the results file. */
export interface RelayProfile {
  cloud: Cloud;
  mode: RelayMode;
  vcpu: number;
  memoryMb: number | null;
  /** Deliveries per second of one run with a backlog (busy time: invocation start → last delivery written). */
  deliveriesPerSecond: number;
  /** The function process's CPU (all its threads) per delivery over the whole invocation. */
  cpuMsPerDelivery: number;
  /** Memory GB × the invocation's duration, per delivery; null without GB-second billing. */
  gbSecondsPerDelivery: number | null;
  /** Scheduled mode: an invocation with nothing due, the first of a fresh process (connects over TLS, checks the schema, one empty pass); null when listening. */
  idleInvocationSeconds: number | null;
  /** Runs behind the medians, and their spread. */
  runs: number;
  minPerSecond: number;
  maxPerSecond: number;
}

export interface RelayMeasurements {
  /** ISO time the bench finished. */
  measuredAt: string;
  /** The commit the bench ran on (with `+changes` when the tree had uncommitted ones). */
  commit: string;
  machine: { cpus: number; model: string; loadAverage: [number, number]; note: string };
  node: string;
  deliveriesPerRun: number;
  profiles: RelayProfile[];
}

const isNumber = (x: unknown, min = 0): x is number => typeof x === "number" && Number.isFinite(x) && x > min;

/** What is wrong with a results file's content, one line each; empty when it can be used. */
export function measurementProblems(raw: unknown): string[] {
  const m = raw as Partial<RelayMeasurements> | null;
  if (!m || typeof m !== "object") return ["expected a JSON object"];
  const problems: string[] = [];
  if (typeof m.measuredAt !== "string" || Number.isNaN(Date.parse(m.measuredAt))) problems.push("measuredAt: an ISO date is needed (when the bench ran)");
  if (typeof m.commit !== "string" || m.commit === "") problems.push("commit: the commit the bench ran on is needed");
  if (!m.machine || !isNumber(m.machine.cpus) || typeof m.machine.note !== "string" || typeof m.machine.model !== "string" || !Array.isArray(m.machine.loadAverage)) problems.push("machine: { cpus, model, loadAverage, note } is needed (what the figures were taken on)");
  if (typeof m.node !== "string" || !m.node.startsWith("v")) problems.push("node: the Node version the bundle ran on is needed");
  if (!isNumber(m.deliveriesPerRun)) problems.push("deliveriesPerRun: a number > 0 is needed");
  if (!Array.isArray(m.profiles) || m.profiles.length === 0) {
    problems.push("profiles: a non-empty list is needed");
    return problems;
  }
  m.profiles.forEach((p: Partial<RelayProfile>, i) => {
    const say = (what: string) => problems.push(`profiles[${i}]${p?.cloud ? ` (${p.cloud}, ${p.mode})` : ""}: ${what}`);
    if (!p || typeof p !== "object") return say("not an object");
    if (!["aws", "azure", "gcp"].includes(p.cloud as string)) say(`cloud must be aws, azure or gcp, got ${JSON.stringify(p.cloud)}`);
    if (p.mode !== "listening" && p.mode !== "scheduled") say(`mode must be listening or scheduled, got ${JSON.stringify(p.mode)}`);
    for (const key of ["vcpu", "deliveriesPerSecond", "cpuMsPerDelivery", "minPerSecond", "maxPerSecond", "runs"] as const) {
      if (!isNumber(p[key])) say(`${key} must be a number > 0, got ${JSON.stringify(p[key])}`);
    }
    if (p.gbSecondsPerDelivery !== null && !isNumber(p.gbSecondsPerDelivery)) say(`gbSecondsPerDelivery must be a number > 0 or null, got ${JSON.stringify(p.gbSecondsPerDelivery)}`);
    if (p.idleInvocationSeconds !== null && !isNumber(p.idleInvocationSeconds)) say(`idleInvocationSeconds must be a number > 0 or null, got ${JSON.stringify(p.idleInvocationSeconds)}`);
  });
  return problems;
}

/** Parses and checks the bench's results. @throws RelayMeasurementError naming every problem and what to do. */
export function checkMeasurements(raw: unknown, file = RELAY_RESULTS_FILE): RelayMeasurements {
  const problems = measurementProblems(raw);
  if (problems.length > 0) {
    throw new RelayMeasurementError(`${file} cannot be used for the relay's cost per delivery:\n${problems.map((p) => `- ${p}`).join("\n")}\nRun \`npm run bench:cloudrelay\` to measure and rewrite it.`);
  }
  return raw as RelayMeasurements;
}

let cached: RelayMeasurements | undefined;

/** The checked measurements from bench/results/cloudRelay.json (or `file`). */
export function loadRelayMeasurements(file = RELAY_RESULTS_FILE): RelayMeasurements {
  if (file === RELAY_RESULTS_FILE && cached) return cached;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new RelayMeasurementError(`${file} cannot be read (${(error as Error).message}): the comparison prices deliveries at the relay's measured speed. Run \`npm run bench:cloudrelay\` to measure it.`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new RelayMeasurementError(`${file} is not JSON (${(error as Error).message}). Run \`npm run bench:cloudrelay\` to rewrite it.`);
  }
  const checked = checkMeasurements(raw, file);
  if (file === RELAY_RESULTS_FILE) cached = checked;
  return checked;
}

/** One cloud's relay speed as the comparison uses it. */
export interface RelayRate {
  deliveriesPerSecond: number;
  /** Run time one delivery takes: 1 / deliveriesPerSecond. */
  secondsPerDelivery: number;
  /** CPU time of one delivery (vCPU-seconds), for plans billed by instance. */
  cpuSecondsPerDelivery: number;
  /** "measured …" or "scaled from …": how the figure relates to the bench. */
  basis: string;
}

const sameCpu = (a: number, b: number) => Math.abs(a - b) < 0.005;

/**
 * The relay's rate for a stack's CPU share and mode: the measured median where the bench ran at
 * that share; otherwise the measured CPU per delivery scaled to it (the relay is CPU-bound at a
 * fraction of a vCPU), never above the fastest rate measured in that mode.
 * @throws RelayMeasurementError when the file has no run in that mode.
 */
export function relayRate(m: RelayMeasurements, cpu: RelayCpu): RelayRate {
  const inMode = m.profiles.filter((p) => p.mode === cpu.mode);
  if (inMode.length === 0) throw new RelayMeasurementError(`bench/results/cloudRelay.json has no ${cpu.mode} run: run \`npm run bench:cloudrelay\` (BENCH_CLOUDRELAY_MODES includes ${cpu.mode}).`);
  const when = `bench:cloudrelay ${m.measuredAt.slice(0, 10)}`;
  const exact = inMode.find((p) => p.cloud === cpu.cloud && sameCpu(p.vcpu, cpu.vcpu)) ?? inMode.find((p) => sameCpu(p.vcpu, cpu.vcpu));
  if (exact) {
    return { deliveriesPerSecond: exact.deliveriesPerSecond, secondsPerDelivery: 1 / exact.deliveriesPerSecond, cpuSecondsPerDelivery: exact.cpuMsPerDelivery / 1000, basis: `measured at ${exact.vcpu} vCPU (${when}, ${exact.cloud} profile, median of ${exact.runs})` };
  }
  const cpuMs = median(inMode.map((p) => p.cpuMsPerDelivery));
  const fastest = Math.max(...inMode.map((p) => p.deliveriesPerSecond));
  const perSecond = Math.min(fastest, (cpu.vcpu * 1000) / cpuMs);
  return { deliveriesPerSecond: perSecond, secondsPerDelivery: 1 / perSecond, cpuSecondsPerDelivery: cpuMs / 1000, basis: `scaled to ${cpu.vcpu} vCPU from the measured ${+cpuMs.toFixed(2)} CPU-ms per delivery (${when}; no run at that share)` };
}

/**
 * Seconds a scheduled run with nothing due takes at the stack's CPU share: the measured idle
 * invocation (a fresh process's first, so an upper bound for a warm one).
 * @throws RelayMeasurementError when the file has no scheduled run.
 */
export function relayIdleSeconds(m: RelayMeasurements, cpu: RelayCpu): number {
  const scheduled = m.profiles.filter((p) => p.mode === "scheduled" && p.idleInvocationSeconds !== null);
  if (scheduled.length === 0) throw new RelayMeasurementError("bench/results/cloudRelay.json has no scheduled run (its idle invocation prices a scheduled relay's ticks): run `npm run bench:cloudrelay` with BENCH_CLOUDRELAY_MODES including scheduled.");
  const exact = scheduled.find((p) => p.cloud === cpu.cloud && sameCpu(p.vcpu, cpu.vcpu)) ?? scheduled.find((p) => sameCpu(p.vcpu, cpu.vcpu));
  return exact ? exact.idleInvocationSeconds! : median(scheduled.map((p) => p.idleInvocationSeconds!));
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}
