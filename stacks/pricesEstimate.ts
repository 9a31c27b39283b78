/**
 * Monthly cost of each stack: quantities read from its synthesized Terraform JSON (NAT gateways,
 * minimum ACU, plan SKU, Cloud SQL tier, connector instances, function memory, batch sizes…)
 * times the cited list prices of stacks/prices.json. A line is either always-on (`baseline`) or
 * grows with traffic (`traffic`, N webhooks a month in each direction: N inbound received and
 * N outbound delivered). A line whose price is unknown stays in the table, marked unknown, and
 * the totals say they leave it out. Free tiers and discounts are not applied.
 */
import type { TerraformJson } from "./app.js";
import type { Cloud } from "./artifacts.js";
import { loadPrices, type PriceList } from "./prices.js";
import { loadRelayMeasurements, relayCpu, relayIdleSeconds, relayRate, type RelayMeasurements, type RelayRate } from "./relayMeasured.js";
import { CLOUD_RUN_FUNCTION_CPU, ELASTIC_PREMIUM_VCPUS } from "./serviceFacts.js";
import { block, resourcesOf, type SynthResource } from "./terraformJson.js";

export interface CostLine {
  item: string;
  kind: "baseline" | "traffic";
  /** What was read from the stack, e.g. `1 aws_nat_gateway`. */
  quantity: string;
  /** The formula with the quantities and prices filled in; traffic lines use N. */
  formula: string;
  priceIds: string[];
  /** USD a month at N webhooks a month in each direction; null when a price is unknown. */
  monthly(n: number): number | null;
}

export interface Total {
  usd: number;
  /** Items left out because their price is unknown. */
  unknown: string[];
}

const count = (json: TerraformJson, type: string) => resourcesOf(json, type).length;
const at = (json: TerraformJson, type: string, component: string): SynthResource | undefined =>
  resourcesOf(json, type).find((r) => r.component === component);

/** Prices, assumptions and the relay's measured speed in a form the lines below read naturally. */
function helpers(list: PriceList, measured: RelayMeasurements) {
  const H = list.hoursPerMonth;
  const usd = (id: string): number | null => {
    const p = list.prices[id];
    if (!p) throw new Error(`stacks/prices.json has no price ${id}`);
    return p.usd;
  };
  const a = (id: string): number => {
    const v = list.assumptions[id]?.value;
    if (v === undefined) throw new Error(`stacks/prices.json has no assumption ${id}`);
    return v;
  };
  const show = (id: string) => {
    const v = usd(id);
    return v === null ? "unknown" : `$${v}`;
  };
  /** Product of factors, null when any price is unknown. */
  const times = (...xs: (number | null)[]) => (xs.some((x) => x === null) ? null : (xs as number[]).reduce((p, x) => p * x, 1));
  return { H, usd, a, show, times, measured };
}

type Helpers = ReturnType<typeof helpers>;

/** Prices that hold for one size only (a SKU, a machine type): the price id of each size priced. */
const POSTGRES_SKU_PRICES: Record<string, string> = { B_Standard_B1ms: "azure.postgresB1msHour" };
const CONNECTOR_MACHINE_PRICES: Record<string, string> = { "e2-micro": "gcp.connectorE2MicroHour" };

/**
 * The price of the size the stack chose, or unknown naming that size: a figure for one SKU is
 * never applied to another. The first id stands for the line's source when the size is unpriced.
 */
function priceFor(h: Helpers, bySize: Record<string, string>, size: string): { id: string; priced: boolean; usd: number | null; show: string } {
  const id = bySize[size];
  if (id) return { id, priced: true, usd: h.usd(id), show: h.show(id) };
  return { id: Object.values(bySize)[0]!, priced: false, usd: null, show: `unknown (${size}: no price in stacks/prices.json)` };
}
const line = (l: CostLine) => l;

/** Bytes one webhook puts through the NAT and out to the internet (body + HTTP overhead). */
const deliveryBytes = (h: Helpers) => h.a("payloadBytes") + h.a("httpOverheadBytes");

/** Ticks a month of a `rate(N minutes)` or `*\/N * * * *` schedule. */
function ticksPerMonth(h: Helpers, expression: string | undefined): number {
  const minutes = Number(/rate\((\d+) minutes?\)/.exec(expression ?? "")?.[1] ?? /^\*\/(\d+) /.exec(expression ?? "")?.[1] ?? 1);
  return (h.H * 60) / minutes;
}

/**
 * Seconds one relay run is billed for (issue 24). A listening run (WEBHOOKS_RELAY_MODE=listening)
 * listens until its budget less the pass reserve (the attempt timeout, 10 s by default, + 5 s),
 * then finishes what it holds: billed for about that whole time whether or not anything is sent.
 * A scheduled run drains and stops: when idle, the idle invocation bench:cloudrelay measured at
 * the relay's CPU share (the deliveries are the traffic lines).
 */
export const LISTENING_RESERVE_SECONDS = 15;
function relayRun(h: Helpers, cloud: Cloud, json: TerraformJson, budgetSeconds: number): { seconds: number; listening: boolean; label: string } {
  const cpu = relayCpu(cloud, json);
  if (cpu.mode === "scheduled") return { seconds: +relayIdleSeconds(h.measured, cpu).toFixed(3), listening: false, label: "Relay ticks (idle runs, measured)" };
  return { seconds: Math.max(0, budgetSeconds - LISTENING_RESERVE_SECONDS), listening: true, label: "Relay runs (listening: billed for the whole run)" };
}

/**
 * The relay's deliveries (issue 34): the run time one delivery takes, 1 / the deliveries per
 * second bench:cloudrelay measured for one run at the stack's CPU share. A scheduled run is
 * billed for the time it drains; a listening relay's deliveries run inside the listening runs
 * billed above (always-on), so they add nothing there, up to the relay's capacity (the
 * operations table's relay rows).
 */
function relayDeliveries(item: string, quantity: string, speed: RelayRate, listening: boolean, perSecond: { text: string; usd: number | null }, priceIds: string[], times: Helpers["times"]): CostLine {
  const s = +speed.secondsPerDelivery.toPrecision(3);
  const measured = `${Math.round(speed.deliveriesPerSecond)}/s per run, ${speed.basis}`;
  if (listening) {
    return line({ item, kind: "traffic", quantity, formula: `0: inside the listening runs above (N × ${s} s of their time; ${measured})`, priceIds, monthly: () => 0 });
  }
  return line({ item, kind: "traffic", quantity, formula: `N × ${s} s × ${perSecond.text} (${measured})`, priceIds, monthly: (n) => times(n, s, perSecond.usd) });
}

function awsLines(json: TerraformJson, h: Helpers): CostLine[] {
  const { H, usd, a, show, times } = h;
  const nat = count(json, "aws_nat_gateway");
  const eips = count(json, "aws_eip");
  const cluster = resourcesOf(json, "aws_rds_cluster")[0];
  const minAcu = Number(block(cluster?.body.serverlessv2_scaling_configuration).min_capacity ?? 0);
  const writers = resourcesOf(json, "aws_rds_cluster_instance").filter((i) => i.body.instance_class === "db.serverless").length;
  const secrets = count(json, "aws_secretsmanager_secret") + (cluster?.body.manage_master_user_password ? 1 : 0);
  const alarms = count(json, "aws_cloudwatch_metric_alarm");
  const gb = (fn?: SynthResource) => Number(fn?.body.memory_size ?? 128) / 1024;
  const ingest = at(json, "aws_lambda_function", "ingress");
  const processor = at(json, "aws_lambda_function", "workers");
  const relay = at(json, "aws_lambda_function", "relay");
  const batch = Number(resourcesOf(json, "aws_lambda_event_source_mapping")[0]?.body.batch_size ?? 1);
  const ticks = ticksPerMonth(h, String(resourcesOf(json, "aws_scheduler_schedule")[0]?.body.schedule_expression ?? ""));
  // On Lambda the budget is the function's timeout (the run reads getRemainingTimeInMillis).
  const run = relayRun(h, "aws", json, Number(relay?.body.timeout ?? 0));
  const speed = relayRate(h.measured, relayCpu("aws", json));
  const gbs = usd("aws.lambdaArmGbSecond");
  const req = usd("aws.lambdaRequestsMillion");
  const chunks = Math.ceil(a("payloadBytes") / 65_536);
  const sqsPerMessage = (1 + 2 / batch) * chunks;
  const bytes = deliveryBytes(h);
  const lines: CostLine[] = [
    line({ item: "NAT gateway", kind: "baseline", quantity: `${nat} aws_nat_gateway`, formula: `${nat} × ${H} h × ${show("aws.natGatewayHour")}/h`, priceIds: ["aws.natGatewayHour"], monthly: () => times(nat, H, usd("aws.natGatewayHour")) }),
    line({ item: "Public IPv4 (NAT's Elastic IP)", kind: "baseline", quantity: `${eips} aws_eip`, formula: `${eips} × ${H} h × ${show("aws.publicIpv4Hour")}/h`, priceIds: ["aws.publicIpv4Hour"], monthly: () => times(eips, H, usd("aws.publicIpv4Hour")) }),
    line({
      item: "Aurora Serverless v2 at its minimum",
      kind: "baseline",
      quantity: `${writers} db.serverless instance × min_capacity ${minAcu} ACU`,
      formula: `${writers} × ${minAcu} ACU × ${H} h × ${show("aws.auroraServerlessV2AcuHour")}/ACU-h`,
      priceIds: ["aws.auroraServerlessV2AcuHour"],
      monthly: () => times(writers, minAcu, H, usd("aws.auroraServerlessV2AcuHour")),
    }),
    line({ item: "Aurora storage", kind: "baseline", quantity: `${a("databaseStorageGb")} GB (assumed)`, formula: `${a("databaseStorageGb")} GB × ${show("aws.auroraStorageGbMonth")}/GB-month`, priceIds: ["aws.auroraStorageGbMonth"], monthly: () => times(a("databaseStorageGb"), usd("aws.auroraStorageGbMonth")) }),
    line({ item: "Secrets Manager", kind: "baseline", quantity: `${secrets} secrets (incl. RDS-managed master)`, formula: `${secrets} × ${show("aws.secretMonth")}`, priceIds: ["aws.secretMonth"], monthly: () => times(secrets, usd("aws.secretMonth")) }),
    line({ item: "CloudWatch alarms", kind: "baseline", quantity: `${alarms} aws_cloudwatch_metric_alarm`, formula: `${alarms} × ${show("aws.alarmMonth")}`, priceIds: ["aws.alarmMonth"], monthly: () => times(alarms, usd("aws.alarmMonth")) }),
    line({
      item: run.label,
      kind: "baseline",
      quantity: `${ticks} runs/month × ${run.seconds} s, ${gb(relay) * 1024} MB`,
      formula: `${ticks} × (${show("aws.lambdaRequestsMillion")}/M + ${gb(relay)} GB × ${run.seconds} s × ${show("aws.lambdaArmGbSecond")}/GB-s)`,
      priceIds: ["aws.lambdaRequestsMillion", "aws.lambdaArmGbSecond"],
      monthly: () => times(ticks, sum(times(req, 1e-6), times(gb(relay), run.seconds, gbs))),
    }),
    line({ item: "EventBridge Scheduler", kind: "baseline", quantity: `${ticks} invocations/month`, formula: `${ticks} × ${show("aws.schedulerInvocationsMillion")}/M`, priceIds: ["aws.schedulerInvocationsMillion"], monthly: () => times(ticks, 1e-6, usd("aws.schedulerInvocationsMillion")) }),
    line({ item: "API Gateway (HTTP API)", kind: "traffic", quantity: "1 request per inbound webhook", formula: `N × ${show("aws.httpApiRequestsMillion")}/M`, priceIds: ["aws.httpApiRequestsMillion"], monthly: (n) => times(n, 1e-6, usd("aws.httpApiRequestsMillion")) }),
  ];
  if (ingest) {
    lines.push(line({
      item: "Ingest Lambda",
      kind: "traffic",
      quantity: `${gb(ingest) * 1024} MB arm64`,
      formula: `N × (${show("aws.lambdaRequestsMillion")}/M + ${gb(ingest)} GB × ${a("ingestSeconds")} s × ${show("aws.lambdaArmGbSecond")}/GB-s)`,
      priceIds: ["aws.lambdaRequestsMillion", "aws.lambdaArmGbSecond"],
      monthly: (n) => times(n, sum(times(req, 1e-6), times(gb(ingest), a("ingestSeconds"), gbs))),
    }));
  }
  lines.push(
    line({ item: "SQS requests", kind: "traffic", quantity: `batch_size ${batch}, ${chunks} × 64 KB chunk`, formula: `N × (1 send + 2/${batch} receive+delete) × ${chunks} × ${show("aws.sqsRequestsMillion")}/M`, priceIds: ["aws.sqsRequestsMillion"], monthly: (n) => times(n, sqsPerMessage, 1e-6, usd("aws.sqsRequestsMillion")) }),
    line({
      item: "Processor Lambda",
      kind: "traffic",
      quantity: `${gb(processor) * 1024} MB arm64, batch_size ${batch}`,
      formula: `N/${batch} × ${show("aws.lambdaRequestsMillion")}/M + N × ${gb(processor)} GB × ${a("processorSecondsPerMessage")} s × ${show("aws.lambdaArmGbSecond")}/GB-s`,
      priceIds: ["aws.lambdaRequestsMillion", "aws.lambdaArmGbSecond"],
      monthly: (n) => sum(times(n / batch, req, 1e-6), times(n, gb(processor), a("processorSecondsPerMessage"), gbs)),
    }),
    relayDeliveries("Relay Lambda (deliveries)", `${gb(relay) * 1024} MB arm64`, speed, run.listening, { text: `${gb(relay)} GB × ${show("aws.lambdaArmGbSecond")}/GB-s`, usd: times(gb(relay), gbs) }, ["aws.lambdaArmGbSecond"], times),
    line({ item: "NAT data processed", kind: "traffic", quantity: `${bytes} B per delivery (assumed)`, formula: `N × ${bytes} B / 10⁹ × ${show("aws.natGatewayGb")}/GB`, priceIds: ["aws.natGatewayGb"], monthly: (n) => times(n, bytes / 1e9, usd("aws.natGatewayGb")) }),
    line({ item: "Internet egress", kind: "traffic", quantity: `${bytes} B per delivery (assumed)`, formula: `N × ${bytes} B / 10⁹ × ${show("aws.internetEgressGb")}/GB`, priceIds: ["aws.internetEgressGb"], monthly: (n) => times(n, bytes / 1e9, usd("aws.internetEgressGb")) }),
  );
  return lines;
}

function azureLines(json: TerraformJson, h: Helpers): CostLine[] {
  const { H, usd, a, show, times } = h;
  const plan = resourcesOf(json, "azurerm_service_plan")[0];
  const sku = String(plan?.body.sku_name ?? "?");
  const vcpus = ELASTIC_PREMIUM_VCPUS.value[sku];
  const planPrice = sku === "EP1" ? usd("azure.ep1InstanceHour") : null;
  const planShow = sku === "EP1" ? show("azure.ep1InstanceHour") : `unknown (${sku})`;
  const instances = Number(plan?.body.worker_count ?? 1);
  const nat = count(json, "azurerm_nat_gateway");
  const ips = count(json, "azurerm_public_ip");
  const pg = resourcesOf(json, "azurerm_postgresql_flexible_server")[0];
  const pgGb = Number(pg?.body.storage_mb ?? 0) / 1024;
  const pgHa = pg?.body.high_availability ? 2 : 1;
  const pgSku = String(pg?.body.sku_name ?? "?");
  const pgCompute = priceFor(h, POSTGRES_SKU_PRICES, pgSku);
  const bus = resourcesOf(json, "azurerm_servicebus_namespace")[0];
  const busSku = String(bus?.body.sku ?? "?");
  // vCPU-seconds per webhook; the relay's is its measured CPU per delivery (bench:cloudrelay).
  const relayCpuSeconds = +relayRate(h.measured, relayCpu("azure", json)).cpuSecondsPerDelivery.toPrecision(3);
  const busy = a("ingestSeconds") + a("processorSecondsPerMessage") + relayCpuSeconds;
  const bytes = deliveryBytes(h);
  const extraHours = (n: number) => (vcpus ? Math.max(0, (n * busy) / 3600 / vcpus - H * instances) : null);
  return [
    line({ item: `Functions plan (${sku})`, kind: "baseline", quantity: `azurerm_service_plan ${sku}, ≥ ${instances} instance always billed`, formula: `${instances} × ${H} h × ${planShow}/h`, priceIds: ["azure.ep1InstanceHour"], monthly: () => times(instances, H, planPrice) }),
    line({ item: "NAT gateway", kind: "baseline", quantity: `${nat} azurerm_nat_gateway`, formula: `${nat} × ${H} h × ${show("azure.natGatewayHour")}/h`, priceIds: ["azure.natGatewayHour"], monthly: () => times(nat, H, usd("azure.natGatewayHour")) }),
    line({ item: "Public IP (NAT)", kind: "baseline", quantity: `${ips} azurerm_public_ip (Standard, static)`, formula: `${ips} × ${show("azure.publicIpMonth")}/month`, priceIds: ["azure.publicIpMonth"], monthly: () => times(ips, usd("azure.publicIpMonth")) }),
    line({ item: "PostgreSQL Flexible Server", kind: "baseline", quantity: `${pgSku}${pgHa > 1 ? " + HA standby" : ""}`, formula: `${pgHa} × ${H} h × ${pgCompute.show}/h${pgCompute.priced ? ` (${pgSku})` : ""}`, priceIds: [pgCompute.id], monthly: () => times(pgHa, H, pgCompute.usd) }),
    line({ item: "PostgreSQL storage (provisioned)", kind: "baseline", quantity: `storage_mb ${pg?.body.storage_mb}`, formula: `${pgGb} GB × ${show("azure.postgresStorageGbMonth")}/GB-month`, priceIds: ["azure.postgresStorageGbMonth"], monthly: () => times(pgGb, usd("azure.postgresStorageGbMonth")) }),
    line({ item: `Service Bus ${busSku} base`, kind: "baseline", quantity: `azurerm_servicebus_namespace sku ${busSku}`, formula: busSku === "Standard" ? `${H} h × ${show("azure.serviceBusStandardBaseHour")}/h (13 M operations included)` : `${busSku} tier: price not in stacks/prices.json`, priceIds: ["azure.serviceBusStandardBaseHour"], monthly: () => (busSku === "Standard" ? times(H, usd("azure.serviceBusStandardBaseHour")) : null) }),
    line({
      item: "Functions plan scale-out",
      kind: "traffic",
      quantity: `${sku}: ${vcpus ?? "?"} vCPU per instance`,
      formula: `max(0, N × ${+busy.toPrecision(4)} s (ingest ${a("ingestSeconds")} + processor ${a("processorSecondsPerMessage")} + relay ${relayCpuSeconds}, measured) / 3600 / ${vcpus ?? "?"} vCPU − ${H * instances} h) × ${planShow}/h`,
      priceIds: ["azure.ep1InstanceHour"],
      monthly: (n) => times(extraHours(n), planPrice),
    }),
    line({ item: "Service Bus operations", kind: "traffic", quantity: "send + receive + complete per message", formula: `max(0, 3 × N − 13 M) × ${show("azure.serviceBusStandardOpsMillion")}/M`, priceIds: ["azure.serviceBusStandardOpsMillion"], monthly: (n) => (3 * n <= 13e6 ? 0 : times(3 * n - 13e6, 1e-6, usd("azure.serviceBusStandardOpsMillion"))) }),
    line({ item: "NAT data processed", kind: "traffic", quantity: `${bytes} B per delivery (assumed)`, formula: `N × ${bytes} B / 10⁹ × ${show("azure.natGatewayGb")}/GB`, priceIds: ["azure.natGatewayGb"], monthly: (n) => times(n, bytes / 1e9, usd("azure.natGatewayGb")) }),
    line({ item: "Internet egress", kind: "traffic", quantity: `${bytes} B per delivery (assumed)`, formula: `N × ${bytes} B / 10⁹ × ${show("azure.internetEgressGb")}/GB`, priceIds: ["azure.internetEgressGb"], monthly: (n) => times(n, bytes / 1e9, usd("azure.internetEgressGb")) }),
  ];
}

/** `db-custom-2-7680` → 2 vCPU, 7.5 GB; undefined for shared-core tiers. */
export function cloudSqlShape(tier: string): { vcpus: number; memoryGb: number } | undefined {
  const m = /^db-custom-(\d+)-(\d+)$/.exec(tier);
  return m ? { vcpus: Number(m[1]), memoryGb: Number(m[2]) / 1024 } : undefined;
}

function gcpLines(json: TerraformJson, h: Helpers): CostLine[] {
  const { H, usd, a, show, times } = h;
  const sql = resourcesOf(json, "google_sql_database_instance")[0];
  const settings = block(sql?.body.settings);
  const tier = String(settings.tier ?? "?");
  const shape = cloudSqlShape(tier);
  const copies = settings.availability_type === "REGIONAL" ? 2 : 1;
  const disk = Number(settings.disk_size ?? 10);
  const connector = resourcesOf(json, "google_vpc_access_connector")[0];
  const vms = Number(connector?.body.min_instances ?? 0);
  const machine = String(connector?.body.machine_type ?? "?");
  const connectorVm = priceFor(h, CONNECTOR_MACHINE_PRICES, machine);
  const nats = count(json, "google_compute_router_nat");
  const natIps = count(json, "google_compute_address");
  const jobs = count(json, "google_cloud_scheduler_job");
  const versions = count(json, "google_secret_manager_secret_version");
  const fn = (component: string) => block(at(json, "google_cloudfunctions2_function", component)?.body.service_config);
  const compute = (component: string) => {
    const c = fn(component);
    const memory = String(c.available_memory ?? "256Mi");
    const cpu = Number(c.available_cpu ?? CLOUD_RUN_FUNCTION_CPU.value[memory] ?? NaN);
    const gib = memory.endsWith("Gi") ? Number.parseFloat(memory) : Number.parseFloat(memory) / 1024;
    return { memory, cpu, gib, perSecond: sum(times(cpu, usd("gcp.runVcpuSecond")), times(gib, usd("gcp.runGibSecond"))) };
  };
  const ingest = compute("ingress");
  const processor = compute("workers");
  const relay = compute("relay");
  const ticks = ticksPerMonth(h, String(resourcesOf(json, "google_cloud_scheduler_job").find((j) => j.component === "relay")?.body.schedule ?? ""));
  const relayVariables = fn("relay").environment_variables as Record<string, string> | undefined;
  const run = relayRun(h, "gcp", json, Number(relayVariables?.WEBHOOKS_RELAY_BUDGET_SECONDS ?? 0));
  const speed = relayRate(h.measured, relayCpu("gcp", json));
  const rate = (c: ReturnType<typeof compute>) => `(${c.cpu} vCPU × ${show("gcp.runVcpuSecond")} + ${+c.gib.toFixed(3)} GiB × ${show("gcp.runGibSecond")})`;
  const bytes = deliveryBytes(h);
  const pubsubBytes = 2 * Math.max(1000, a("payloadBytes"));
  return [
    line({
      item: "Cloud SQL instance",
      kind: "baseline",
      quantity: `${tier}${shape ? ` (${shape.vcpus} vCPU, ${+shape.memoryGb.toFixed(2)} GB)` : ""}, ${settings.availability_type}`,
      formula: shape ? `${copies} × ${H} h × (${shape.vcpus} × ${show("gcp.cloudSqlVcpuHour")} + ${+shape.memoryGb.toFixed(2)} GB × ${show("gcp.cloudSqlMemoryGbHour")})` : `${tier}: shared-core tier, price not in stacks/prices.json`,
      priceIds: ["gcp.cloudSqlVcpuHour", "gcp.cloudSqlMemoryGbHour"],
      monthly: () => (shape ? times(copies, H, sum(times(shape.vcpus, usd("gcp.cloudSqlVcpuHour")), times(shape.memoryGb, usd("gcp.cloudSqlMemoryGbHour")))) : null),
    }),
    line({ item: "Cloud SQL storage", kind: "baseline", quantity: `${disk} GB${settings.disk_size ? "" : " (Cloud SQL's default disk)"}`, formula: `${copies} × ${disk} GB × ${show("gcp.cloudSqlStorageGbMonth")}/GB-month`, priceIds: ["gcp.cloudSqlStorageGbMonth"], monthly: () => times(copies, disk, usd("gcp.cloudSqlStorageGbMonth")) }),
    line({ item: "Serverless VPC Access connector", kind: "baseline", quantity: `min_instances ${vms} × ${machine}`, formula: `${vms} × ${H} h × ${connectorVm.show}/h${connectorVm.priced ? ` (${machine})` : ""}`, priceIds: [connectorVm.id], monthly: () => times(vms, H, connectorVm.usd) }),
    line({ item: "Cloud NAT gateway", kind: "baseline", quantity: `${nats} google_compute_router_nat serving ${vms} connector VMs`, formula: `${nats} × ${vms} VMs × ${H} h × ${show("gcp.natVmHour")}/VM-h`, priceIds: ["gcp.natVmHour"], monthly: () => times(nats, vms, H, usd("gcp.natVmHour")) }),
    line({ item: "NAT static IP", kind: "baseline", quantity: `${natIps} google_compute_address`, formula: `${natIps} × ${H} h × ${show("gcp.natIpHour")}/h`, priceIds: ["gcp.natIpHour"], monthly: () => times(natIps, H, usd("gcp.natIpHour")) }),
    line({ item: "Cloud Scheduler jobs", kind: "baseline", quantity: `${jobs} google_cloud_scheduler_job`, formula: `${jobs} × ${show("gcp.schedulerJobMonth")}`, priceIds: ["gcp.schedulerJobMonth"], monthly: () => times(jobs, usd("gcp.schedulerJobMonth")) }),
    line({ item: "Secret Manager versions", kind: "baseline", quantity: `${versions} google_secret_manager_secret_version`, formula: `${versions} × ${show("gcp.secretVersionMonth")}`, priceIds: ["gcp.secretVersionMonth"], monthly: () => times(versions, usd("gcp.secretVersionMonth")) }),
    line({
      item: run.label,
      kind: "baseline",
      quantity: `${ticks} runs/month × ${run.seconds} s, ${relay.memory}`,
      formula: `${ticks} × (${show("gcp.runRequestsMillion")}/M + ${run.seconds} s × ${rate(relay)})`,
      priceIds: ["gcp.runRequestsMillion", "gcp.runVcpuSecond", "gcp.runGibSecond"],
      monthly: () => times(ticks, sum(times(usd("gcp.runRequestsMillion"), 1e-6), times(run.seconds, relay.perSecond))),
    }),
    line({ item: "API Gateway calls", kind: "traffic", quantity: "1 call per inbound webhook", formula: `N × ${show("gcp.apiGatewayCallsMillion")}/M`, priceIds: ["gcp.apiGatewayCallsMillion"], monthly: (n) => times(n, 1e-6, usd("gcp.apiGatewayCallsMillion")) }),
    line({
      item: "Cloud Run: ingest + processor",
      kind: "traffic",
      quantity: `ingest ${ingest.memory}, processor ${processor.memory}`,
      formula: `2N × ${show("gcp.runRequestsMillion")}/M + N × (${a("ingestSeconds")} s × ${rate(ingest)} + ${a("processorSecondsPerMessage")} s × ${rate(processor)})`,
      priceIds: ["gcp.runRequestsMillion", "gcp.runVcpuSecond", "gcp.runGibSecond"],
      monthly: (n) => sum(times(2 * n, 1e-6, usd("gcp.runRequestsMillion")), times(n, sum(times(a("ingestSeconds"), ingest.perSecond), times(a("processorSecondsPerMessage"), processor.perSecond)))),
    }),
    relayDeliveries("Cloud Run: relay deliveries", `relay ${relay.memory}`, speed, run.listening, { text: rate(relay), usd: relay.perSecond }, ["gcp.runVcpuSecond", "gcp.runGibSecond"], times),
    line({ item: "Pub/Sub throughput", kind: "traffic", quantity: "publish + push, ≥ 1000 B each", formula: `N × ${pubsubBytes} B / 2⁴⁰ × ${show("gcp.pubsubTib")}/TiB`, priceIds: ["gcp.pubsubTib"], monthly: (n) => times(n, pubsubBytes / 2 ** 40, usd("gcp.pubsubTib")) }),
    line({ item: "NAT data processed", kind: "traffic", quantity: `${bytes} B per delivery (assumed)`, formula: `N × ${bytes} B / 2³⁰ × ${show("gcp.natGb")}/GiB`, priceIds: ["gcp.natGb"], monthly: (n) => times(n, bytes / 2 ** 30, usd("gcp.natGb")) }),
    line({ item: "Internet egress", kind: "traffic", quantity: `${bytes} B per delivery (assumed)`, formula: `N × ${bytes} B / 10⁹ × ${show("gcp.internetEgressGb")}/GB`, priceIds: ["gcp.internetEgressGb"], monthly: (n) => times(n, bytes / 1e9, usd("gcp.internetEgressGb")) }),
  ];
}

/** Sum of known amounts, null when any is unknown. */
function sum(...xs: (number | null)[]): number | null {
  return xs.some((x) => x === null || Number.isNaN(x)) ? null : (xs as number[]).reduce((s, x) => s + x, 0);
}

const LINES: Record<Cloud, (json: TerraformJson, h: Helpers) => CostLine[]> = { aws: awsLines, azure: azureLines, gcp: gcpLines };

/** The cost lines of one stack, from its synthesized JSON, the price list and the relay's measured speed. */
export function costLines(cloud: Cloud, json: TerraformJson, prices: PriceList = loadPrices(), measured: RelayMeasurements = loadRelayMeasurements()): CostLine[] {
  return LINES[cloud](json, helpers(prices, measured));
}

/** Monthly total at N webhooks a month in each direction (0: the always-on baseline). */
export function monthlyTotal(lines: CostLine[], n: number): Total {
  let usd = 0;
  const unknown: string[] = [];
  for (const l of lines) {
    if (l.kind === "traffic" && n === 0) continue;
    const v = l.monthly(n);
    if (v === null || Number.isNaN(v)) unknown.push(l.item);
    else usd += v;
  }
  return { usd, unknown };
}
