/**
 * The command line of `npm run compare` (stacks/compare.ts), apart from the comparison itself so
 * `webhooks compare` can check its flags without loading the stacks.
 */
/** Webhooks a month in each direction that the default run prices. */
export const DEFAULT_TIERS = [1e6, 1e7, 1e8];

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
 * a bare path. The default run, without `--traffic` or `--json`, rewrites docs/comparison.md.
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
