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
import { costChartSvg } from "./compareChart.js";
import { CHART_TITLE, chartSeries, renderMarkdown, renderText, toJson } from "./compareRender.js";
import { buildComparison, DEFAULT_TIERS } from "./comparison.js";
import { synthForChecks } from "./synthForChecks.js";

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
