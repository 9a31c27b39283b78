/**
 * The API reference as one HTML page, rendered on the server from the OpenAPI document (no
 * script, no outside assets: it passes the admin page's CSP). Each operation: method, path,
 * summary and description, parameters, request body and answers with their JSON Schemas.
 */

type Json = Record<string, any>;

const escape = (s: unknown) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** `code` spans from markdown backticks, after escaping. */
const text = (s: unknown) => escape(s ?? "").replace(/`([^`]+)`/g, "<code>$1</code>");
const schemaBlock = (schema: unknown) => `<details><summary>schema</summary><pre>${escape(JSON.stringify(schema, null, 2))}</pre></details>`;

function operationHtml(method: string, path: string, op: Json): string {
  const params = (op.parameters ?? []) as Json[];
  const body = op.requestBody?.content as Json | undefined;
  return `<section id="${escape(op.operationId)}">
<h3><span class="method">${escape(method.toUpperCase())}</span> <code>${escape(path)}</code> ${text(op.summary)}</h3>
${op.description ? `<p>${text(op.description)}</p>` : ""}
<p class="meta">operationId <code>${escape(op.operationId)}</code> · ${op.security?.length ? "bearer token" : "no token"}</p>
${params.length ? `<table><tr><th>parameter</th><th>in</th><th>required</th><th>schema</th></tr>${params.map((p) => `<tr><td><code>${escape(p.name)}</code></td><td>${escape(p.in)}</td><td>${p.required ? "yes" : "no"}</td><td><code>${escape(JSON.stringify(p.schema))}</code></td></tr>`).join("")}</table>` : ""}
${body ? Object.entries(body).map(([type, c]) => `<p>Body (${escape(type)}${op.requestBody.required ? "" : ", optional"}):</p>${schemaBlock((c as Json).schema)}`).join("") : ""}
<table><tr><th>status</th><th>meaning</th><th>body</th></tr>${Object.entries(op.responses as Json).map(([status, r]) => `<tr><td>${escape(status)}</td><td>${text((r as Json).description)}</td><td>${(r as Json).content ? schemaBlock(Object.values((r as Json).content as Json)[0].schema) : ""}</td></tr>`).join("")}</table>
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
