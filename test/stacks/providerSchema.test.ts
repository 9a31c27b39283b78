/**
 * Must-show 3 of issue 25: every resource type and argument the Azure and GCP stacks synthesize,
 * checked against the provider's own schema at the version the bindings pin (azurerm 4.55.0,
 * google and google-beta 6.50.0). No azurerm or google binary exists on this machine, so the
 * schema is the committed list test/stacks/providerSchemas/<provider>.json, generated from the
 * provider's Go source at that tag by test/stacks/providerSchemas/generate.ts (its header says how).
 *
 * What it catches: a resource type the provider does not have, an argument it does not have (a
 * misspelling, one removed or renamed in the pinned version), a computed-only attribute set as an
 * argument, and the same inside nested blocks. What it cannot catch: values (an enum, a format, a
 * range; the provider's ValidateFunc runs only in the binary), required arguments left out,
 * ConflictsWith / ExactlyOneOf, a block given where an attribute belongs (or the reverse), what the
 * cloud's API refuses (item 1's CPU rule was one), and arguments inside schemas the generator
 * could not follow (recorded as unresolved: azurerm's shared helpers from go-azure-helpers, such
 * as `identity`; this test counts and names them). The hashicorp/time resource (`time_sleep`) is
 * not covered.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { beforeAll, describe, expect, it } from "vitest";
import type { TerraformJson } from "../../stacks/app.js";
import type { ArgumentFact, ProviderSchemaFacts } from "./providerSchemas/generate.js";
import { synthAll } from "./synthFixture.js";

const facts = Object.fromEntries(
  ["azurerm", "google", "google-beta"].map((p) => [p, JSON.parse(readFileSync(new URL(`./providerSchemas/${p}.json`, import.meta.url), "utf8")) as ProviderSchemaFacts]),
);
const require = createRequire(import.meta.url);
const pinned = (p: string) => (require(`@cdktf/provider-${p}/package.json`) as { cdktf: { provider: { version: string } } }).cdktf.provider.version;

/** Terraform's own meta-arguments and blocks, which no provider schema lists. */
const META = new Set(["//", "depends_on", "lifecycle", "count", "for_each", "provider", "provisioner", "connection", "timeouts"]);
/** Resource types of providers whose source was not read (see the header). */
const NOT_COVERED = new Set(["time_sleep"]);
/**
 * What the Azure check cannot look inside, by argument name: values built by go-azure-helpers'
 * shared schemas (`tags`, a map on every resource; the `identity` block of the Function Apps),
 * which live outside the provider's repository, and time_sleep. A new name here is a new blind
 * spot: look at it before adding it.
 */
const AZURE_UNCHECKED = ["identity", "tags", "time_sleep"];

interface Finding { problems: string[]; unchecked: string[] }

function providerOf(type: string, body: Record<string, unknown>): string {
  return body.provider === "google-beta" ? "google-beta" : type.split("_")[0]!;
}

function checkBody(body: Record<string, unknown>, schema: Record<string, ArgumentFact>, at: string, found: Finding) {
  for (const [key, value] of Object.entries(body)) {
    if (META.has(key)) continue;
    const fact = schema[key];
    if (!fact) {
      found.problems.push(`${at}.${key}: no such argument`);
      continue;
    }
    if (fact.computedOnly) found.problems.push(`${at}.${key}: computed by the provider, cannot be set`);
    const elements = Array.isArray(value) ? value : [value];
    if (!elements.some((v) => v !== null && typeof v === "object" && !Array.isArray(v))) continue;
    if (fact.block && fact.block !== "unresolved") {
      elements.forEach((element, i) => checkBody(element as Record<string, unknown>, fact.block as Record<string, ArgumentFact>, `${at}.${key}${Array.isArray(value) ? `[${i}]` : ""}`, found));
    } else if (fact.block === "unresolved" || fact.unresolved) {
      found.unchecked.push(`${at}.${key}`);
    }
    // A map attribute (tags, labels, environment variables) holds an object too: nothing to check inside.
  }
}

/** Every resource and data source of a synthesized stack against the generated schema facts. */
export function checkAgainstProviderSchemas(json: TerraformJson): Finding {
  const found: Finding = { problems: [], unchecked: [] };
  for (const [type, byName] of Object.entries((json.resource ?? {}) as Record<string, Record<string, Record<string, unknown>>>)) {
    for (const [name, body] of Object.entries(byName)) {
      if (NOT_COVERED.has(type)) {
        found.unchecked.push(`${type}.${name}`);
        continue;
      }
      const provider = facts[providerOf(type, body)];
      const resource = provider?.resources[type];
      if (!resource) {
        found.problems.push(`${type}.${name}: ${provider ? `hashicorp/${providerOf(type, body)} ${provider.version} has no such resource type` : "no schema facts for its provider"} (or the list is stale: regenerate with test/stacks/providerSchemas/generate.ts)`);
        continue;
      }
      checkBody(body, resource.arguments, `${type}.${name}`, found);
    }
  }
  for (const type of Object.keys((json.data ?? {}) as object)) {
    if (!facts[type.split("_")[0]!]?.dataSources[type]) found.problems.push(`data.${type}: not in the schema facts`);
  }
  return found;
}

let stacks: ReturnType<typeof synthAll>;
beforeAll(() => {
  // Every optional part on: the alerts' webhook and e-mail add resources, and so do the relay's destination grants.
  stacks = synthAll({
    alertWebhookUrl: "https://alerts.example.com/hooks",
    alertEmail: "ops@example.com",
    relayDestinations: [
      "/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/acme-rg/providers/Microsoft.ServiceBus/namespaces/acme-events/topics/orders",
      "projects/acme-analytics/topics/orders",
    ],
  });
});

describe("the Azure and GCP stacks against the providers' schemas at the pinned versions", () => {
  it("the schema facts are of the versions the bindings are generated from, with their provenance", () => {
    for (const [provider, f] of Object.entries(facts)) {
      expect(f.version, provider).toBe(pinned(provider));
      expect(f.source).toMatchObject({ repository: `github.com/hashicorp/terraform-provider-${provider}`, tag: `v${f.version}`, commit: expect.stringMatching(/^[0-9a-f]{40}$/) });
    }
  });

  it.each(["azure", "gcp"] as const)("%s: every resource type and argument, nested blocks included, is in the provider's schema", (cloud) => {
    const found = checkAgainstProviderSchemas(stacks[cloud]);
    expect(found.problems).toEqual([]);
    // What it could not look inside, named so that a new one is seen (see the header).
    const unchecked = [...new Set(found.unchecked.map((u) => (u.startsWith("time_sleep.") ? "time_sleep" : u.split(".").at(-1)!.replace(/\[\d+\]$/, ""))))].sort();
    if (cloud === "gcp") expect(unchecked).toEqual([]);
    else expect(unchecked).toEqual(AZURE_UNCHECKED);
  });

  it("fails on a misspelt argument, top-level or in a block, on a computed attribute set, and on an unknown type", () => {
    const gcp = structuredClone(stacks.gcp) as { resource: Record<string, Record<string, Record<string, unknown>>> };
    const fn = Object.values(gcp.resource.google_cloudfunctions2_function!)[0]!;
    const service = (Array.isArray(fn.service_config) ? fn.service_config[0] : fn.service_config) as Record<string, unknown>;
    service.available_memmory = service.available_memory;
    delete service.available_memory;
    fn.state = "ACTIVE";
    const azure = structuredClone(stacks.azure) as { resource: Record<string, Record<string, Record<string, unknown>>> };
    const queue = Object.values(azure.resource.azurerm_servicebus_queue!)[0]!;
    queue.max_delivery_count_typo = queue.max_delivery_count;
    azure.resource.azurerm_servicebus_queue_v2 = { q: { name: "x" } };
    const gcpProblems = checkAgainstProviderSchemas(gcp as unknown as TerraformJson).problems;
    expect(gcpProblems).toEqual([
      expect.stringMatching(/^google_cloudfunctions2_function\.\w+\.service_config(\[0\])?\.available_memmory: no such argument$/),
      expect.stringMatching(/^google_cloudfunctions2_function\.\w+\.state: computed by the provider, cannot be set$/),
    ]);
    const azureProblems = checkAgainstProviderSchemas(azure as unknown as TerraformJson).problems;
    expect(azureProblems).toEqual([
      expect.stringMatching(/^azurerm_servicebus_queue\.\w+\.max_delivery_count_typo: no such argument$/),
      expect.stringMatching(/^azurerm_servicebus_queue_v2\.q: hashicorp\/azurerm 4\.55\.0 has no such resource type/),
    ]);
  });
});
