/**
 * The side-by-side comparison as data, built from the three synthesized stacks: cost lines and
 * totals (stacks/pricesEstimate.ts), limits (compareLimits.ts), operations (compareOperations.ts)
 * and the services each component uses. Rendering is compareRender.ts; the command compare.ts.
 */
import type { TerraformJson } from "./app.js";
import type { Cloud } from "./artifacts.js";
import { DEFAULT_TIERS } from "./compareArgs.js";
import { limitRows } from "./compareLimits.js";
import { operationRows } from "./compareOperations.js";
import { loadPrices, type PriceList } from "./prices.js";
import { type CostLine, costLines, monthlyTotal, type Total } from "./pricesEstimate.js";
import { loadRelayMeasurements, type RelayMeasurements } from "./relayMeasured.js";
import { API_GATEWAY_REGIONS, CLOUD_RUN_FUNCTION_CPU, COLD_STARTS, ELASTIC_PREMIUM_VCPUS, INGRESS_FACTS, QUEUE_FACTS, serviceOf } from "./serviceFacts.js";
import { allResources } from "./terraformJson.js";

export const CLOUDS: Cloud[] = ["aws", "azure", "gcp"];
const COMPONENTS = ["ingress", "queue", "claim-checks", "workers", "relay", "migration", "migrate", "database", "secrets", "identities", "observability", "network"];
/** Inventory rows that say nothing to someone choosing a cloud: shown only in the folded inventory. */
const NOISE = ["hosting", "group", "apis"];

export type Row = [string, ...string[]];

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
  /** bench:cloudrelay's measurement the relay's lines and rows use (bench/results/cloudRelay.json). */
  relay: RelayMeasurements;
  notes: string[];
}

export const uniq = <T>(xs: T[]) => [...new Set(xs)];

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

export function buildComparison(stacks: Record<Cloud, TerraformJson>, options: { tiers?: number[]; prices?: PriceList; relay?: RelayMeasurements } = {}): Comparison {
  const tiers = options.tiers ?? DEFAULT_TIERS;
  const prices = options.prices ?? loadPrices();
  const relay = options.relay ?? loadRelayMeasurements();
  const money = Object.fromEntries(
    CLOUDS.map((c) => {
      const lines = costLines(c, stacks[c], prices, relay);
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
    operations: operationRows(stacks, relay),
    components: componentRows(stacks, false, NOISE),
    inventory: componentRows(stacks, true, []),
    prices,
    relay,
    notes,
  };
}

/** "$82.27" or "≥ $186 (unknown: …)". */
