/**
 * The API reference as one HTML page, rendered on the server from the OpenAPI document (no
 * script, no outside assets: it passes the admin page's CSP). Each operation: method, path,
 * summary and description, parameters, its body's fields with their types in words and an example,
 * and its answers with an example of each success. The JSON Schemas themselves are in
 * /openapi.json, for tools; a person reads this (issue 27 item 16).
 */

type Json = Record<string, any>;

const escape = (s: unknown) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** `code` spans from markdown backticks, after escaping. */
const text = (s: unknown) => escape(s ?? "").replace(/`([^`]+)`/g, "<code>$1</code>");

/** zod's integers carry ±(2^53 - 1) as bounds: no bound a reader needs to see. */
const bound = (n: unknown) => (typeof n === "number" && Math.abs(n) < Number.MAX_SAFE_INTEGER ? n : undefined);
const range = (lo: unknown, hi: unknown, unit = "") => {
  const [min, max] = [bound(lo), bound(hi)];
  return min !== undefined && max !== undefined ? `${min}–${max}${unit}` : min !== undefined ? `at least ${min}${unit}` : max !== undefined ? `at most ${max}${unit}` : "";
};
const plural = (t: string) => (/^(string|integer|number|boolean|object)$/.test(t) ? `${t}s` : t);

/** A schema's type in words: "integer, 1–100", "one of `v1`, `v1a`", "array of strings (1–100)". HTML. */
function typeOf(schema: Json | undefined): string {
  if (!schema || Object.keys(schema).length === 0) return "any JSON value";
  if (schema.enum) return `one of ${(schema.enum as unknown[]).map((v) => `<code>${escape(JSON.stringify(v).replace(/^"|"$/g, ""))}</code>`).join(", ")}`;
  if ("const" in schema) return `<code>${escape(JSON.stringify(schema.const))}</code>`;
  const alternatives = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (alternatives) return alternatives.map(typeOf).join(" or ");
  const type = Array.isArray(schema.type) ? (schema.type as string[]).join(" or ") : (schema.type as string | undefined);
  switch (type) {
    case "array": {
      const items = typeOf(schema.items as Json);
      const count = range(schema.minItems, schema.maxItems);
      return `array of ${plural(items)}${count ? ` (${count})` : ""}`;
    }
    case "object":
      return schema.properties ? "object" : schema.additionalProperties ? `map of names to ${plural(typeOf(schema.additionalProperties as Json))}` : "object";
    case "string": {
      const length = schema.format ? "" : range(schema.minLength, schema.maxLength, " characters");
      return `string${schema.format ? ` (${escape(schema.format)})` : ""}${length && !(schema.minLength === 1 && schema.maxLength === undefined) ? `, ${length}` : ""}`;
    }
    case "integer":
    case "number": {
      const min = schema.exclusiveMinimum !== undefined ? undefined : schema.minimum;
      const bounds = schema.exclusiveMinimum !== undefined ? `above ${schema.exclusiveMinimum}${schema.maximum !== undefined ? `, up to ${schema.maximum}` : ""}` : range(min, schema.maximum);
      return `${type}${bounds ? `, ${bounds}` : ""}`;
    }
    default:
      return escape(type ?? "any JSON value");
  }
}

/** The fields of an object schema as table rows, nested objects' as `parent.child`. */
function fieldRows(schema: Json | undefined, prefix = "", depth = 0): string[] {
  if (!schema?.properties || depth > 3) return [];
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(schema.properties as Record<string, Json>).flatMap(([name, field]) => [
    `<tr><td><code>${escape(prefix + name)}</code></td><td>${typeOf(field)}</td><td>${required.has(name) ? "yes" : "no"}</td><td>${text(field.description ?? "")}</td></tr>`,
    ...fieldRows(field.type === "array" ? field.items : field, `${prefix}${name}${field.type === "array" ? "[]" : ""}.`, depth + 1),
  ]);
}

const EXAMPLE_STRINGS: Record<string, string> = {
  "date-time": "2026-01-31T12:00:00Z", uri: "https://your-receiver.example/webhooks", email: "ops@example.com", uuid: "0b5e7c2a-3f1d-4e8a-9c6b-2d4f8a1e7b30",
};

/**
 * A value the schema accepts, for the example bodies: the first enum value, the lower bound, a
 * dated string. `requiredOnly`: an object's required fields only (a request one can send as is).
 */
function exampleOf(schema: Json | undefined, name = "", depth = 0, requiredOnly = false): unknown {
  if (!schema || depth > 4) return null;
  if (schema.examples?.length) return schema.examples[0];
  if (schema.default !== undefined) return schema.default;
  if (schema.enum) return schema.enum[0];
  if ("const" in schema) return schema.const;
  const alternatives = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (alternatives) return exampleOf(alternatives.find((a) => a.type !== "null") ?? alternatives[0], name, depth, requiredOnly);
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== "null") : schema.type;
  switch (type) {
    case "array": return [exampleOf(schema.items, name, depth + 1, requiredOnly)];
    case "object":
      if (schema.properties) {
        const wanted = Object.entries(schema.properties as Record<string, Json>).filter(([k]) => !requiredOnly || (schema.required ?? []).includes(k));
        return Object.fromEntries(wanted.map(([k, v]) => [k, exampleOf(v, k, depth + 1, requiredOnly)]));
      }
      return schema.additionalProperties ? { name: exampleOf(schema.additionalProperties, "value", depth + 1) } : {};
    case "string":
      return EXAMPLE_STRINGS[schema.format] ?? (/url$/i.test(name) ? EXAMPLE_STRINGS.uri : /id$/i.test(name) ? `${name}_1` : /types?$/i.test(name) ? "order.paid" : "text");
    case "integer": return bound(schema.minimum) ?? 1;
    case "number": return schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : bound(schema.minimum) ?? 1;
    case "boolean": return false;
    default: return null;
  }
}

const example = (schema: Json | undefined) => `<p class="meta">Example (the required fields)</p><pre>${escape(JSON.stringify(exampleOf(schema, "", 0, true), null, 2))}</pre>`;

/** A body: its fields (an object's) with types in words, and an example. */
function bodyBlock(schema: Json | undefined): string {
  const rows = fieldRows(schema);
  const fields = rows.length ? `<table><tr><th>field</th><th>type</th><th>required</th><th>about</th></tr>${rows.join("")}</table>` : `<p>${typeOf(schema)}</p>`;
  return `${fields}${example(schema)}`;
}

function operationHtml(method: string, path: string, op: Json): string {
  const params = (op.parameters ?? []) as Json[];
  const body = op.requestBody?.content as Json | undefined;
  return `<section id="${escape(op.operationId)}">
<h3><span class="method">${escape(method.toUpperCase())}</span> <code>${escape(path)}</code> ${text(op.summary)}</h3>
${op.description ? `<p>${text(op.description)}</p>` : ""}
<p class="meta">operationId <code>${escape(op.operationId)}</code> · ${op.security?.length ? "bearer token" : "no token"}</p>
${params.length ? `<table><tr><th>parameter</th><th>in</th><th>required</th><th>type</th><th>about</th></tr>${params.map((p) => `<tr><td><code>${escape(p.name)}</code>${p.deprecated ? " (deprecated)" : ""}</td><td>${escape(p.in)}</td><td>${p.required ? "yes" : "no"}</td><td>${typeOf(p.schema)}</td><td>${text(p.description ?? "")}</td></tr>`).join("")}</table>` : ""}
${body ? Object.entries(body).map(([type, c]) => `<p>Body (${escape(type)}${op.requestBody.required ? "" : ", optional"}):</p>${bodyBlock((c as Json).schema)}`).join("") : ""}
<table><tr><th>status</th><th>meaning</th></tr>${Object.entries(op.responses as Json).map(([status, r]) => `<tr><td>${escape(status)}</td><td>${text((r as Json).description)}</td></tr>`).join("")}</table>
${Object.entries(op.responses as Json).filter(([status, r]) => Number(status) < 300 && (r as Json).content?.["application/json"]).map(([status, r]) => `<details><summary>${escape(status)} answer: example</summary><pre>${escape(JSON.stringify(exampleOf((r as Json).content["application/json"].schema), null, 2))}</pre></details>`).join("")}
</section>`;
}

/** The reference page of `document`; its links start with `basePath` (where the host mounts the API, `""` at the root). */
export function referencePage(document: Json, basePath = ""): string {
  const byTag = new Map<string, string[]>();
  const index: string[] = [];
  for (const [path, methods] of Object.entries(document.paths as Json)) {
    for (const [method, op] of Object.entries(methods as Json)) {
      const tag = (op as Json).tags?.[0] ?? "Other";
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push(operationHtml(method, path, op as Json));
      index.push(`<li><a href="#${escape((op as Json).operationId)}"><code>${escape(method.toUpperCase())} ${escape(path)}</code></a> ${text((op as Json).summary)}</li>`);
    }
  }
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(document.info.title)}</title>
<link rel="stylesheet" href="${escape(basePath)}/admin/app.css"></head>
<body><main>
<h1>${escape(document.info.title)} <small>${escape(document.info.version)}</small></h1>
<p>${text(document.info.description)}</p>
<p>Machine-readable: <a href="${escape(basePath)}/openapi.json"><code>${escape(basePath)}/openapi.json</code></a> (OpenAPI ${escape(document.openapi)}).</p>
<ul>${index.join("")}</ul>
${[...byTag].map(([tag, ops]) => `<h2>${escape(tag)}</h2>${ops.join("\n")}`).join("\n")}
</main></body></html>`;
}
