/**
 * `npm run compare`: the three stacks side by side as a decision aid, derived from the
 * synthesized Terraform JSON: what each costs (always-on baseline and at traffic tiers, with the
 * formula and the cited price of every line), the limits a webhook meets end to end, and what
 * each asks of an operator. Writes docs/comparison.md and its chart docs/comparison-cost.svg.
 *
 *   npm run compare                      # tiers 1 M, 10 M, 100 M; rewrites the docs
 *   npm run compare -- --traffic 25M     # your own volume (webhooks a month in each direction)
 *   npm run compare -- --json            # the same, for machines
 *   npm run compare -- --markdown x.md   # write the Markdown (and x-cost.svg) elsewhere
 */
import { writeFileSync } from "node:fs";
import { basename } from "node:path";
import { pathToFileURL } from "node:url";
import type { TerraformJson } from "./app.js";
import type { Cloud } from "./artifacts.js";
import { type ChartSeries, costChartSvg } from "./compareChart.js";
import { limitRows } from "./compareLimits.js";
import { operationRows } from "./compareOperations.js";
import { loadPrices, type Price, type PriceList } from "./prices.js";
import { type CostLine, costLines, monthlyTotal, type Total } from "./pricesEstimate.js";
import { API_GATEWAY_REGIONS, CLOUD_RUN_FUNCTION_CPU, COLD_STARTS, ELASTIC_PREMIUM_VCPUS, INGRESS_FACTS, QUEUE_FACTS, serviceOf } from "./serviceFacts.js";
import { synthForChecks } from "./synthForChecks.js";
import { markdownTable, textTable } from "./table.js";
import { allResources } from "./terraformJson.js";

const CLOUDS: Cloud[] = ["aws", "azure", "gcp"];
const COMPONENTS = ["ingress", "queue", "claim-checks", "workers", "relay", "migration", "migrate", "database", "secrets", "identities", "observability", "network"];
/** Inventory rows that say nothing to someone choosing a cloud: shown only in the folded inventory. */
const NOISE = ["hosting", "group", "apis"];
export const DEFAULT_TIERS = [1e6, 1e7, 1e8];
export const CHART_TITLE = "Monthly cost against traffic (USD, list prices, stacks as configured)";
const COLORS: Record<Cloud, string> = { aws: "#e07b00", azure: "#0a6ed1", gcp: "#1e8e3e" };

type Row = [string, ...string[]];

export interface CloudMoney {
  lines: CostLine[];
  baseline: Total;
  tiers: Total[];
}

export interface Comparison {
  headers: string[];
  tiers: number[];
  money: Record<Cloud, CloudMoney>;
  limits: Row[];
  operations: Row[];
  /** Services per component (the noise rows left out). */
  components: Row[];
  /** Resource types per component, every component. */
  inventory: Row[];
  prices: PriceList;
  notes: string[];
}

const uniq = <T>(xs: T[]) => [...new Set(xs)];
export const traffic = (n: number) => (n >= 1e6 ? `${+(n / 1e6).toFixed(2)} M` : n >= 1e3 ? `${+(n / 1e3).toFixed(1)} k` : String(n));
const usd = (v: number) => (v === 0 ? "$0" : `$${v >= 100 ? v.toFixed(0) : v >= 1 ? v.toFixed(2) : v.toFixed(3)}`);

function inventoryCell(json: TerraformJson, component: string, withTypes: boolean): string {
  const resources = allResources(json).filter((r) => r.component === component);
  if (resources.length === 0) return "—";
  const services = uniq(resources.map((r) => serviceOf(r.type))).join(", ");
  if (!withTypes) return services;
  const counts = new Map<string, number>();
  for (const r of resources) counts.set(r.type, (counts.get(r.type) ?? 0) + 1);
  return `${services}\n${[...counts].map(([t, n]) => (n > 1 ? `${t} ×${n}` : t)).join("\n")}`;
}

function componentRows(stacks: Record<Cloud, TerraformJson>, withTypes: boolean, skip: string[]): Row[] {
  const found = CLOUDS.flatMap((c) => allResources(stacks[c]).map((r) => r.component));
  const order = uniq([...COMPONENTS, ...found.filter((x) => !COMPONENTS.includes(x))]).filter((c) => !skip.includes(c));
  return order
    .map((component): Row => [component, ...CLOUDS.map((c) => inventoryCell(stacks[c], component, withTypes))])
    .filter((row) => row.slice(1).some((cell) => cell !== "—"));
}

export function buildComparison(stacks: Record<Cloud, TerraformJson>, options: { tiers?: number[]; prices?: PriceList } = {}): Comparison {
  const tiers = options.tiers ?? DEFAULT_TIERS;
  const prices = options.prices ?? loadPrices();
  const money = Object.fromEntries(
    CLOUDS.map((c) => {
      const lines = costLines(c, stacks[c], prices);
      return [c, { lines, baseline: monthlyTotal(lines, 0), tiers: tiers.map((n) => monthlyTotal(lines, n)) }];
    }),
  ) as Record<Cloud, CloudMoney>;
  const queueTypes = CLOUDS.flatMap((c) => Object.keys(QUEUE_FACTS).filter((t) => allResources(stacks[c]).some((r) => r.type === t)));
  const notes = [
    ...uniq(queueTypes).map((t) => `${QUEUE_FACTS[t]!.service}: ${QUEUE_FACTS[t]!.source}`),
    ELASTIC_PREMIUM_VCPUS.source,
    CLOUD_RUN_FUNCTION_CPU.source,
    API_GATEWAY_REGIONS.source,
    INGRESS_FACTS.azureHttpResponse.source,
    INGRESS_FACTS.sqsMaxDelaySeconds.source,
    `Cold starts: ${COLD_STARTS.source}`,
  ];
  return {
    headers: ["", ...CLOUDS.map((c) => c.toUpperCase())],
    tiers,
    money,
    limits: limitRows(stacks),
    operations: operationRows(stacks),
    components: componentRows(stacks, false, NOISE),
    inventory: componentRows(stacks, true, []),
    prices,
    notes,
  };
}

/** "$82.27" or "≥ $186 (unknown: …)". */
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
  const missing = line.priceIds.map((id) => prices.prices[id]!).filter((p) => p.usd === null);
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
  );
  return out.join("\n");
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
    "volume, `--json` gives the same for machines.",
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

/** The comparison as plain data. */
export function toJson(c: Comparison): unknown {
  return {
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
          idle: l.kind === "baseline" ? l.monthly(0) : null,
          atTiers: c.tiers.map((n) => l.monthly(n)),
        }));
        return [cloud, { baseline: m.baseline, atTiers: m.tiers.map((t, i) => ({ traffic: c.tiers[i], ...t })), lines }];
      }),
    ),
    limits: Object.fromEntries(c.limits.map(([label, ...cells]) => [label, Object.fromEntries(CLOUDS.map((cl, i) => [cl, cells[i]]))])),
    operations: Object.fromEntries(c.operations.map(([label, ...cells]) => [label, Object.fromEntries(CLOUDS.map((cl, i) => [cl, cells[i]]))])),
    prices: c.prices.prices,
    assumptions: c.prices.assumptions,
  };
}

export class CompareUsageError extends Error {
  override name = "CompareUsageError";
}

/** `25M`, `2.5e6`, `500k`, `1000000` → a count of webhooks a month. */
export function parseTraffic(text: string): number {
  const m = /^(\d+(?:\.\d+)?(?:e\d+)?)\s*([kKmMbB]?)$/.exec(text.trim());
  const n = m ? Number(m[1]) * ({ "": 1, k: 1e3, m: 1e6, b: 1e9 } as Record<string, number>)[m[2]!.toLowerCase()]! : NaN;
  if (!Number.isFinite(n) || n <= 0) throw new CompareUsageError(`--traffic wants webhooks a month in each direction, such as 25M, 500k or 2000000; got ${JSON.stringify(text)}`);
  return n;
}

export interface CompareArgs {
  tiers: number[];
  json: boolean;
  /** Where to write the Markdown (its chart goes next to it); undefined: print only. */
  markdown?: string;
}

/**
 * `--traffic <n>` (repeatable), `--json`, and where to write the Markdown: `--markdown <path>` or
 * a bare path (what `webhooks compare --markdown` passes). The default run, without `--traffic`
 * or `--json`, rewrites docs/comparison.md.
 */
export function parseArgs(argv: string[]): CompareArgs {
  let tiers: number[] | undefined;
  let json = false;
  let markdown: string | undefined;
  const value = (i: number, flag: string, example: string) => {
    const v = argv[i];
    if (v === undefined || v.startsWith("--")) throw new CompareUsageError(`${flag} needs a value, such as ${flag} ${example}`);
    return v;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--json") json = true;
    else if (a === "--traffic") tiers = [...(tiers ?? []), parseTraffic(value(++i, "--traffic", "25M"))];
    else if (a.startsWith("--traffic=")) tiers = [...(tiers ?? []), parseTraffic(a.slice("--traffic=".length))];
    else if (a === "--markdown") markdown = value(++i, "--markdown", "docs/comparison.md");
    else if (!a.startsWith("--") && markdown === undefined) markdown = a;
    else throw new CompareUsageError(`unknown argument ${a}: use --traffic <n>, --json, --markdown <path>`);
  }
  if (markdown === undefined && tiers === undefined && !json) markdown = "docs/comparison.md";
  return { tiers: tiers ?? DEFAULT_TIERS, json, markdown };
}

/** The chart's file, next to the Markdown: docs/comparison.md → docs/comparison-cost.svg. */
export function chartPathFor(markdown: string): string {
  return markdown.replace(/(\.md)?$/, "-cost.svg");
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  let args: CompareArgs;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (error) {
    console.error((error as Error).message);
    process.exit(2);
  }
  const comparison = buildComparison(synthForChecks(), { tiers: args.tiers });
  if (args.json) console.log(JSON.stringify(toJson(comparison), null, 2));
  else console.log(renderText(comparison));
  if (args.markdown) {
    const chart = chartPathFor(args.markdown);
    writeFileSync(args.markdown, renderMarkdown(comparison, basename(chart)));
    writeFileSync(chart, costChartSvg(chartSeries(comparison), CHART_TITLE));
    (args.json ? console.error : console.log)(`\nwrote ${args.markdown} and ${chart}`);
  }
}
