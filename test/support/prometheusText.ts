/**
 * A strict parser of the Prometheus text exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/), for tests of `GET /metrics`.
 * Written here because the npm parsers found are lenient and unmaintained; this one throws, with
 * the line number, on anything Prometheus itself would refuse: a bad metric or label name, a bad
 * escape, a value that is not a float, a TYPE after its samples or given twice, a family's samples
 * not together, a series repeated, and histogram buckets without `le`, not cumulative, or whose
 * `+Inf` bucket differs from `_count`.
 *
 * `# UNIT` lines (OpenMetrics; classic Prometheus ignores them as comments) are read into `unit`.
 * Not modelled: timestamps' meaning (parsed, kept), summaries' quantile rules, exemplars.
 */

export type MetricType = "counter" | "gauge" | "histogram" | "summary" | "untyped";

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
  timestamp?: number;
}

export interface MetricFamily {
  name: string;
  type: MetricType;
  help?: string;
  unit?: string;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES: readonly string[] = ["counter", "gauge", "histogram", "summary", "untyped"];

export class PrometheusParseError extends Error {
  override name = "PrometheusParseError";
  constructor(readonly line: number, message: string) {
    super(`line ${line}: ${message}`);
  }
}

function parseValue(raw: string, line: number): number {
  if (raw === "+Inf" || raw === "Inf") return Number.POSITIVE_INFINITY;
  if (raw === "-Inf") return Number.NEGATIVE_INFINITY;
  if (raw === "NaN") return Number.NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(raw)) throw new PrometheusParseError(line, `${JSON.stringify(raw)} is not a float`);
  return Number(raw);
}

function unescapeHelp(raw: string, line: number): string {
  return raw.replace(/\\(.?)/g, (_m, c: string) => {
    if (c === "\\") return "\\";
    if (c === "n") return "\n";
    throw new PrometheusParseError(line, `bad escape \\${c} in HELP`);
  });
}

/** Reads `{a="x",b="y"}` starting at `i` (at the brace); returns the labels and the index after `}`. */
function parseLabels(text: string, i: number, line: number): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  i += 1;
  for (;;) {
    if (text[i] === "}") return { labels, end: i + 1 };
    const nameMatch = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(text.slice(i));
    if (!nameMatch) throw new PrometheusParseError(line, `bad label name at ${JSON.stringify(text.slice(i, i + 20))}`);
    const name = nameMatch[0];
    i += name.length;
    if (text[i] !== "=" || text[i + 1] !== '"') throw new PrometheusParseError(line, `label ${name}: expected ="`);
    i += 2;
    let value = "";
    for (;;) {
      const c = text[i];
      if (c === undefined) throw new PrometheusParseError(line, `label ${name}: unterminated value`);
      if (c === '"') break;
      if (c === "\\") {
        const e = text[i + 1];
        if (e === "\\") value += "\\";
        else if (e === '"') value += '"';
        else if (e === "n") value += "\n";
        else throw new PrometheusParseError(line, `label ${name}: bad escape \\${e ?? ""}`);
        i += 2;
        continue;
      }
      value += c;
      i += 1;
    }
    i += 1;
    if (name in labels) throw new PrometheusParseError(line, `label ${name} given twice`);
    if (!LABEL_NAME.test(name)) throw new PrometheusParseError(line, `bad label name ${name}`);
    labels[name] = value;
    if (text[i] === ",") { i += 1; continue; }
    if (text[i] !== "}") throw new PrometheusParseError(line, `expected , or } after label ${name}`);
  }
}

/** The family a sample belongs to: histogram and summary samples carry a suffix. */
function familyOf(sampleName: string, families: Map<string, MetricFamily>): string {
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    if (sampleName.endsWith(suffix)) {
      const base = sampleName.slice(0, -suffix.length);
      const type = families.get(base)?.type;
      if (type === "histogram" || (type === "summary" && suffix !== "_bucket")) return base;
    }
  }
  return sampleName;
}

function checkHistogram(family: MetricFamily): void {
  const series = new Map<string, { buckets: Array<[number, number]>; count?: number }>();
  for (const s of family.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const entry = series.get(key) ?? { buckets: [] };
    series.set(key, entry);
    if (s.name === `${family.name}_bucket`) {
      if (le === undefined) throw new PrometheusParseError(0, `${family.name}: a bucket without le`);
      entry.buckets.push([parseValue(le, 0), s.value]);
    } else if (s.name === `${family.name}_count`) entry.count = s.value;
  }
  for (const [key, { buckets, count }] of series) {
    for (let i = 1; i < buckets.length; i += 1) {
      if (buckets[i]![0] <= buckets[i - 1]![0]) throw new PrometheusParseError(0, `${family.name}${key}: le not increasing`);
      if (buckets[i]![1] < buckets[i - 1]![1]) throw new PrometheusParseError(0, `${family.name}${key}: buckets not cumulative`);
    }
    const inf = buckets.at(-1);
    if (!inf || inf[0] !== Number.POSITIVE_INFINITY) throw new PrometheusParseError(0, `${family.name}${key}: no +Inf bucket`);
    if (count !== inf[1]) throw new PrometheusParseError(0, `${family.name}${key}: _count ${count} differs from the +Inf bucket ${inf[1]}`);
  }
}

/** Parses `text`; families by name, in the order they appear. */
export function parsePrometheusText(text: string): Map<string, MetricFamily> {
  const families = new Map<string, MetricFamily>();
  const seenSeries = new Set<string>();
  const closed = new Set<string>();
  let current: string | undefined;
  const family = (name: string, line: number): MetricFamily => {
    if (!METRIC_NAME.test(name)) throw new PrometheusParseError(line, `bad metric name ${JSON.stringify(name)}`);
    let f = families.get(name);
    if (!f) {
      f = { name, type: "untyped", samples: [] };
      families.set(name, f);
    }
    return f;
  };
  const lines = text.split("\n");
  if (lines.at(-1) !== "") throw new PrometheusParseError(lines.length, "the text must end with a newline");
  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === "") return;
    if (raw.startsWith("#")) {
      const m = /^#\s+(HELP|TYPE|UNIT)\s+(\S+)(?:\s(.*))?$/.exec(raw);
      if (!m) return; // a comment
      const [, keyword, name, rest = ""] = m;
      const f = family(name!, line);
      if (keyword === "HELP") {
        if (f.help !== undefined) throw new PrometheusParseError(line, `HELP for ${name} given twice`);
        f.help = unescapeHelp(rest, line);
      } else if (keyword === "TYPE") {
        if (!TYPES.includes(rest)) throw new PrometheusParseError(line, `unknown type ${JSON.stringify(rest)}`);
        if (f.samples.length) throw new PrometheusParseError(line, `TYPE for ${name} after its samples`);
        if (f.type !== "untyped" || (f as { typed?: boolean }).typed) throw new PrometheusParseError(line, `TYPE for ${name} given twice`);
        f.type = rest as MetricType;
        (f as { typed?: boolean }).typed = true;
      } else {
        f.unit = rest;
      }
      return;
    }
    const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(raw);
    if (!nameMatch) throw new PrometheusParseError(line, `bad metric name at ${JSON.stringify(raw.slice(0, 30))}`);
    const name = nameMatch[0];
    let i = name.length;
    let labels: Record<string, string> = {};
    if (raw[i] === "{") ({ labels, end: i } = parseLabels(raw, i, line));
    const rest = raw.slice(i);
    if (!/^[ \t]+/.test(rest)) throw new PrometheusParseError(line, `expected a space before the value of ${name}`);
    const parts = rest.trim().split(/[ \t]+/);
    if (parts.length > 2) throw new PrometheusParseError(line, `trailing text after the value of ${name}`);
    const value = parseValue(parts[0]!, line);
    const timestamp = parts[1] === undefined ? undefined : Number(parts[1]);
    if (timestamp !== undefined && !Number.isInteger(timestamp)) throw new PrometheusParseError(line, `bad timestamp ${parts[1]}`);
    const fname = familyOf(name, families);
    if (current !== fname) {
      if (closed.has(fname)) throw new PrometheusParseError(line, `samples of ${fname} are not together`);
      if (current) closed.add(current);
      current = fname;
    }
    const series = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (seenSeries.has(series)) throw new PrometheusParseError(line, `series ${series} repeated`);
    seenSeries.add(series);
    family(fname, line).samples.push(timestamp === undefined ? { name, labels, value } : { name, labels, value, timestamp });
  });
  for (const f of families.values()) {
    delete (f as { typed?: boolean }).typed;
    if (f.type === "histogram") checkHistogram(f);
  }
  return families;
}
