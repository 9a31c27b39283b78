/**
 * `npm run compare`: the three stacks side by side as a decision aid, derived from the
 * synthesized Terraform JSON: what each costs (always-on baseline and at traffic tiers, with the
 * formula and the cited price of every line), the limits a webhook meets end to end, and what
 * each asks of an operator. Writes docs/comparison.md and its chart docs/comparison-cost.svg.
 *
 *   npm run compare                      # tiers 1 M, 10 M, 100 M; rewrites the docs
 *   npm run compare -- --traffic 25M     # your own volume (webhooks a month in each direction)
 *   npm run -s compare -- --json         # the same, for machines: JSON alone on stdout
 *                                        # (-s keeps npm's own "> …" banner off stdout)
 *   npm run compare -- --markdown x.md   # write the Markdown (and x-cost.svg) elsewhere
 */
import { writeFileSync } from "node:fs";
import { basename } from "node:path";
import { pathToFileURL } from "node:url";
import { costChartSvg } from "./compareChart.js";
import { CHART_TITLE, chartSeries, renderMarkdown, renderText, toJson } from "./compareRender.js";
import { chartPathFor, parseArgs, type CompareArgs } from "./compareArgs.js";
import { buildComparison } from "./comparison.js";
import { synthForChecks } from "./synthForChecks.js";

export { chartPathFor, CompareUsageError, parseArgs, parseTraffic, type CompareArgs } from "./compareArgs.js";

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
