import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import type { TerraformJson } from "../../stacks/app.js";
import type { Cloud } from "../../stacks/artifacts.js";
import { costChartSvg } from "../../stacks/compareChart.js";
import { chartPathFor, CompareUsageError, parseArgs, parseTraffic } from "../../stacks/compare.js";
import { CHART_TITLE, chartSeries, lineRows, renderMarkdown, renderText, toJson } from "../../stacks/compareRender.js";
import { buildComparison } from "../../stacks/comparison.js";
import { secretsInState } from "../../stacks/compareOperations.js";
import { pushDeliveryAttempts } from "../../stacks/gcp/capacity.js";
import { checkPriceList, loadPrices, PriceDataError, priceProblems, type PriceList } from "../../stacks/prices.js";
import { costLines, monthlyTotal } from "../../stacks/pricesEstimate.js";
import { loadRelayMeasurements, RELAY_RESULTS_FILE, RelayMeasurementError, relayCpu, type RelayMeasurements } from "../../stacks/relayMeasured.js";
import { synthForChecks } from "../../stacks/synthForChecks.js";
import { synthAll, synthStack, TEST_OVERRIDES, testConfig } from "./synthFixture.js";

let stacks: Record<Cloud, TerraformJson>;
beforeAll(() => {
  stacks = synthAll();
});

const prices = loadPrices();
const price = (id: string) => prices.prices[id]!.usd!;
const row = (rows: string[][], label: string) => {
  const found = rows.find((r) => r[0] === label);
  if (!found) throw new Error(`no row ${label} in ${rows.map((r) => r[0]).join(", ")}`);
  return found;
};
const line = (cloud: Cloud, json: TerraformJson, item: string) => {
  const found = costLines(cloud, json).find((l) => l.item === item);
  if (!found) throw new Error(`no cost line ${item}`);
  return found;
};
const baseline = (cloud: Cloud, json: TerraformJson) => monthlyTotal(costLines(cloud, json), 0).usd;
const at = (cloud: Cloud, json: TerraformJson, n: number) => monthlyTotal(costLines(cloud, json), n).usd;
const HOURS = prices.hoursPerMonth;
let configured: Record<Cloud, TerraformJson> | undefined;
/** The three stacks as `npm run compare` synthesizes them (the project's own settings). */
const stacksAsConfigured = () => (configured ??= synthForChecks());

/** A second resource of `type`, cloned from the first under another name (as a stack with two would synthesize). */
function withSecond(json: TerraformJson, type: string): TerraformJson {
  const copy = structuredClone(json);
  const byName = copy.resource![type]!;
  const [name, body] = Object.entries(byName)[0]!;
  byName[`${name}_second`] = structuredClone(body);
  return copy;
}

describe("money: quantities from the synthesized stacks × cited prices", () => {
  it("a second NAT gateway (and its address) moves the NAT rows and the always-on baseline by exactly their price", () => {
    const aws = withSecond(withSecond(stacks.aws, "aws_nat_gateway"), "aws_eip");
    expect(line("aws", aws, "NAT gateway").quantity).toBe("2 aws_nat_gateway");
    expect(line("aws", aws, "NAT gateway").formula).toBe(`2 × ${HOURS} h × $${price("aws.natGatewayHour")}/h`);
    expect(baseline("aws", aws) - baseline("aws", stacks.aws)).toBeCloseTo(HOURS * (price("aws.natGatewayHour") + price("aws.publicIpv4Hour")), 6);

    const azure = withSecond(stacks.azure, "azurerm_nat_gateway");
    expect(line("azure", azure, "NAT gateway").quantity).toBe("2 azurerm_nat_gateway");
    expect(baseline("azure", azure) - baseline("azure", stacks.azure)).toBeCloseTo(HOURS * price("azure.natGatewayHour"), 6);

    const gcp = withSecond(stacks.gcp, "google_compute_router_nat");
    expect(line("gcp", gcp, "Cloud NAT gateway").quantity).toBe("2 google_compute_router_nat serving 2 connector VMs");
    expect(baseline("gcp", gcp) - baseline("gcp", stacks.gcp)).toBeCloseTo(2 * HOURS * price("gcp.natVmHour"), 6);
  });

  it("a bigger database (auroraMinCapacity, cloudSqlTier, azurePostgresSku) changes its row and the estimate", () => {
    const aws = synthStack("aws", { auroraMinCapacity: 2, auroraMaxCapacity: 8 });
    expect(line("aws", aws, "Aurora Serverless v2 at its minimum").quantity).toBe("1 db.serverless instance × min_capacity 2 ACU");
    expect(baseline("aws", aws) - baseline("aws", stacks.aws)).toBeCloseTo((2 - 0.5) * HOURS * price("aws.auroraServerlessV2AcuHour"), 6);
    expect(row(buildComparison({ ...stacks, aws }).operations, "database")[1]).toBe("Aurora PostgreSQL 16.6, Serverless v2 2-8 ACU");

    const gcp = synthStack("gcp", { cloudSqlTier: "db-custom-2-7680" });
    expect(line("gcp", gcp, "Cloud SQL instance").quantity).toBe("db-custom-2-7680 (2 vCPU, 7.5 GB), ZONAL");
    const oneMore = HOURS * (price("gcp.cloudSqlVcpuHour") + 3.75 * price("gcp.cloudSqlMemoryGbHour"));
    expect(baseline("gcp", gcp) - baseline("gcp", stacks.gcp)).toBeCloseTo(oneMore, 6);

    // A SKU without a price in the list: the row follows the SKU and says so, the total leaves it out.
    const azure = synthStack("azure", { azurePostgresSku: "GP_Standard_D2ds_v5", azurePostgresStorageMb: 65536 });
    expect(line("azure", azure, "PostgreSQL Flexible Server").quantity).toBe("GP_Standard_D2ds_v5");
    expect(line("azure", azure, "PostgreSQL storage (provisioned)").formula).toBe(`64 GB × $${price("azure.postgresStorageGbMonth")}/GB-month`);
    const storage = (json: TerraformJson) => line("azure", json, "PostgreSQL storage (provisioned)").monthly(0)!;
    expect(storage(azure) - storage(stacks.azure)).toBeCloseTo(32 * price("azure.postgresStorageGbMonth"), 9);
    expect(monthlyTotal(costLines("azure", azure), 0).unknown).toContain("PostgreSQL Flexible Server");
  });

  it("processor concurrency and batch size move the concurrency row, and the batch size the AWS request cost", () => {
    const more = synthAll({ processorConcurrency: 8, processorBatchSize: 10, gcpProcessorRequestConcurrency: 5 });
    expect(row(buildComparison(stacks).limits, "processor concurrency").slice(1)).toEqual([
      `maximum_concurrency ${TEST_OVERRIDES.processorConcurrency} invocations × batch_size ${TEST_OVERRIDES.processorBatchSize} = ≤ 12 messages at once`,
      "app_scale_limit 3 instances × maxConcurrentCalls 4 = ≤ 12 messages at once",
      "max_instance_count 3 × max_instance_request_concurrency 10 = ≤ 30 pushes at once (pool 10 connections each)",
    ]);
    expect(row(buildComparison(more).limits, "processor concurrency").slice(1)).toEqual([
      "maximum_concurrency 8 invocations × batch_size 10 = ≤ 80 messages at once",
      "app_scale_limit 8 instances × maxConcurrentCalls 10 = ≤ 80 messages at once",
      "max_instance_count 8 × max_instance_request_concurrency 5 = ≤ 40 pushes at once (pool 5 connections each)",
    ]);
    // Larger batches: fewer receives, deletes and invocations per message.
    const n = 1e7;
    expect(line("aws", more.aws, "SQS requests").formula).toContain("2/10 receive+delete");
    expect(at("aws", more.aws, n)).toBeLessThan(at("aws", stacks.aws, n));
    expect(line("aws", stacks.aws, "SQS requests").monthly(n)! - line("aws", more.aws, "SQS requests").monthly(n)!).toBeCloseTo(n * (2 / 4 - 2 / 10) * price("aws.sqsRequestsMillion") * 1e-6, 6);
  });

  it("function memory moves the traffic costs of AWS and GCP, not their baseline of fixed resources", () => {
    const big = synthAll({ functionMemoryMb: 1024 });
    expect(line("aws", big.aws, "Ingest Lambda").quantity).toBe("1024 MB arm64");
    expect(at("aws", big.aws, 1e8)).toBeGreaterThan(at("aws", stacks.aws, 1e8));
    expect(line("gcp", big.gcp, "Cloud Run: relay deliveries").formula).toContain("0.583 vCPU");
    expect(at("gcp", big.gcp, 1e8)).toBeGreaterThan(at("gcp", stacks.gcp, 1e8));
  });

  it("prices GCP's concurrent processor at the 1 vCPU it must have, and a one-request processor at its memory's CPU", () => {
    expect(line("gcp", stacks.gcp, "Cloud Run: ingest + processor").formula).toMatch(/0\.333 vCPU .*\+ 0\.05 s × \(1 vCPU/);
    const single = synthStack("gcp", { gcpProcessorRequestConcurrency: 1 });
    expect(line("gcp", single, "Cloud Run: ingest + processor").formula).not.toContain("(1 vCPU");
    expect(at("gcp", stacks.gcp, 1e8)).toBeGreaterThan(at("gcp", single, 1e8));
  });

  it("shows a row whose price is unknown as unknown with the provider's page, and totals it leaves out as lower bounds", () => {
    const missing = structuredClone(prices);
    missing.prices["aws.natGatewayHour"] = { ...missing.prices["aws.natGatewayHour"]!, usd: null, unknown: "not found" };
    const c = buildComparison(stacks, { prices: missing });
    const nat = row(lineRows(c, "aws"), "NAT gateway");
    expect(nat[2]).toBe(`1 × ${HOURS} h × unknown/h; unknown, see https://aws.amazon.com/vpc/pricing/`);
    expect(nat.slice(3)).toEqual(["unknown", "unknown", "unknown", "unknown"]);
    expect(row(lineRows(c, "aws"), "Public IPv4 (NAT's Elastic IP)")[3]).toBe("$3.65");
    const known = monthlyTotal(costLines("aws", stacks.aws), 0).usd - HOURS * price("aws.natGatewayHour");
    expect(c.money.aws.baseline).toEqual({ usd: expect.closeTo(known, 9), unknown: ["NAT gateway"] });
    expect(renderMarkdown(c)).toMatch(/\| always-on baseline \(no traffic\) \| ≥ \$\d+\.\d\d \(unknown: NAT gateway\) \|/);
    // A SKU the list has no price for points at its provider's page too.
    const bigger = buildComparison({ ...stacks, azure: synthStack("azure", { azurePostgresSku: "GP_Standard_D2ds_v5" }) });
    expect(row(lineRows(bigger, "azure"), "PostgreSQL Flexible Server")[2]).toContain("unknown, see https://azure.microsoft.com/pricing/details/postgresql/flexible-server/");
  });

  it("grows with traffic: every cloud costs more at 100 M than at 1 M, and the idle total is the baseline lines alone", () => {
    for (const cloud of ["aws", "azure", "gcp"] as const) {
      const lines = costLines(cloud, stacks[cloud]);
      expect(monthlyTotal(lines, 1e8).usd).toBeGreaterThan(monthlyTotal(lines, 1e6).usd);
      const idle = lines.filter((l) => l.kind === "baseline").reduce((s, l) => s + (l.monthly(0) ?? 0), 0);
      expect(monthlyTotal(lines, 0).usd).toBeCloseTo(idle, 9);
    }
  });
});

describe("the relay's cost per delivery: measured by bench:cloudrelay (bench/results/cloudRelay.json), not assumed", () => {
  // The file as committed, read here on its own: the comparison must use exactly these figures.
  const file = JSON.parse(readFileSync(RELAY_RESULTS_FILE, "utf8")) as RelayMeasurements;
  const profile = (cloud: Cloud, mode: string) => {
    const found = file.profiles.find((p) => p.cloud === cloud && p.mode === mode);
    if (!found) throw new Error(`bench/results/cloudRelay.json has no ${cloud} ${mode} profile`);
    return found;
  };
  const scheduled = () => synthAll({ relayMode: "scheduled" });
  /** The file with every rate multiplied by `k` (and CPU per delivery divided by it). */
  const faster = (k: number): RelayMeasurements => ({ ...file, profiles: file.profiles.map((p) => ({ ...p, deliveriesPerSecond: p.deliveriesPerSecond * k, cpuMsPerDelivery: p.cpuMsPerDelivery / k })) });

  it("the committed file says when, on what and how it was measured, and holds each cloud's relay at the CPU share its stack gives it", () => {
    expect(loadRelayMeasurements()).toEqual(file);
    expect(Date.parse(file.measuredAt)).not.toBeNaN();
    expect(file.machine.note).toMatch(/shared 2-core machine/);
    expect(file.node).toMatch(/^v22\./);
    for (const cloud of ["aws", "azure", "gcp"] as const) {
      for (const mode of ["listening", "scheduled"]) expect(profile(cloud, mode).vcpu, `${cloud} ${mode}`).toBeCloseTo(relayCpu(cloud, stacksAsConfigured()[cloud]).vcpu, 3);
    }
    expect(relayCpu("aws", stacksAsConfigured().aws)).toMatchObject({ vcpu: 0.289, memoryMb: 512, mode: "listening" });
  });

  it("a scheduled relay's deliveries cost the run time the bench measured per delivery: N × GB × 1/(deliveries per second) × the GB-second price", () => {
    const s = scheduled();
    const aws = profile("aws", "scheduled");
    const seconds = +(1 / aws.deliveriesPerSecond).toPrecision(3);
    const relay = line("aws", s.aws, "Relay Lambda (deliveries)");
    expect(relay.formula).toBe(`N × ${seconds} s × 0.5 GB × $${price("aws.lambdaArmGbSecond")}/GB-s (${Math.round(aws.deliveriesPerSecond)}/s per run, measured at 0.289 vCPU (bench:cloudrelay ${file.measuredAt.slice(0, 10)}, aws profile, median of ${aws.runs}))`);
    expect(relay.monthly(1e6)).toBeCloseTo(1e6 * seconds * 0.5 * price("aws.lambdaArmGbSecond"), 9);
    const gcp = profile("gcp", "scheduled");
    expect(line("gcp", s.gcp, "Cloud Run: relay deliveries").monthly(1e6)).toBeCloseTo(1e6 * +(1 / gcp.deliveriesPerSecond).toPrecision(3) * (0.333 * price("gcp.runVcpuSecond") + 0.5 * price("gcp.runGibSecond")), 9);
    // The idle tick too: the bench's idle invocation at the relay's share, not an assumed 0.2 s.
    expect(line("aws", s.aws, "Relay ticks (idle runs, measured)").quantity).toContain(`× ${aws.idleInvocationSeconds} s, 512 MB`);
    expect(prices.assumptions).not.toHaveProperty("relaySecondsPerDelivery");
    expect(prices.assumptions).not.toHaveProperty("relayIdleSeconds");
  });

  it("follows the file: a relay measured twice as fast halves the deliveries' cost, and Azure's scale-out uses its measured CPU per delivery", () => {
    const s = scheduled();
    const now = line("aws", s.aws, "Relay Lambda (deliveries)").monthly(1e8)!;
    const twice = costLines("aws", s.aws, prices, faster(2)).find((l) => l.item === "Relay Lambda (deliveries)")!.monthly(1e8)!;
    expect(twice / now).toBeCloseTo(0.5, 2);
    const cpuSeconds = +(profile("azure", "listening").cpuMsPerDelivery / 1000).toPrecision(3);
    expect(line("azure", stacksAsConfigured().azure, "Functions plan scale-out").formula).toContain(`relay ${cpuSeconds}, measured`);
  });

  it("a listening relay's deliveries add nothing to the listening runs already billed, and its capacity is the measured rate × the runs claiming", () => {
    const configured = stacksAsConfigured();
    const relay = line("aws", configured.aws, "Relay Lambda (deliveries)");
    expect(relay.monthly(1e8)).toBe(0);
    expect(relay.formula).toMatch(/^0: inside the listening runs above \(N × [\d.]+ s of their time; \d+\/s per run, measured at 0\.289 vCPU/);
    const c = buildComparison(configured);
    const perRun = Math.round(profile("aws", "listening").deliveriesPerSecond);
    expect(row(c.operations, "relay deliveries per second, one run with a backlog")[1]).toMatch(new RegExp(`^${perRun}/s at 0\\.289 vCPU \\(memory_size 512 MB / 1769 MB per vCPU\\)`));
    // AWS: a run every 60 s claims for its 120 s timeout less the 15 s reserve: 1.75 runs on average.
    expect(row(c.operations, "relay capacity, sustained")[1]).toContain(`1.75 runs claiming on average (105 s per 60 s) × ${perRun}/s`);
    expect(row(c.operations, "relay capacity, sustained")[1]).toMatch(new RegExp(`^≈ ${Math.round(1.75 * profile("aws", "listening").deliveriesPerSecond).toLocaleString("en-US")}/s`));
  });

  it("a CPU share the bench did not run at is scaled from the measured CPU per delivery, and says so", () => {
    const big = synthStack("aws", { functionMemoryMb: 1024 });
    const cpu = relayCpu("aws", big);
    expect(cpu.vcpu).toBe(0.579);
    expect(line("aws", synthStack("aws", { functionMemoryMb: 1024, relayMode: "scheduled" }), "Relay Lambda (deliveries)").formula).toMatch(/scaled to 0\.579 vCPU from the measured [\d.]+ CPU-ms per delivery/);
  });

  it("refuses a results file it cannot use, naming what is wrong and the command that rewrites it", () => {
    const dir = mkdtempSync(join(tmpdir(), "cloudrelay-results-"));
    const write = (name: string, content: string) => { const f = join(dir, name); writeFileSync(f, content); return f; };
    const broken = structuredClone(file) as unknown as { profiles: Record<string, unknown>[]; measuredAt: string };
    broken.profiles[0]!.deliveriesPerSecond = "fast";
    broken.profiles[1]!.mode = "sometimes";
    broken.measuredAt = "yesterday";
    const malformed = write("malformed.json", JSON.stringify(broken));
    expect(() => loadRelayMeasurements(malformed)).toThrow(RelayMeasurementError);
    expect(() => loadRelayMeasurements(malformed)).toThrow(/profiles\[0\] \(\w+, \w+\): deliveriesPerSecond must be a number > 0, got "fast"/);
    expect(() => loadRelayMeasurements(malformed)).toThrow(/profiles\[1\].*mode must be listening or scheduled, got "sometimes"/);
    expect(() => loadRelayMeasurements(malformed)).toThrow(/measuredAt: an ISO date is needed[\s\S]*Run `npm run bench:cloudrelay`/);
    expect(() => loadRelayMeasurements(write("empty.json", JSON.stringify({ ...file, profiles: [] })))).toThrow(/profiles: a non-empty list is needed/);
    expect(() => loadRelayMeasurements(write("truncated.json", readFileSync(RELAY_RESULTS_FILE, "utf8").slice(0, 200)))).toThrow(/is not JSON .*Run `npm run bench:cloudrelay` to rewrite it/);
    expect(() => loadRelayMeasurements(join(dir, "absent.json"))).toThrow(/cannot be read .*Run `npm run bench:cloudrelay` to measure it/);
    // A file without the mode a stack runs in cannot price it: it says which mode is missing.
    const listeningOnly = { ...file, profiles: file.profiles.filter((p) => p.mode === "listening") };
    expect(() => costLines("aws", scheduled().aws, prices, listeningOnly)).toThrow(/no scheduled run/);
  });
});

describe("prices: every figure cited", () => {
  it("the shipped list names, for every price, the provider's page, the date it was read, and a figure or why there is none", () => {
    expect(priceProblems(prices)).toEqual([]);
    for (const [id, p] of Object.entries(prices.prices)) {
      expect(p.source.url, id).toMatch(/^https:\/\//);
      expect(p.read, id).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(p.usd !== null || (p.unknown ?? "").length > 0, id).toBe(true);
    }
  });

  it("Must-show 6: every price the stacks as configured use is known, so the three totals compare like for like", () => {
    const configured = stacksAsConfigured();
    for (const cloud of ["aws", "azure", "gcp"] as const) {
      const lines = costLines(cloud, configured[cloud]);
      for (const n of [0, 1e6, 1e8]) expect(monthlyTotal(lines, n).unknown, `${cloud} at ${n}`).toEqual([]);
      for (const l of lines) expect(l.formula, `${cloud} ${l.item}`).not.toContain("unknown");
    }
    const md = renderMarkdown(buildComparison(configured));
    expect(md).not.toMatch(/≥ \$/);
    expect(md).not.toContain("unknown, see");
  });

  it("prices the Flexible Server SKU, the Service Bus tier and the connector machine type it has figures for, and names any other as unknown", () => {
    expect(line("azure", stacks.azure, "PostgreSQL Flexible Server").formula).toBe(`1 × ${HOURS} h × $${price("azure.postgresB1msHour")}/h (B_Standard_B1ms)`);
    expect(line("azure", stacks.azure, "PostgreSQL Flexible Server").monthly(0)).toBeCloseTo(HOURS * price("azure.postgresB1msHour"), 9);
    expect(line("azure", stacks.azure, "Service Bus Standard base").monthly(0)).toBeCloseTo(HOURS * price("azure.serviceBusStandardBaseHour"), 9);
    expect(line("gcp", stacks.gcp, "Serverless VPC Access connector").formula).toBe(`2 × ${HOURS} h × $${price("gcp.connectorE2MicroHour")}/h (e2-micro)`);
    const bigger = synthStack("azure", { azurePostgresSku: "GP_Standard_D2ds_v5" });
    expect(line("azure", bigger, "PostgreSQL Flexible Server").formula).toBe(`1 × ${HOURS} h × unknown (GP_Standard_D2ds_v5: no price in stacks/prices.json)/h`);
    expect(monthlyTotal(costLines("azure", bigger), 0).unknown).toEqual(["PostgreSQL Flexible Server"]);
    const gcp = structuredClone(stacks.gcp);
    Object.values(gcp.resource!.google_vpc_access_connector!)[0]!.machine_type = "e2-standard-4";
    expect(line("gcp", gcp, "Serverless VPC Access connector").monthly(0)).toBeNull();
    expect(line("gcp", gcp, "Serverless VPC Access connector").formula).toContain("unknown (e2-standard-4: no price in stacks/prices.json)");
  });

  it("refuses a price without its source, without its date, or without a figure and a reason", () => {
    const broken = (edit: (p: PriceList) => void) => {
      const copy = structuredClone(prices);
      edit(copy);
      return () => checkPriceList(copy);
    };
    expect(broken((p) => delete (p.prices["aws.natGatewayHour"] as Partial<PriceList["prices"][string]>).source)).toThrow(/aws\.natGatewayHour: no source name/);
    expect(broken((p) => (p.prices["gcp.natGb"]!.read = ""))).toThrow(/gcp\.natGb: no date it was read/);
    expect(broken((p) => (p.prices["azure.natGatewayHour"]!.source.url = "azure.microsoft.com"))).toThrow(/azure\.natGatewayHour: no source URL/);
    expect(broken((p) => (p.prices["aws.secretMonth"]!.usd = null))).toThrow(PriceDataError);
    expect(broken((p) => (p.prices["aws.secretMonth"]!.usd = null))).toThrow(/aws\.secretMonth: no figure and no reason/);
  });

  it("every price a cost line uses is in the list, and the Markdown cites each with its source and date", () => {
    const used = new Set((["aws", "azure", "gcp"] as const).flatMap((c) => costLines(c, stacks[c]).flatMap((l) => l.priceIds)));
    for (const id of used) expect(prices.prices[id], id).toBeDefined();
    const md = renderMarkdown(buildComparison(stacks));
    for (const [id, p] of Object.entries(prices.prices)) {
      expect(md).toContain(`| ${id} |`);
      expect(md).toContain(p.source.url);
    }
  });
});

describe("limits end to end, read from the JSON", () => {
  it("shows the configured limits", () => {
    const c = buildComparison(stacks);
    const n = TEST_OVERRIDES.maxDeliveryAttempts;
    expect(row(c.limits, "inbound delivery attempts before dead letter").slice(1)).toEqual([
      `maxReceiveCount = ${n}`,
      `max_delivery_count = ${n}`,
      // GCP's count also covers pushes refused while every processor is busy (stacks/gcp/capacity.ts).
      `max_delivery_attempts = ${pushDeliveryAttempts(testConfig())}`,
    ]);
    expect(row(c.limits, "retention: queue and dead letters")[1]).toBe(`${TEST_OVERRIDES.queueRetentionDays} d (DLQ ${TEST_OVERRIDES.deadLetterRetentionDays} d)`);
    const expiry = TEST_OVERRIDES.queueRetentionDays + TEST_OVERRIDES.deadLetterRetentionDays;
    expect(row(c.limits, "largest inbound body").slice(1)).toEqual([
      `ingest MAX_INBOUND_BODY_BYTES 4 MiB; SQS max_message_size 256 KiB; larger bodies by claim-check in S3, deleted after ${expiry} d`,
      `ingest MAX_INBOUND_BODY_BYTES 64 MiB; Service Bus Standard tier: 256 KB; larger bodies by claim-check in Blob Storage, deleted after ${expiry} d`,
      `ingest MAX_INBOUND_BODY_BYTES 30 MiB; Pub/Sub 10 MB; larger bodies by claim-check in Cloud Storage, deleted after ${expiry} d`,
    ]);
    expect(row(c.limits, "ingress timeout")[1]).toBe("API Gateway integration 10 s; ingest Lambda timeout 10 s");
    expect(row(c.limits, "ingress timeout")[3]).toBe("API Gateway backend deadline 10 s; ingest timeout_seconds 10 s");
    expect(row(c.limits, "largest delay")[3]).toContain("60s-600s (retry_policy)");
  });

  it("follows the JSON when it changes: a resource removed, a setting edited, direct ingress", () => {
    const aws = structuredClone(stacks.aws);
    delete aws.resource!.aws_scheduler_schedule;
    const queue = Object.values(aws.resource!.aws_sqs_queue!).find((q) => String(q.redrive_policy ?? "").length > 0)!;
    queue.redrive_policy = JSON.stringify({ deadLetterTargetArn: "x", maxReceiveCount: 42 });
    const edited = buildComparison({ ...stacks, aws });
    expect(row(edited.components, "relay")[1]).not.toContain("EventBridge Scheduler");
    expect(row(edited.limits, "inbound delivery attempts before dead letter")[1]).toBe("maxReceiveCount = 42");

    const direct = buildComparison({ ...stacks, aws: synthStack("aws", { awsDirectQueueIngress: true }) });
    expect(row(direct.limits, "signature checked in")[1]).toMatch(/^processor Lambda \(direct API Gateway → SQS/);
    expect(row(direct.limits, "largest inbound body")[1]).toBe("SQS max_message_size 256 KiB (direct API Gateway → SQS: no ingest, no claim-check)");
    expect(direct.money.aws.lines.map((l) => l.item)).not.toContain("Ingest Lambda");
    expect(row(buildComparison(stacks).limits, "signature checked in")[1]).toMatch(/^ingest Lambda/);
  });

  it("names the outbound path each relay needs", () => {
    const outbound = row(buildComparison(stacks).limits, "outbound delivery path");
    expect(outbound[1]).toContain("NAT gateway");
    expect(outbound[2]).toContain("azurerm_nat_gateway");
    expect(outbound[3]).toContain("ALL_TRAFFIC → Cloud NAT");
  });
});

describe("operations", () => {
  it("finds the secret values Terraform keeps in state: database URLs with passwords, GCP's generated alert secret, Azure's storage key", () => {
    expect(secretsInState(stacks.aws)).toEqual([]);
    const azure = secretsInState(stacks.azure).join("; ");
    expect(azure).toContain("var.db_app_password: database/url value");
    expect(azure).toContain("storage account key: ingress/app storage_account_access_key");
    expect(secretsInState(stacks.gcp).join("; ")).not.toContain("uuid()");
    const alerting = synthStack("gcp", { alertWebhookUrl: "https://alerts.example/hooks" });
    expect(secretsInState(alerting).join("; ")).toContain("generated by uuid(): secrets/alert-webhook-secret-initial secret_data");
    expect(secretsInState(alerting).join("; ")).toContain("var.db_admin_password: database/admin-url secret_data");
  });

  it("reads high availability, backups, egress, hand-filled secrets, regions and cold starts from the stacks", () => {
    const c = buildComparison(stacks);
    expect(row(c.operations, "database high availability")[1]).toContain("1 instance (writer only)");
    expect(row(c.operations, "database high availability")[3]).toContain("ZONAL: no standby");
    expect(row(c.operations, "backups and point-in-time restore")[1]).toContain(`backup_retention_period ${TEST_OVERRIDES.backupRetentionDays} d`);
    expect(row(c.operations, "backups and point-in-time restore")[3]).toContain("point_in_time_recovery_enabled true");
    expect(row(c.operations, "egress IP for receivers' allow-lists").slice(1)).toEqual([
      "static, output egress_ip (aws_eip)",
      "static, output egress_ip (azurerm_public_ip)",
      "static, output egress_ip (google_compute_address)",
    ]);
    expect(row(c.operations, "filled in by hand")[1]).toBe("after: hooktest/partner-signing-secrets (created without a value)");
    expect(row(c.operations, "filled in by hand")[2]).toContain("before deploy: TF_VAR_db_admin_password, TF_VAR_db_app_password");
    // Issue 13/17: the admin token and ENCRYPTION_KEYS, write-only, so in no cloud's state row.
    expect(row(c.operations, "generated by the stack").slice(1)).toEqual([
      "secrets/admin-token-initial, secrets/encryption-keys-initial (write-only: sent at the first apply, in neither plan nor state)",
      "secrets/admin-token, secrets/encryption-keys (write-only: sent at the first apply, in neither plan nor state)",
      "secrets/admin-token-initial, secrets/encryption-keys-initial (write-only: sent at the first apply, in neither plan nor state)",
    ]);
    for (const cell of row(c.operations, "secrets in Terraform state").slice(1)) expect(cell).not.toMatch(/admin-token|encryption-keys/);
    expect(row(c.operations, "regional availability")[3]).toMatch(/^europe-west1: API Gateway is offered there/);
    const north = buildComparison({ ...stacks, gcp: synthStack("gcp", { gcpRegion: "europe-north1" }) });
    expect(row(north.operations, "regional availability")[3]).toMatch(/^europe-north1: API Gateway is NOT offered there/);
    expect(row(c.operations, "cold start")[2]).toContain("at least one instance always ready");
    expect(row(c.operations, "cold start")[3]).toContain("min_instance_count 0 (scale to zero)");
  });

  it("leaves the noise rows (hosting, resource group, API enablement) to the folded inventory", () => {
    const c = buildComparison(stacks);
    const main = c.components.map((r) => r[0]);
    for (const noise of ["hosting", "group", "apis"]) expect(main).not.toContain(noise);
    expect(row(c.inventory, "apis")[3]).toContain("google_project_service ×");
    expect(row(c.inventory, "queue")[1]).toContain("aws_sqs_queue ×2");
    expect(renderMarkdown(c)).toMatch(/<details><summary>Every Terraform resource type[^]*\| apis \|[^]*<\/details>/);
  });
});

describe("rendering, the chart and the command", () => {
  it("renders the same figures as text, Markdown (with the chart) and JSON", () => {
    const c = buildComparison(stacks);
    const md = renderMarkdown(c, "chart.svg");
    expect(md).toContain("![Monthly cost against traffic for the three stacks](chart.svg)");
    expect(md).toContain("Generated by `npm run compare`");
    expect(renderText(c)).toContain("maxReceiveCount = 7");
    const json = toJson(c) as { money: Record<Cloud, { baseline: { usdPerMonth: number } }> };
    expect(json.money.aws.baseline.usdPerMonth).toBeCloseTo(c.money.aws.baseline.usd, 4);
  });

  it("draws one line per cloud, solid where every price is known and dashed where unknown prices are left out", () => {
    expect(costChartSvg(chartSeries(buildComparison(stacks)), "t")).not.toContain("stroke-dasharray");
    const missing = structuredClone(prices);
    missing.prices["azure.natGatewayHour"] = { ...missing.prices["azure.natGatewayHour"]!, usd: null, unknown: "not found" };
    const c = buildComparison(stacks, { prices: missing });
    const series = chartSeries(c);
    expect(series.map((s) => s.label)).toEqual(["AWS", "AZURE", "GCP"]);
    expect(series[0]!.points[0]![0]).toBeCloseTo(1e6);
    expect(series[0]!.points.at(-1)![0]).toBeCloseTo(1e8);
    const svg = costChartSvg(series, "t");
    expect(svg.match(/<path /g)).toHaveLength(3);
    expect(svg).toContain('stroke-dasharray="6 4"');
    expect(svg).toContain("AZURE — at least: leaves out");
    const known = costChartSvg([{ label: "X", color: "red", points: [[1e6, 1], [1e8, 2]], unknown: [] }], "t");
    expect(known).not.toContain("stroke-dasharray");
  });

  it("keeps the legend inside the picture and names every line left out, however long the list", () => {
    const unknown = ["PostgreSQL Flexible Server", "PostgreSQL storage (provisioned)", "Service Bus Standard base", "Service Bus operations", "Internet egress", "Functions plan scale-out"];
    const svg = costChartSvg([
      { label: "AWS", color: "red", points: [[1e6, 80], [1e8, 400]], unknown: [] },
      { label: "AZURE", color: "blue", points: [[1e6, 200], [1e8, 600]], unknown },
      { label: "GCP", color: "green", points: [[1e6, 90], [1e8, 300]], unknown: unknown.slice(0, 2) },
    ], "t");
    const width = Number(/<svg [^>]*width="(\d+)"/.exec(svg)![1]);
    const height = Number(/<svg [^>]*height="(\d+)"/.exec(svg)![1]);
    // Text width estimated at 0.6 em a character (wider than the average sans-serif glyph).
    const texts = [...svg.matchAll(/<text x="([\d.]+)" y="([\d.]+)"([^>]*)>([^<]*)<\/text>/g)];
    const legend = texts.filter((t) => !/text-anchor/.test(t[3]!));
    expect(legend.length).toBeGreaterThanOrEqual(3);
    for (const [, x, y, attrs, content] of legend) {
      const size = Number(/font-size="(\d+)"/.exec(attrs!)?.[1] ?? 12);
      expect(Number(x) + content!.length * 0.6 * size, content).toBeLessThanOrEqual(width);
      expect(Number(y), content).toBeLessThanOrEqual(height);
    }
    const legendText = legend.map((t) => t[4]).join(" ");
    for (const item of unknown) expect(legendText).toContain(item);
  });

  it("parses --traffic, --json and where to write", () => {
    expect(parseTraffic("25M")).toBe(25e6);
    expect(parseTraffic("500k")).toBe(5e5);
    expect(parseTraffic("2.5e6")).toBe(2.5e6);
    expect(() => parseTraffic("lots")).toThrow(CompareUsageError);
    expect(parseArgs([])).toEqual({ tiers: [1e6, 1e7, 1e8], json: false, markdown: "docs/comparison.md" });
    expect(parseArgs(["--traffic", "3M"])).toEqual({ tiers: [3e6], json: false, markdown: undefined });
    expect(parseArgs(["--json", "--traffic=1M", "--traffic", "2M"])).toEqual({ tiers: [1e6, 2e6], json: true, markdown: undefined });
    expect(parseArgs(["/tmp/x.md"]).markdown).toBe("/tmp/x.md");
    expect(() => parseArgs(["--traffic"])).toThrow(/--traffic needs a value/);
    expect(() => parseArgs(["--bogus"])).toThrow(/unknown argument --bogus/);
    expect(chartPathFor("docs/comparison.md")).toBe("docs/comparison-cost.svg");
  });

  it("Must-show 6: `npm run -s compare -- --json` and `webhooks compare --json --traffic 25M` print JSON and nothing else on stdout", async () => {
    const run = promisify(execFile);
    const docsBefore = statSync("docs/comparison.md").mtimeMs;
    const options = { timeout: 170_000, maxBuffer: 16 * 1024 * 1024 };
    const [silent, loud, cli] = await Promise.all([
      run("npm", ["run", "-s", "compare", "--", "--json"], options),
      run("npm", ["run", "compare", "--", "--json", "--traffic", "25M"], options),
      run(process.execPath, ["bin/webhooks.js", "compare", "--json", "--traffic", "25M"], options),
    ]);
    type Out = { currency: string; period: string; tiers: number[]; money: Record<Cloud, { atTiers: { traffic: number; usdPerMonth: number }[] }> };
    // The documented form: stdout is one JSON document, as `| jq` needs.
    const whole = JSON.parse(silent.stdout) as Out;
    expect(whole).toMatchObject({ currency: "USD", period: "month", tiers: [1e6, 1e7, 1e8] });
    // Without -s, npm itself prints its banner ("> name@version compare", "> tsx stacks/compare.ts …")
    // before the script runs; the script adds nothing else to stdout.
    const lines = loud.stdout.split("\n");
    const start = lines.indexOf("{");
    expect(lines.slice(0, start).filter((l) => l.trim() !== "")).toEqual([expect.stringMatching(/^> multicloud-webhooks@\S+ compare$/), "> tsx stacks/compare.ts --json --traffic 25M"]);
    expect((JSON.parse(lines.slice(start).join("\n")) as Out).tiers).toEqual([25e6]);
    // The CLI passes --json and --traffic through, and prints the script's JSON alone.
    const viaCli = JSON.parse(cli.stdout) as Out;
    expect(viaCli.tiers).toEqual([25e6]);
    for (const cloud of ["aws", "azure", "gcp"] as const) {
      expect(viaCli.money[cloud].atTiers[0]!.traffic).toBe(25e6);
      expect(viaCli.money[cloud].atTiers[0]!.usdPerMonth).toBeGreaterThan(0);
    }
    // None of them rewrote the docs (only the default run does).
    expect(statSync("docs/comparison.md").mtimeMs).toBe(docsBefore);
  }, 180_000);

  it("`webhooks compare` refuses a --traffic it cannot read before synthesizing anything", async () => {
    const r = await promisify(execFile)(process.execPath, ["bin/webhooks.js", "compare", "--traffic", "lots"]).catch((e: { code: number; stdout: string; stderr: string }) => e);
    expect(r).toMatchObject({ code: 2, stdout: "" });
    expect((r as { stderr: string }).stderr).toContain('--traffic wants webhooks a month in each direction, such as 25M, 500k or 2000000; got "lots"');
  });

  it("the JSON names its currency, period and traffic unit, and its amounts carry no float noise", () => {
    const json = toJson(buildComparison(stacks, { tiers: [25e6, 1e8] })) as Record<string, unknown>;
    expect(json).toMatchObject({ currency: "USD", period: "month", hoursPerMonth: HOURS, traffic: { unit: "webhooks a month in each direction", tiers: [25e6, 1e8] } });
    const amounts: number[] = [];
    const walk = (v: unknown, key = ""): void => {
      if (typeof v === "number" && /usd/i.test(key)) amounts.push(v);
      else if (Array.isArray(v)) v.forEach((x) => walk(x, key));
      else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) walk(x, k);
    };
    walk(json.money);
    expect(amounts.length).toBeGreaterThan(60);
    // Money to a hundredth of a cent: 186.15, never 186.14999999999998.
    for (const v of amounts) expect(String(v)).toMatch(/^\d+(\.\d{1,4})?$/);
  });

  it("docs/comparison.md and its chart are what `npm run compare` writes from the stacks as configured", () => {
    const c = buildComparison(stacksAsConfigured());
    const stale = "docs/comparison.md is out of date: run `npm run compare` and commit docs/comparison.md and docs/comparison-cost.svg";
    expect(readFileSync("docs/comparison.md", "utf8"), stale).toBe(renderMarkdown(c));
    expect(readFileSync("docs/comparison-cost.svg", "utf8"), stale).toBe(costChartSvg(chartSeries(c), CHART_TITLE));
  });
});
