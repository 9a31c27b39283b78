/**
 * One pagination scheme for every list of the API: `?limit=` (1–1000, default 100) and
 * `?cursor=`; each answer carries its rows in one named array and `next`, the cursor of the next
 * page, or null on the last one. A cursor is opaque to callers (base64url of the last row's key).
 */
import { HttpError } from "./router.js";

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

/** A cursor for the key of the last row of a page. */
export function encodeCursor(key: unknown): string {
  return Buffer.from(JSON.stringify(key), "utf8").toString("base64url");
}

/** The key inside `cursor`, checked by `isKey`; a 400 when it is not one of ours. */
export function decodeCursor<K>(cursor: string | undefined, isKey: (value: unknown) => value is K): K | undefined {
  if (cursor === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    value = undefined;
  }
  if (!isKey(value)) throw new HttpError(400, "invalid_cursor", "cursor is not one this list gave out; pass the `next` of the previous page unchanged, or omit it for the first page.");
  return value;
}

export const isString = (v: unknown): v is string => typeof v === "string" && v.length > 0 && v.length <= 500;
export const isStringPair = (v: unknown): v is [string, string] => Array.isArray(v) && v.length === 2 && v.every(isString);

/**
 * Runs `fetch` for one more row than `limit` to learn whether a page follows; returns the page's
 * rows and `next`, the cursor of the last row's key (or null).
 */
export async function page<T, K>(limit: number | undefined, fetch: (limitPlusOne: number) => Promise<T[]>, keyOf: (row: T) => K): Promise<{ rows: T[]; next: string | null }> {
  const size = limit ?? DEFAULT_PAGE_SIZE;
  const rows = await fetch(size + 1);
  if (rows.length <= size) return { rows, next: null };
  const kept = rows.slice(0, size);
  return { rows: kept, next: encodeCursor(keyOf(kept[kept.length - 1]!)) };
}
