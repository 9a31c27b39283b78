/**
 * The price list of the comparison (stacks/prices.json): list prices with where each was read,
 * and the traffic assumptions the stacks cannot state. Loaded once and checked: a price without
 * its source page, the date it was read, and either a figure or the reason there is none, stops
 * the comparison, so no number reaches docs/comparison.md uncited.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export class PriceDataError extends Error {
  override name = "PriceDataError";
}

export interface Price {
  /** USD per `per`, or null when no published figure was found (then `unknown` says why). */
  usd: number | null;
  unknown?: string;
  per: string;
  region?: string;
  /** The provider's pricing page. */
  source: { name: string; url: string };
  /** Where the figure was actually read, when not the provider page itself. */
  readVia?: string;
  /** YYYY-MM-DD. */
  read: string;
}

export interface PriceList {
  currency: string;
  hoursPerMonth: number;
  prices: Record<string, Price>;
  assumptions: Record<string, { value: number; why: string }>;
}

const PRICES_FILE = fileURLToPath(new URL("./prices.json", import.meta.url));

/** What is wrong with each price, one line each; empty when all are cited. */
export function priceProblems(list: PriceList): string[] {
  const problems: string[] = [];
  for (const [id, p] of Object.entries(list.prices ?? {})) {
    const say = (what: string) => problems.push(`${id}: ${what}`);
    if (!p.source?.name) say("no source name (the provider's pricing page)");
    if (!/^https:\/\/\S+$/.test(p.source?.url ?? "")) say("no source URL (https://… of the provider's pricing page)");
    if (!/^\d{4}-\d{2}-\d{2}$/.test(p.read ?? "") || Number.isNaN(Date.parse(p.read))) say("no date it was read (read: YYYY-MM-DD)");
    if (!p.per) say("no unit (per)");
    if (p.usd === null || p.usd === undefined) {
      if (!p.unknown) say("no figure and no reason (set usd, or usd null with unknown: why)");
    } else if (typeof p.usd !== "number" || !Number.isFinite(p.usd) || p.usd < 0) {
      say(`usd must be a number ≥ 0, got ${JSON.stringify(p.usd)}`);
    }
  }
  for (const [id, a] of Object.entries(list.assumptions ?? {})) {
    if (id === "//") continue;
    if (typeof a.value !== "number" || !a.why) problems.push(`assumption ${id}: needs a value and why`);
  }
  return problems;
}

/** Parses and checks a price list. @throws PriceDataError naming every uncited price. */
export function checkPriceList(raw: unknown): PriceList {
  const list = raw as PriceList;
  if (!list || typeof list !== "object" || typeof list.prices !== "object") throw new PriceDataError("prices.json: expected { prices: { … } }");
  const problems = priceProblems(list);
  if (problems.length > 0) {
    throw new PriceDataError(`stacks/prices.json has prices the comparison cannot cite:\n${problems.map((p) => `- ${p}`).join("\n")}\nEvery price needs source {name, url}, read (YYYY-MM-DD), and usd or unknown.`);
  }
  return list;
}

let cached: PriceList | undefined;

/** The checked price list from stacks/prices.json. */
export function loadPrices(file = PRICES_FILE): PriceList {
  if (file !== PRICES_FILE) return checkPriceList(JSON.parse(readFileSync(file, "utf8")));
  cached ??= checkPriceList(JSON.parse(readFileSync(file, "utf8")));
  return cached;
}
