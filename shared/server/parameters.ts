/**
 * Path and query parameters checked before any route sees them, for every principal and every
 * route: a value must be UTF-8 and free of NUL, the one character PostgreSQL's text refuses
 * (SQLSTATE 22021). Without this, an id with `%00` reached the ownership lookup of an
 * application key (shared/tenancy/access.ts) and came back as a 500; now it is a 400 that names
 * the parameter, before any SQL.
 */
import { HttpError } from "./httpError.js";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Why a decoded value cannot be used, or null. */
function problemOf(value: string): string | null {
  return value.includes("\u0000") ? "contains the NUL character (%00), which cannot be stored or looked up" : null;
}

function refused(where: "path" | "query", name: string, problem: string): HttpError {
  return new HttpError(400, "invalid_parameter", `${where === "path" ? "Path" : "Query"} parameter ${name} ${problem}; remove it and retry.`, { parameter: name, in: where });
}

/** A path segment, percent-decoded; a 400 naming `name` when it is not UTF-8 or holds a NUL. */
export function pathParameter(name: string, raw: string): string {
  let value: string;
  try {
    value = decodeURIComponent(raw);
  } catch {
    throw refused("path", name, "is not valid percent-encoded UTF-8");
  }
  const problem = problemOf(value);
  if (problem) throw refused("path", name, problem);
  return value;
}

/**
 * The bytes of a form-encoded component as URLSearchParams reads them (`+` is a space, `%XX` a
 * byte, a `%` not followed by two hex digits itself), so that they can be checked as UTF-8:
 * URLSearchParams silently turns invalid UTF-8 into U+FFFD, which would then reach a filter.
 */
function formBytes(component: string): Buffer {
  const parts: Buffer[] = [];
  const text = component.replaceAll("+", " ");
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "%" && /^[0-9A-Fa-f]{2}$/.test(text.slice(i + 1, i + 3))) {
      parts.push(Buffer.from(text.slice(start, i), "utf8"), Buffer.from([parseInt(text.slice(i + 1, i + 3), 16)]));
      i += 2;
      start = i + 1;
    }
  }
  parts.push(Buffer.from(text.slice(start), "utf8"));
  return Buffer.concat(parts);
}

/** Decodes a component strictly: undefined when it is not UTF-8. */
function strictly(component: string): string | undefined {
  try {
    return utf8.decode(formBytes(component));
  } catch {
    return undefined;
  }
}

/** Checks every name and value of the query string `search` (with or without its `?`); throws a 400 naming the first bad one. */
export function checkQuery(search: string): void {
  for (const pair of search.replace(/^\?/, "").split("&")) {
    if (pair === "") continue;
    const at = pair.indexOf("=");
    const rawName = at === -1 ? pair : pair.slice(0, at);
    const name = strictly(rawName);
    if (name === undefined || problemOf(name)) {
      throw new HttpError(400, "invalid_parameter", `A query parameter name (${JSON.stringify(rawName.slice(0, 100))}) is not UTF-8 or contains a NUL character; remove it and retry.`, { in: "query" });
    }
    const value = at === -1 ? "" : strictly(pair.slice(at + 1));
    if (value === undefined) throw refused("query", name, "is not valid percent-encoded UTF-8");
    const problem = problemOf(value);
    if (problem) throw refused("query", name, problem);
  }
}
