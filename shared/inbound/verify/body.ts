/**
 * The body after the signature is good: it must be a JSON object in UTF-8 (RFC 8259), and the
 * partner's event id must be found in it or in a header. We never invent an id: without one,
 * de-duplication would be impossible.
 */
import { reject, type Identity, type Rejection } from "./types.js";

// A body with a byte order mark is refused before decoding, so the decoder never sees one.
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Longest event id accepted; longer ones are almost certainly not ids. */
export const MAX_EVENT_ID_LENGTH = 255;

export function parseJsonObject(rawBody: Buffer): Record<string, unknown> | Rejection {
  if (rawBody.length === 0) return reject(400, "invalid_json", "The body is empty; a webhook body must be a JSON object.");
  if (rawBody[0] === 0xef && rawBody[1] === 0xbb && rawBody[2] === 0xbf) {
    return reject(400, "invalid_json", "The body starts with a byte order mark; send JSON in UTF-8 without a BOM.");
  }
  let text: string;
  try {
    text = utf8.decode(rawBody);
  } catch {
    return reject(400, "invalid_json", "The body is not valid UTF-8; JSON must be sent in UTF-8.");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return reject(400, "invalid_json", `The body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return reject(400, "invalid_json", "The body is JSON but not an object; a webhook body must be a JSON object.");
  }
  return value as Record<string, unknown>;
}

/** The event id as a string (a JSON integer is accepted and written in decimal), or a 400. */
export function eventIdFrom(identity: Identity): string | Rejection {
  const { id, idSource } = identity;
  let text: string | undefined;
  if (typeof id === "string") text = id;
  else if (Number.isSafeInteger(id)) text = String(id);
  if (text === undefined || text.trim() === "") {
    const found = id === undefined ? "it is missing" : `found ${id === null ? "null" : typeof id}`;
    return reject(400, "missing_event_id", `No event id in ${idSource} (${found}); the partner's event id is required to de-duplicate, and none is invented.`);
  }
  if (text.length > MAX_EVENT_ID_LENGTH || /[\u0000-\u001f\u007f]/.test(text)) {
    return reject(400, "invalid_event_id", `The event id in ${idSource} must be at most ${MAX_EVENT_ID_LENGTH} characters without control characters.`);
  }
  return text;
}

/** The event type when it is a non-empty string; anything else is treated as unknown. */
export function eventTypeFrom(type: unknown): string | null {
  return typeof type === "string" && type !== "" && type.length <= MAX_EVENT_ID_LENGTH ? type : null;
}
