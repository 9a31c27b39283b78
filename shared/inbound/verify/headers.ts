/**
 * Reading one header deliberately. Names are matched without regard to case (cloud functions pass
 * headers as the sender wrote them), and a header given more than once (an array, or two keys that
 * differ only in case) is ambiguous: we refuse to guess which copy was meant.
 */
import { reject, type HeaderBag, type Rejection } from "./types.js";

export type HeaderRead = { value: string } | { absent: true } | { ambiguous: true };

export function readHeader(headers: HeaderBag, name: string): HeaderRead {
  const wanted = name.toLowerCase();
  const values: string[] = [];
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== wanted || value === undefined) continue;
    if (Array.isArray(value)) values.push(...value);
    else values.push(value);
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
