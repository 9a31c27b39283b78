/**
 * The relay's rows of the comparison (issue 24): its mode, how many runs at once, the latency from
 * a commit to the first attempt and how close to its due time a retry goes, read from each
 * synthesized stack (mode, schedule, timeout, instances) and, for the listening mode, the figures
 * the wiring tests measure (test/wiring/<cloud>.test.ts, "issue 24": 100 events per source,
 * the stack's schedule played at half speed, 2 shared CPUs at load ~24): p50 0.09-0.30 s, p99
 * 0.3-1.2 s; a backoff retry 0.05-0.4 s after its due time, Retry-After 3 s honoured in 3.1-3.4 s;
 * inbox retries 1.1-1.5 s after theirs (the sweep looks every INBOX_POLL_MS, 1 s).
 * Its speed per run and the capacity that gives are bench:cloudrelay's measurement at the stack's
 * CPU share (bench/results/cloudRelay.json, stacks/relayMeasured.ts).
 */
import type { TerraformJson } from "./app.js";
import type { Cloud } from "./artifacts.js";
import { block, resourcesOf } from "./terraformJson.js";
import { LISTENING_RESERVE_SECONDS } from "./pricesEstimate.js";
import { loadRelayMeasurements, relayCpu, relayRate, type RelayMeasurements } from "./relayMeasured.js";

const MEASURED = { latency: "p50 0.1-0.3 s, p99 < 1.2 s (wiring tests)", retry: "within ~1 s of due (poll 1 s; measured 0.05-1.5 s)" };

/** `runSecondsPerInterval`: seconds of relay runs claiming per interval (each run: its budget less the pass reserve). */
interface RelayShape { mode: string; intervalSeconds: number; runsAtOnce: string; runSecondsPerInterval: number }

function shape(cloud: Cloud, json: TerraformJson): RelayShape {
  if (cloud === "aws") {
    const fn = resourcesOf(json, "aws_lambda_function").find((f) => f.component === "relay")?.body ?? {};
    const minutes = Number(/rate\((\d+) minutes?\)/.exec(String(resourcesOf(json, "aws_scheduler_schedule")[0]?.body.schedule_expression))?.[1] ?? 1);
    const mode = String((block(fn.environment).variables as Record<string, string> | undefined)?.WEBHOOKS_RELAY_MODE ?? "scheduled");
    const runs = mode === "listening" ? Math.ceil(Number(fn.timeout) / (minutes * 60)) : 1;
    return { mode, intervalSeconds: minutes * 60, runsAtOnce: `${runs} (ceil(timeout ${fn.timeout} s / interval)), more only while the scheduler retries a refused tick`, runSecondsPerInterval: Math.max(0, Number(fn.timeout) - LISTENING_RESERVE_SECONDS) };
  }
  if (cloud === "azure") {
    const app = resourcesOf(json, "azurerm_linux_function_app").find((a) => a.component === "relay")?.body ?? {};
    const settings = (app.app_settings ?? {}) as Record<string, string>;
    const minutes = Number(/\*\/(\d+)/.exec(String(settings.WEBHOOKS_RELAY_SCHEDULE))?.[1] ?? 1);
    const mode = String(settings.WEBHOOKS_RELAY_MODE ?? "scheduled");
    const timers = mode === "listening" ? 2 : 1;
    return { mode, intervalSeconds: minutes * 60, runsAtOnce: mode === "listening" ? "2 (timers relay and relayOffset, half an interval apart, each a singleton)" : "1 (the relay timer, a singleton)", runSecondsPerInterval: timers * Math.max(0, Number(settings.WEBHOOKS_RELAY_BUDGET_SECONDS ?? 0) - LISTENING_RESERVE_SECONDS) };
  }
  const service = block(resourcesOf(json, "google_cloudfunctions2_function").find((f) => f.component === "relay")?.body.service_config);
  const minutes = Number(/^\*\/(\d+) /.exec(String(resourcesOf(json, "google_cloud_scheduler_job").find((j) => j.component === "relay")?.body.schedule))?.[1] ?? 1);
  const mode = String((service.environment_variables as Record<string, string> | undefined)?.WEBHOOKS_RELAY_MODE ?? "scheduled");
  const budget = Number((service.environment_variables as Record<string, string> | undefined)?.WEBHOOKS_RELAY_BUDGET_SECONDS ?? 0);
  return { mode, intervalSeconds: minutes * 60, runsAtOnce: `${service.max_instance_count} (max_instance_count, one run per instance)`, runSecondsPerInterval: Math.max(0, budget - LISTENING_RESERVE_SECONDS) };
}

const SECONDS_PER_MONTH = 730 * 3600;
const count = (x: number) => (x >= 1e9 ? `${+(x / 1e9).toPrecision(3)} billion` : x >= 1e6 ? `${+(x / 1e6).toPrecision(3)} M` : Math.round(x).toLocaleString("en-US"));

/** The relay rows, label first. */
export function relayRows(stacks: Record<Cloud, TerraformJson>, clouds: Cloud[], measured: RelayMeasurements = loadRelayMeasurements()): [string, ...string[]][] {
  const shapes = clouds.map((c) => shape(c, stacks[c]));
  const speeds = clouds.map((c) => ({ cpu: relayCpu(c, stacks[c]), rate: relayRate(measured, relayCpu(c, stacks[c])) }));
  const capacity = (s: RelayShape, perRun: number) => {
    const runs = s.runSecondsPerInterval / s.intervalSeconds;
    const perSecond = runs * perRun;
    return `≈ ${count(perSecond)}/s, ${count(perSecond * SECONDS_PER_MONTH)} a month: ${+runs.toFixed(2)} runs claiming on average (${s.runSecondsPerInterval} s per ${s.intervalSeconds} s) × ${Math.round(perRun)}/s; the database may cap it first (not measured)`;
  };
  const scheduledWait = (s: RelayShape) => `0-${s.intervalSeconds} s (about ${s.intervalSeconds / 2} s on average): the next run`;
  return [
    ["relay mode (relayMode)", ...shapes.map((s) => (s.mode === "listening" ? "listening: one run always listens (LISTEN/NOTIFY, poll 1 s)" : `scheduled: a run every ${s.intervalSeconds} s drains and stops`))],
    ["relay runs at once", ...shapes.map((s) => s.runsAtOnce)],
    ["commit → first attempt", ...shapes.map((s) => (s.mode === "listening" ? MEASURED.latency : `${scheduledWait(s)}; the management API's wake-up is not built yet`))],
    ["retry, Retry-After, probe, rate slot precision", ...shapes.map((s) => (s.mode === "listening" ? MEASURED.retry : `rounded up to the next run (up to ${s.intervalSeconds} s late)`))],
    ["relay deliveries per second, one run with a backlog", ...speeds.map(({ cpu, rate }) => `${Math.round(rate.deliveriesPerSecond)}/s at ${cpu.vcpu} vCPU (${cpu.basis}), ${(rate.cpuSecondsPerDelivery * 1000).toFixed(2)} CPU-ms each: ${rate.basis}`)],
    ["relay capacity, sustained", ...shapes.map((s, i) => capacity(s, speeds[i]!.rate.deliveriesPerSecond))],
  ];
}
