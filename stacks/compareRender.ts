/**
 * The comparison as text (the terminal), Markdown (docs/comparison.md, with its chart) and plain
 * data (`--json`): the same rows in each.
 */
import type { Cloud } from "./artifacts.js";
import type { ChartSeries } from "./compareChart.js";
import { CLOUDS, type Comparison, type Row, uniq } from "./comparison.js";
import type { Price, PriceList } from "./prices.js";
import { type CostLine, monthlyTotal, type Total } from "./pricesEstimate.js";
import { markdownTable, textTable } from "./table.js";

export const CHART_TITLE = "Monthly cost against traffic (USD, list prices, stacks as configured)";
const COLORS: Record<Cloud, string> = { aws: "#e07b00", azure: "#0a6ed1", gcp: "#1e8e3e" };
export const traffic = (n: number) => (n >= 1e6 ? `${+(n / 1e6).toFixed(2)} M` : n >= 1e3 ? `${+(n / 1e3).toFixed(1)} k` : String(n));
const usd = (v: number) => (v === 0 ? "$0" : `$${v >= 100 ? v.toFixed(0) : v >= 1 ? v.toFixed(2) : v.toFixed(3)}`);

export function totalCell(t: Total): string {
  return t.unknown.length === 0 ? usd(t.usd) : `≥ ${usd(t.usd)} (unknown: ${t.unknown.join(", ")})`;
}

function summaryRows(c: Comparison): Row[] {
  return [
    ["always-on baseline (no traffic)", ...CLOUDS.map((cloud) => totalCell(c.money[cloud].baseline))],
    ...c.tiers.map((n, i): Row => [`at ${traffic(n)} webhooks a month each way`, ...CLOUDS.map((cloud) => totalCell(c.money[cloud].tiers[i]!))]),
  ];
}

function unknownCell(line: CostLine, prices: PriceList): string {
  const used = line.priceIds.map((id) => prices.prices[id]!);
  // A price not found, or (all priced) a size the list has no figure for: the provider's pages either way.
  const missing = used.some((p) => p.usd === null) ? used.filter((p) => p.usd === null) : used;
  return `unknown, see ${uniq(missing.map((p) => p.source.url)).join(", ") || "stacks/prices.json"}`;
}

export function lineHeaders(c: Comparison): string[] {
  return ["item", "read from the stack", "formula (N = webhooks a month each way)", "idle", ...c.tiers.map(traffic)];
}

/** One cloud's cost lines, their amounts at idle and at each tier. */
export function lineRows(c: Comparison, cloud: Cloud): Row[] {
  return c.money[cloud].lines.map((l): Row => {
    const amount = (n: number) => {
      if (l.kind === "traffic" && n === 0) return "—";
      const v = l.monthly(n);
      return v === null || Number.isNaN(v) ? "unknown" : usd(v);
    };
    const unknownSomewhere = [0, ...c.tiers].some((n) => amount(n) === "unknown");
    const formula = unknownSomewhere ? `${l.formula}; ${unknownCell(l, c.prices)}` : l.formula;
    return [l.item, l.quantity, formula, amount(0), ...c.tiers.map(amount)];
  });
}

function priceRows(prices: PriceList): Row[] {
  return Object.entries(prices.prices).map(([id, p]: [string, Price]): Row => [
    id,
    p.usd === null ? `unknown: ${p.unknown}` : `$${p.usd} per ${p.per}`,
    p.region ?? "—",
    `${p.source.name}, ${p.source.url}${p.readVia ? `; read via ${p.readVia}` : ""}`,
    p.read,
  ]);
}

/** Points for the chart: the tiers widened to a smooth log-spaced curve from 1 M to 100 M. */
export function chartSeries(c: Comparison, from = Math.min(...c.tiers, 1e6), to = Math.max(...c.tiers, 1e8)): ChartSeries[] {
  const steps = 12;
  const ns = Array.from({ length: steps + 1 }, (_, i) => 10 ** (Math.log10(from) + ((Math.log10(to) - Math.log10(from)) * i) / steps));
  return CLOUDS.map((cloud) => {
    const lines = c.money[cloud].lines;
    const totals = ns.map((n) => monthlyTotal(lines, n));
    return { label: cloud.toUpperCase(), color: COLORS[cloud], points: ns.map((n, i): [number, number] => [n, totals[i]!.usd]), unknown: uniq(totals.flatMap((t) => t.unknown)) };
  });
}

export function renderText(c: Comparison): string {
  const out = [
    "Money (USD a month; quantities from the synthesized stacks × stacks/prices.json; list prices, no free tiers)",
    textTable(c.headers, summaryRows(c), 44),
  ];
  for (const cloud of CLOUDS) out.push("", `${cloud.toUpperCase()} cost lines`, textTable(lineHeaders(c), lineRows(c, cloud), 36));
  out.push(
    "",
    "Limits end to end (read from the synthesized JSON where the stack decides them)",
    textTable(c.headers, c.limits, 44),
    "",
    "Operations",
    textTable(c.headers, c.operations, 44),
    "",
    "Services per component",
    textTable(c.headers, c.components, 44),
    "",
    ...c.notes.map((n) => `source: ${n}`),
    "prices and their sources: stacks/prices.json (docs/comparison.md lists them)",
    `the relay's speed per delivery: measured by npm run bench:cloudrelay, bench/results/cloudRelay.json (${c.relay.measuredAt.slice(0, 10)}, ${c.relay.machine.note})`,
  );
  return out.join("\n");
}

/** Where the relay's figures come from: bench:cloudrelay's file, its date, commit and machine. */
function relayMeasurementLines(c: Comparison): string[] {
  const m = c.relay;
  return [
    `Measured, not assumed: the relay's run time per delivery and its idle tick come from \`npm run bench:cloudrelay\``,
    `(bench/results/cloudRelay.json, ${m.measuredAt.slice(0, 16).replace("T", " ")} UTC, commit ${m.commit}, Node ${m.node}): the built relay bundle`,
    `against a TLS PostgreSQL and a local receiver, on ${m.machine.note} (${m.machine.cpus} × ${m.machine.model}, load ${m.machine.loadAverage.join(" → ")}).`,
    `Medians of ${m.deliveriesPerRun}-delivery invocations (a listening relay's deliveries run inside its runs, billed above; a scheduled one is billed for them):`,
    "",
    ...m.profiles.map((p) => `- ${p.cloud}, ${p.mode}, ${p.vcpu} vCPU${p.memoryMb === null ? "" : `, ${p.memoryMb} MB`}: ${Math.round(p.deliveriesPerSecond)} deliveries/s (${Math.round(p.minPerSecond)}-${Math.round(p.maxPerSecond)} over ${p.runs} runs), ${p.cpuMsPerDelivery.toFixed(2)} CPU-ms per delivery${p.gbSecondsPerDelivery === null ? "" : `, ${Math.round(1 / p.gbSecondsPerDelivery)} deliveries per GB-second`}${p.idleInvocationSeconds === null ? "" : `; idle invocation ${p.idleInvocationSeconds} s`}`),
  ];
}

export function renderMarkdown(c: Comparison, chartFile = "comparison-cost.svg"): string {
  const assumptions = Object.entries(c.prices.assumptions).filter(([k]) => k !== "//");
  return [
    "# AWS, Azure and GCP side by side",
    "",
    "Generated by `npm run compare` from the synthesized stacks (`stacks/compare.ts`); do not edit by hand.",
    "Every quantity (counts, sizes, tiers, settings) is read from the synthesized Terraform JSON, so a",
    "changed stack setting changes this page. Prices come from `stacks/prices.json`, each with its source",
    "and the date it was read (table at the end); `npm run compare -- --traffic <n>` prices your own",
    "volume; `npm run -s compare -- --json` (or `npx webhooks compare --json`) gives the same for",
    "machines, JSON alone on stdout (`-s` keeps npm's own banner off it), amounts in USD a month.",
    "",
    "## Money",
    "",
    `![Monthly cost against traffic for the three stacks](${chartFile})`,
    "",
    "USD a month, list prices, no free tiers or discounts (they belong to the account). *N* webhooks a",
    "month in each direction: N received (ingress → queue → processor) and N delivered by the relay.",
    "A line whose price could not be found is shown as unknown, and a total that leaves it out says so",
    "(≥). Prices are mostly quoted for US regions while the stacks default to European ones.",
    "",
    markdownTable(c.headers, summaryRows(c)),
    "",
    ...CLOUDS.flatMap((cloud) => [`### ${cloud.toUpperCase()}`, "", markdownTable(lineHeaders(c), lineRows(c, cloud)), ""]),
    "Assumptions about the traffic (the stacks cannot say these; change them in `stacks/prices.json`):",
    "",
    ...assumptions.map(([k, a]) => `- \`${k}\` = ${a.value}: ${a.why}`),
    "",
    ...relayMeasurementLines(c),
    "",
    "Not counted anywhere: logs and metrics ingestion, database I/O and capacity beyond the always-on",
    "minimum (Aurora scales up to its maximum ACU under load; a busy Cloud SQL or Flexible Server needs a",
    "bigger tier), claim-check storage, secret access operations, Performance Insights beyond its free",
    "retention, cross-zone traffic, and the migrate function's runs.",
    "",
    "## Limits end to end",
    "",
    markdownTable(c.headers, c.limits),
    "",
    "## Operations",
    "",
    markdownTable(c.headers, c.operations),
    "",
    "## Services per component",
    "",
    markdownTable(c.headers, c.components),
    "",
    "<details><summary>Every Terraform resource type, per component (hosting, resource group and API enablement included)</summary>",
    "",
    markdownTable(c.headers, c.inventory),
    "",
    "</details>",
    "",
    "## Sources",
    "",
    "Prices (`stacks/prices.json`):",
    "",
    markdownTable(["price", "figure", "region", "source", "read"], priceRows(c.prices)),
    "",
    "Service facts (`stacks/serviceFacts.ts`):",
    "",
    ...c.notes.map((n) => `- ${n}`),
    "",
  ].join("\n");
}

/** USD to a hundredth of a cent: the amounts are estimates, and 186.14999999999998 is noise. */
const money = (v: number | null): number | null => (v === null || Number.isNaN(v) ? null : Math.round(v * 1e4) / 1e4);
const total = (t: Total) => ({ usdPerMonth: money(t.usd), unknown: t.unknown });

/**
 * The comparison as plain data. Every amount is `usdPerMonth` (or, per line, `usdPerMonthIdle` and
 * `usdPerMonthAtTiers`): US dollars a month at list prices, rounded to 0.0001; null where a price
 * is unknown. Traffic is webhooks a month in each direction.
 */
export function toJson(c: Comparison): unknown {
  return {
    currency: c.prices.currency,
    period: "month",
    hoursPerMonth: c.prices.hoursPerMonth,
    traffic: { unit: "webhooks a month in each direction", tiers: c.tiers },
    tiers: c.tiers,
    money: Object.fromEntries(
      CLOUDS.map((cloud) => {
        const m = c.money[cloud];
        const lines = m.lines.map((l) => ({
          item: l.item,
          kind: l.kind,
          quantity: l.quantity,
          formula: l.formula,
          prices: l.priceIds,
          usdPerMonthIdle: l.kind === "baseline" ? money(l.monthly(0)) : null,
          usdPerMonthAtTiers: c.tiers.map((n) => money(l.monthly(n))),
        }));
        return [cloud, { baseline: total(m.baseline), atTiers: m.tiers.map((t, i) => ({ traffic: c.tiers[i], ...total(t) })), lines }];
      }),
    ),
    limits: Object.fromEntries(c.limits.map(([label, ...cells]) => [label, Object.fromEntries(CLOUDS.map((cl, i) => [cl, cells[i]]))])),
    operations: Object.fromEntries(c.operations.map(([label, ...cells]) => [label, Object.fromEntries(CLOUDS.map((cl, i) => [cl, cells[i]]))])),
    prices: c.prices.prices,
    assumptions: c.prices.assumptions,
    relayMeasured: { file: "bench/results/cloudRelay.json", measuredAt: c.relay.measuredAt, commit: c.relay.commit, node: c.relay.node, machine: c.relay.machine, profiles: c.relay.profiles },
  };
}
