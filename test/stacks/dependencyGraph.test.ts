/**
 * Terraform refuses a plan whose resources depend on each other in a circle, and nothing here can
 * run `terraform plan` (no provider registry). So the graph is checked from the synthesized JSON:
 * every `${…}` reference to a resource or data source and every `depends_on` entry is an edge, and
 * no stack may have a cycle. It also checks that every edge points at something the stack declares
 * (a typo'd or removed resource would fail the plan the same way).
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { TerraformJson } from "../../stacks/app.js";
import type { Cloud } from "../../stacks/artifacts.js";
import { synthAll } from "./synthFixture.js";

let stacks: Record<Cloud, TerraformJson>;
beforeAll(() => {
  // With every optional part switched on, so their resources are in the graph too.
  stacks = synthAll({ alertEmail: "ops@example.com", alertWebhookUrl: "https://alerts.example.com/hook" });
});

type Graph = Map<string, Set<string>>;

/** Node ids: `type.name` for resources, `data.type.name` for data sources. */
function graphOf(json: TerraformJson): { graph: Graph; declared: Set<string> } {
  const graph: Graph = new Map();
  const declared = new Set<string>();
  const bodies: [string, unknown][] = [];
  for (const [type, byName] of Object.entries(json.resource ?? {})) for (const [name, body] of Object.entries(byName)) bodies.push([`${type}.${name}`, body]);
  for (const [type, byName] of Object.entries(json.data ?? {})) for (const [name, body] of Object.entries(byName)) bodies.push([`data.${type}.${name}`, body]);
  for (const [id] of bodies) declared.add(id);
  const refPattern = /\b(data\.)?([a-z][a-z0-9_]*)\.([A-Za-z0-9_-]+)\b/g;
  for (const [id, body] of bodies) {
    const edges = new Set<string>();
    const visit = (value: unknown, key?: string) => {
      if (typeof value === "string") {
        const targets = key === "depends_on" ? [value] : [...value.matchAll(/\$\{([^}]*)\}/g)].flatMap((m) => [...m[1]!.matchAll(refPattern)].map((r) => `${r[1] ?? ""}${r[2]}.${r[3]}`));
        for (const t of targets) if (t !== id && (declared.has(t) || key === "depends_on")) edges.add(t);
      } else if (Array.isArray(value)) value.forEach((v) => visit(v, key));
      else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) if (k !== "//") visit(v, k);
    };
    visit(body);
    graph.set(id, edges);
  }
  return { graph, declared };
}

function findCycle(graph: Graph): string[] | undefined {
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const dfs = (node: string): string[] | undefined => {
    state.set(node, "open");
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === "open") return [...stack.slice(stack.indexOf(next)), next];
      if (!state.has(next)) {
        const found = dfs(next);
        if (found) return found;
      }
    }
    stack.pop();
    state.set(node, "done");
    return undefined;
  };
  for (const node of graph.keys()) {
    if (state.has(node)) continue;
    const found = dfs(node);
    if (found) return found;
  }
  return undefined;
}

describe("the stacks' dependency graphs", () => {
  it.each(["aws", "azure", "gcp"] as const)("%s: no cycle, and every depends_on names a declared resource", (cloud) => {
    const { graph, declared } = graphOf(stacks[cloud]);
    const dangling = [...graph].flatMap(([from, to]) => [...to].filter((t) => !declared.has(t)).map((t) => `${from} → ${t}`));
    expect(dangling).toEqual([]);
    expect(findCycle(graph)).toBeUndefined();
    expect(graph.size).toBeGreaterThan(40);
  });

  it("finds a cycle when there is one (the check itself)", () => {
    const json: TerraformJson = { resource: { a_thing: { one: { x: "${a_thing.two.id}" }, two: { depends_on: ["a_thing.three"] }, three: { y: ["${a_thing.one.arn}"] } } } };
    expect(findCycle(graphOf(json).graph)).toEqual(["a_thing.one", "a_thing.two", "a_thing.three", "a_thing.one"]);
  });
});
