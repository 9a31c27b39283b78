/**
 * Reading one header deliberately. Names are matched without regard to case (cloud functions pass
 * headers as the sender wrote them), and a header given more than once (an array, or two keys that
 * differ only in case) is ambiguous: we refuse to guess which copy was meant.
 */
import { reject, type HeaderBag, type Rejection } from "./types.js";

export type HeaderRead = { value: string } | { absent: true } | { ambiguous: true };

/** Bags made by `indexHeaders`: names already lowercase and unique, so a read is one lookup. */
const INDEXED = new WeakSet<HeaderBag>();

/**
 * The same headers keyed by lowercase name, values of names that differ only in case gathered
 * into one array (so they still read as ambiguous). A verifier reads three or four headers of each
 * request; indexing once instead of scanning every name for each read saves a few µs a request.
 * The index is a snapshot: build it where it is used, not ahead of changes to `headers`.
 */
export function indexHeaders(headers: HeaderBag): HeaderBag {
  if (INDEXED.has(headers)) return headers;
  const index: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const [key, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const name = key.toLowerCase();
    const seen = index[name];
    index[name] = seen === undefined ? value : ([] as string[]).concat(seen, value);
  }
  INDEXED.add(index);
  return index;
}

export function readHeader(headers: HeaderBag, name: string): HeaderRead {
  const wanted = name.toLowerCase();
  const values: string[] = [];
  // Scanning an index finds the same values, only slower: this test's "false" mutant is equivalent (docs/testing.md).
  if (INDEXED.has(headers)) {
    const value = headers[wanted];
    if (Array.isArray(value)) values.push(...value);
    else if (value !== undefined) values.push(value);
  } else {
    for (const [key, value] of Object.entries(headers)) {
      if (key.toLowerCase() !== wanted || value === undefined) continue;
      if (Array.isArray(value)) values.push(...value);
      else values.push(value);
    }
  }
  const present = values.map((v) => v.trim()).filter((v) => v !== "");
  if (values.length > 1) return { ambiguous: true };
  const [only] = present;
  return only === undefined ? { absent: true } : { value: only };
}

/**
 * The header's single value, or a rejection: `missingCode` when absent, `ambiguous_header` when repeated.
 * @example requireHeader(headers, "webhook-id", 401, "missing_header", "Standard Webhooks signs it")
 */
export function requireHeader(
  headers: HeaderBag,
  name: string,
  status: 400 | 401,
  missingCode: string,
  why: string,
): string | Rejection {
  const read = readHeader(headers, name);
  if ("value" in read) return read.value;
  if ("ambiguous" in read) {
    return reject(status, "ambiguous_header", `The ${name} header was sent more than once; send it exactly once.`);
  }
  return reject(status, missingCode, `The ${name} header is missing: ${why}.`);
}

export function isRejection(value: unknown): value is Rejection {
  return typeof value === "object" && value !== null && (value as Rejection).ok === false;
}
