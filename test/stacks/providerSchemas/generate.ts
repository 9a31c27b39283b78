/**
 * Writes test/stacks/providerSchemas/<provider>.json: for each resource type the Azure and GCP
 * stacks use, the arguments the provider's schema has at the pinned version, read from the
 * provider's Go source (no provider binary for azurerm or google exists on this machine). The
 * lists are facts with their provenance (repository, tag, commit, file); no provider code is kept.
 *
 *   git -C <mirror> archive v4.55.0 internal | tar -x -C /tmp/azurerm     (and likewise google, google-beta)
 *   npx tsx test/stacks/providerSchemas/generate.ts azurerm /tmp/azurerm <mirror git dir> v4.55.0
 *
 * What it reads: the map literal of `schema.Schema` / `pluginsdk.Schema` entries (inline, or
 * returned by a function or held in a package variable), each entry's `Computed` / `Optional` /
 * `Required`, and its `Elem: &Resource{Schema: …}` for blocks, recursively. An entry or block it
 * cannot follow (built at run time, or by a helper it does not find) is recorded as `unresolved`
 * and the test says it could not check inside it.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { synthAll } from "../synthFixture.js";

/** One argument: computed-only ones cannot be set; a block has its own arguments. */
export interface ArgumentFact {
  computedOnly?: true;
  block?: Record<string, ArgumentFact> | "unresolved";
  unresolved?: true;
}

export interface ProviderSchemaFacts {
  provider: string;
  version: string;
  source: { repository: string; tag: string; commit: string };
  generatedBy: string;
  resources: Record<string, { file: string; arguments: Record<string, ArgumentFact> }>;
  dataSources: Record<string, { file: string }>;
}

const REPOSITORIES: Record<string, string> = {
  azurerm: "github.com/hashicorp/terraform-provider-azurerm",
  google: "github.com/hashicorp/terraform-provider-google",
  "google-beta": "github.com/hashicorp/terraform-provider-google-beta",
};

// ---- a small reader of Go source: enough to walk composite literals ----

/** The source with comments blanked (strings and runes kept), so braces can be counted. */
function blankComments(src: string): string {
  let out = "";
  for (let i = 0; i < src.length; ) {
    const c = src[i]!;
    if (c === "/" && src[i + 1] === "/") {
      const end = src.indexOf("\n", i);
      const stop = end === -1 ? src.length : end;
      out += " ".repeat(stop - i);
      i = stop;
    } else if (c === "/" && src[i + 1] === "*") {
      const end = src.indexOf("*/", i + 2) + 2;
      out += src.slice(i, end).replace(/[^\n]/g, " ");
      i = end;
    } else if (c === '"' || c === "'" || c === "`") {
      const end = stringEnd(src, i);
      out += src.slice(i, end);
      i = end;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

function stringEnd(src: string, i: number): number {
  const quote = src[i]!;
  for (let j = i + 1; j < src.length; j++) {
    if (quote !== "`" && src[j] === "\\") j++;
    else if (src[j] === quote) return j + 1;
  }
  return src.length;
}

/** Index just after the bracket matching the one at `open`. */
function closeOf(src: string, open: number): number {
  const pairs: Record<string, string> = { "{": "}", "(": ")", "[": "]" };
  const stack: string[] = [];
  for (let i = open; i < src.length; i++) {
    const c = src[i]!;
    if (c === '"' || c === "'" || c === "`") { i = stringEnd(src, i) - 1; continue; }
    if (pairs[c]) stack.push(pairs[c]!);
    else if (c === "}" || c === ")" || c === "]") {
      stack.pop();
      if (stack.length === 0) return i + 1;
    }
  }
  throw new Error(`unbalanced bracket at ${open}`);
}

/** Top-level comma-separated parts of a literal's inside. */
function parts(inside: string): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = 0; i < inside.length; i++) {
    const c = inside[i]!;
    if (c === '"' || c === "'" || c === "`") { i = stringEnd(inside, i) - 1; continue; }
    if (c === "{" || c === "(" || c === "[") { i = closeOf(inside, i) - 1; continue; }
    if (c === ",") { out.push(inside.slice(start, i)); start = i + 1; }
  }
  out.push(inside.slice(start));
  return out.map((p) => p.trim()).filter(Boolean);
}

/** `Field: value` parts of a struct literal's inside. */
function fields(inside: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of parts(inside)) {
    const m = /^([A-Za-z_]\w*)\s*:\s*([\s\S]*)$/.exec(part);
    if (m) out.set(m[1]!, m[2]!.trim());
  }
  return out;
}

/** The inside of the first `{…}` at or after `from`. */
function braceInside(src: string, from: number): string {
  const open = src.indexOf("{", from);
  return src.slice(open + 1, closeOf(src, open) - 1);
}

// ---- the provider's functions and package variables, by name ----

interface Definition { file: string; dir: string; body: string }

class SourceIndex {
  readonly functions = new Map<string, Definition[]>();
  readonly variables = new Map<string, Definition[]>();
  /** Package variables holding a `&Resource{…}` (a block's element, shared by several schemas). */
  readonly resources = new Map<string, Definition[]>();
  readonly files: { file: string; text: string }[] = [];

  constructor(readonly root: string) {
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (name.endsWith(".go") && !name.endsWith("_test.go")) this.add(path);
      }
    };
    walk(root);
  }

  private add(path: string) {
    const text = blankComments(readFileSync(path, "utf8"));
    const file = relative(this.root, path);
    this.files.push({ file, text });
    const dir = file.split("/").slice(0, -1).join("/");
    for (const m of text.matchAll(/^func (?:\(\s*\w*\s*\*?(\w+)\s*\)\s*)?(\w+)\s*\(/gm)) {
      const name = m[1] ? `${m[1]}.${m[2]}` : m[2]!;
      const open = text.indexOf("{", m.index! + m[0].length);
      const bodyEnd = closeOf(text, open);
      push(this.functions, name, { file, dir, body: text.slice(m.index!, bodyEnd) });
    }
    for (const m of text.matchAll(/^var (\w+)\s*(?:\*\w+\.Resource\s*)?=\s*&\w+\.Resource\s*\{/gm)) {
      const open = m.index! + m[0].length - 1;
      push(this.resources, m[1]!, { file, dir, body: text.slice(open + 1, closeOf(text, open) - 1) });
    }
    for (const m of text.matchAll(/^var (\w+)\s*=\s*map\[string\]\*\w+\.Schema\s*\{/gm)) {
      const open = m.index! + m[0].length - 1;
      push(this.variables, m[1]!, { file, dir, body: text.slice(open + 1, closeOf(text, open) - 1) });
    }
  }

  /** A function or variable named in an expression (`pkg.Name` or `Name`), preferring the caller's package. */
  find(kind: "functions" | "variables" | "resources", expression: string, nearDir: string): Definition | undefined {
    const m = /^(?:(\w+)\.)?(\w+)$/.exec(expression);
    if (!m) return undefined;
    const candidates = this[kind].get(m[2]!) ?? [];
    if (m[1]) return candidates.find((d) => d.dir.split("/").at(-1) === m[1]) ?? (candidates.length === 1 ? candidates[0] : undefined);
    return candidates.find((d) => d.dir === nearDir) ?? (candidates.length === 1 ? candidates[0] : undefined);
  }
}

function push<T>(map: Map<string, T[]>, key: string, value: T) {
  const list = map.get(key) ?? [];
  list.push(value);
  map.set(key, list);
}

// ---- schemas ----

const SCHEMA_MAP = /^map\[string\]\*\w+\.Schema\s*\{/;
const CALL = /^&?([\w.]+)\s*\(([\s\S]*)\)$/;

/** The entries of a schema map given as a literal, a function returning one, or a package variable. */
function schemaMap(expression: string, index: SourceIndex, dir: string, depth = 0): Record<string, ArgumentFact> | undefined {
  if (depth > 12) return undefined;
  const e = expression.trim();
  if (SCHEMA_MAP.test(e)) return entries(braceInside(e, 0), index, dir, depth);
  const call = CALL.exec(e);
  if (call) {
    const fn = index.find("functions", call[1]!, dir);
    if (!fn) return undefined;
    const ret = /return\s+(map\[string\]\*\w+\.Schema\s*\{)/.exec(fn.body);
    if (ret) return entries(braceInside(fn.body, ret.index!), index, fn.dir, depth + 1);
    // `s := map[string]*Schema{…}; …; return s`: the literal, as far as it goes.
    const local = /(\w+)\s*:=\s*map\[string\]\*\w+\.Schema\s*\{/.exec(fn.body);
    if (local) return entries(braceInside(fn.body, local.index!), index, fn.dir, depth + 1);
    return undefined;
  }
  const variable = index.find("variables", e, dir);
  if (variable) return entries(variable.body, index, variable.dir, depth + 1);
  return undefined;
}

function entries(inside: string, index: SourceIndex, dir: string, depth: number): Record<string, ArgumentFact> {
  const out: Record<string, ArgumentFact> = {};
  for (const part of parts(inside)) {
    const m = /^"([^"]+)"\s*:\s*([\s\S]*)$/.exec(part);
    if (!m) continue;
    out[m[1]!] = argument(m[2]!.trim(), index, dir, depth);
  }
  return out;
}

function argument(value: string, index: SourceIndex, dir: string, depth: number): ArgumentFact {
  let literal: string | undefined;
  let where = dir;
  if (/^(&?\w+\.Schema\s*)?\{/.test(value)) literal = braceInside(value, 0);
  else {
    const call = CALL.exec(value);
    const fn = call ? index.find("functions", call[1]!, dir) : undefined;
    // `return &Schema{…}`, or `s := &Schema{…}; …; return s` (the literal, as far as it goes).
    const ret = fn ? /return\s+&\w+\.Schema\s*\{/.exec(fn.body) ?? /\w+\s*:=\s*&\w+\.Schema\s*\{/.exec(fn.body) : null;
    if (fn && ret) {
      literal = braceInside(fn.body, ret.index!);
      where = fn.dir;
    }
  }
  if (literal === undefined) return { unresolved: true };
  const f = fields(literal);
  const fact: ArgumentFact = {};
  if (f.get("Computed") === "true" && f.get("Optional") !== "true" && f.get("Required") !== "true") fact.computedOnly = true;
  const elem = f.get("Elem");
  if (elem) {
    const block = resourceSchema(elem, index, where, depth + 1);
    if (block !== null) fact.block = block ?? "unresolved";
  }
  return fact;
}

/**
 * The schema of an `Elem`: a map for `&Resource{Schema: …}` (or a function returning one), null
 * for a primitive element (`&Schema{Type: …}`), undefined when it cannot be followed.
 */
function resourceSchema(elem: string, index: SourceIndex, dir: string, depth: number): Record<string, ArgumentFact> | null | undefined {
  const e = elem.trim();
  if (/^&?\w+\.Schema\s*\{/.test(e)) return null;
  if (/^&?\w+\.Resource\s*\{/.test(e)) {
    const schema = fields(braceInside(e, 0)).get("Schema");
    return schema ? schemaMap(schema, index, dir, depth) : undefined;
  }
  const shared = index.find("resources", e, dir);
  if (shared) {
    const schema = fields(shared.body).get("Schema");
    return schema ? schemaMap(schema, index, shared.dir, depth) : undefined;
  }
  const call = CALL.exec(e);
  const fn = call ? index.find("functions", call[1]!, dir) : undefined;
  if (!fn) return undefined;
  const ret = /return\s+&\w+\.(Resource|Schema)\s*\{/.exec(fn.body);
  if (!ret) return undefined;
  if (ret[1] === "Schema") return null;
  const schema = fields(braceInside(fn.body, ret.index!)).get("Schema");
  return schema ? schemaMap(schema, index, fn.dir, depth) : undefined;
}

// ---- where each provider registers its resource types ----

interface Located { file: string; arguments: Record<string, ArgumentFact> }

/** google and google-beta: `"google_x": pkg.ResourceX(),` (or an IAM member built from a parent schema). */
function googleResource(type: string, index: SourceIndex): Located | undefined {
  for (const { file, text } of index.files.filter((f) => /(^|\/)provider\/provider\w*\.go$/.test(f.file))) {
    for (const m of text.matchAll(new RegExp(`"${type}"\\s*:\\s*([^\\n]+),\\s*$`, "gm"))) {
      const before = text.slice(0, m.index);
      const mapName = [...before.matchAll(/(\w+)\s*=\s*map\[string\]\*schema\.Resource\s*\{/g)].at(-1)?.[1] ?? "";
      if (/data ?source/i.test(mapName)) continue;
      const expression = m[1]!.trim();
      const iam = /^tpgiamresource\.ResourceIamMember\(([\w.]+)\s*,/.exec(expression);
      if (iam) {
        const base = schemaMap("tpgiamresource.IamMemberBaseSchema", index, "")!;
        const parent = schemaMap(iam[1]!, index, "");
        if (!parent) return undefined;
        return { file: `${index.find("variables", iam[1]!, "")?.file} + tpgiamresource/resource_iam_member.go`, arguments: { ...base, ...parent } };
      }
      const call = CALL.exec(expression);
      const fn = call ? index.find("functions", call[1]!, file.split("/").slice(0, -1).join("/")) : undefined;
      if (!fn) return undefined;
      const schema = /\bSchema:\s*/.exec(fn.body);
      if (!schema) return undefined;
      const expr = schemaExpression(fn.body, schema.index! + schema[0].length);
      const args = schemaMap(expr, index, fn.dir);
      return args ? { file: fn.file, arguments: args } : undefined;
    }
  }
  return undefined;
}

/** The expression after `Schema:` up to its top-level comma. */
function schemaExpression(body: string, from: number): string {
  const rest = body.slice(from);
  const open = rest.search(/[{(]/);
  const comma = rest.indexOf(",");
  if (comma !== -1 && (open === -1 || comma < open)) return rest.slice(0, comma).trim();
  return rest.slice(0, closeOf(rest, open)).trim();
}

/** azurerm: typed resources (`ResourceType()` returns the name) and untyped ones (registration.go). */
function azurermResource(type: string, index: SourceIndex): Located | undefined {
  for (const [name, defs] of index.functions) {
    if (!name.endsWith(".ResourceType")) continue;
    for (const d of defs) {
      if (!new RegExp(`return\\s+"${type}"`).test(d.body)) continue;
      const receiver = name.split(".")[0]!;
      // A typed data source of the same name has ResourceType() too, but no Create().
      if (!index.functions.get(`${receiver}.Create`)?.some((f) => f.dir === d.dir)) continue;
      const args = index.functions.get(`${receiver}.Arguments`)?.find((f) => f.dir === d.dir);
      const attrs = index.functions.get(`${receiver}.Attributes`)?.find((f) => f.dir === d.dir);
      if (!args) return undefined;
      const ret = /return\s+(map\[string\]\*\w+\.Schema\s*\{)/.exec(args.body);
      const argumentsOf = ret ? entries(braceInside(args.body, ret.index!), index, args.dir, 0) : schemaMap(/return\s+([^\n]+)/.exec(args.body)?.[1] ?? "", index, args.dir);
      if (!argumentsOf) return undefined;
      const computed = attrs ? (/return\s+(map\[string\]\*\w+\.Schema\s*\{)/.exec(attrs.body) ? entries(braceInside(attrs.body, /return\s+map/.exec(attrs.body)!.index!), index, attrs.dir, 0) : {}) : {};
      for (const key of Object.keys(computed)) argumentsOf[key] ??= { computedOnly: true };
      return { file: d.file, arguments: argumentsOf };
    }
  }
  for (const { file, text } of index.files.filter((f) => f.file.endsWith("registration.go"))) {
    const m = [...text.matchAll(new RegExp(`"${type}"\\s*:\\s*(\\w+)\\(\\)`, "g"))]
      // In SupportedResources(), not SupportedDataSources().
      .find((hit) => /Resources\(\)/.test([...text.slice(0, hit.index).matchAll(/func \([^)]*\) (\w+\(\))/g)].at(-1)?.[1] ?? "") && !/DataSources/.test([...text.slice(0, hit.index).matchAll(/func \([^)]*\) (\w+)\(/g)].at(-1)?.[1] ?? ""));
    if (!m) continue;
    const dir = file.split("/").slice(0, -1).join("/");
    const fn = index.find("functions", m[1]!, dir);
    if (!fn) return undefined;
    const schema = /\bSchema:\s*/.exec(fn.body);
    if (!schema) return undefined;
    const args = schemaMap(schemaExpression(fn.body, schema.index! + schema[0].length), index, fn.dir);
    return args ? { file: fn.file, arguments: args } : undefined;
  }
  return undefined;
}

function dataSourceFile(type: string, index: SourceIndex): string | undefined {
  const quoted = `"${type}"`;
  return index.files.find((f) => f.text.includes(quoted) && /registration\.go$|(^|\/)provider\/provider\w*\.go$/.test(f.file))?.file;
}

// ---- main ----

function typesUsed(): Record<string, { resources: Set<string>; data: Set<string> }> {
  // Every optional part switched on, so every resource type a configuration can produce is listed.
  const stacks = synthAll({ alertWebhookUrl: "https://alerts.example.com/hooks", alertEmail: "ops@example.com" });
  const out: Record<string, { resources: Set<string>; data: Set<string> }> = {};
  const add = (provider: string, kind: "resources" | "data", type: string) => ((out[provider] ??= { resources: new Set(), data: new Set() })[kind].add(type));
  for (const cloud of ["azure", "gcp"] as const) {
    const json = stacks[cloud] as { resource?: Record<string, Record<string, { provider?: string }>>; data?: Record<string, object> };
    for (const [type, byName] of Object.entries(json.resource ?? {})) {
      for (const body of Object.values(byName)) add(body.provider === "google-beta" ? "google-beta" : type.split("_")[0]!, "resources", type);
    }
    for (const type of Object.keys(json.data ?? {})) add(type.split("_")[0]!, "data", type);
  }
  return out;
}

export function generate(provider: string, root: string, gitDir: string, tag: string): ProviderSchemaFacts {
  const index = new SourceIndex(root);
  const used = typesUsed()[provider];
  if (!used) throw new Error(`no ${provider} resources in the stacks`);
  const commit = execFileSync("git", ["-C", gitDir, "rev-list", "-n", "1", tag], { encoding: "utf8" }).trim();
  const facts: ProviderSchemaFacts = {
    provider: `hashicorp/${provider}`,
    version: tag.replace(/^v/, ""),
    source: { repository: REPOSITORIES[provider]!, tag, commit },
    generatedBy: "test/stacks/providerSchemas/generate.ts (reads the provider's Go schema definitions; see its header)",
    resources: {},
    dataSources: {},
  };
  for (const type of [...used.resources].sort()) {
    const found = provider === "azurerm" ? azurermResource(type, index) : googleResource(type, index);
    if (!found) throw new Error(`${type}: no schema found in ${root}`);
    facts.resources[type] = found;
  }
  for (const type of [...used.data].sort()) {
    const file = dataSourceFile(type, index);
    if (!file) throw new Error(`data ${type}: not registered in ${root}`);
    facts.dataSources[type] = { file };
  }
  return facts;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [provider, root, gitDir, tag] = process.argv.slice(2);
  if (!provider || !root || !gitDir || !tag) {
    console.error("usage: generate.ts <azurerm|google|google-beta> <extracted source root> <provider git dir> <tag>");
    process.exit(2);
  }
  const facts = generate(provider, root, gitDir, tag);
  const out = fileURLToPath(new URL(`./${provider}.json`, import.meta.url));
  writeFileSync(out, `${JSON.stringify(facts, null, 1)}\n`);
  const unresolved = JSON.stringify(facts).match(/"unresolved"/g)?.length ?? 0;
  console.log(`wrote ${out}: ${Object.keys(facts.resources).length} resource types, ${unresolved} unresolved entries`);
}
