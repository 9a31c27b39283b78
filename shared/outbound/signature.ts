/**
 * Standard Webhooks signing (https://www.standardwebhooks.com). The signed content is
 * `${webhookId}.${timestamp}.${body}`; the signature is base64 HMAC-SHA256 with the secret's
 * decoded bytes as key; the header lists one `v1,<signature>` per active secret, separated by
 * spaces, so a receiver holding either the old or the new secret verifies during rotation.
 */
import { createHmac, randomBytes } from "node:crypto";

const PREFIX = "whsec_";
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** Secrets we accept: 24 to 64 key bytes (Standard Webhooks asks for 24 to 64). */
const MIN_KEY_BYTES = 24;
const MAX_KEY_BYTES = 64;

/** A signing secret that is not `whsec_` + base64 of 24–64 bytes. */
export class InvalidSecretError extends Error {
  override name = "InvalidSecretError";
  constructor() {
    super(`A signing secret must be "${PREFIX}" followed by base64 of ${MIN_KEY_BYTES} to ${MAX_KEY_BYTES} bytes; omit it to have one generated.`);
  }
}

/**
 * A new secret: `whsec_` + base64 of 32 random bytes.
 * @example generateSecret() // "whsec_3J0j…="
 */
export function generateSecret(): string {
  return PREFIX + randomBytes(32).toString("base64");
}

/**
 * Decoded keys of recently used secrets. A relay signs with the same few secrets thousands of times
 * a second; decoding and validating each time is measurable. Bounded, so a platform with many
 * subscriptions cycles through it rather than growing it.
 */
const keyCache = new Map<string, Buffer>();
const KEY_CACHE_SIZE = 1024;

function keyOf(secret: string): Buffer | null {
  const cached = keyCache.get(secret);
  // Skipping this hit only costs a decode: its "false" mutant is equivalent (docs/testing.md).
  if (cached) return cached;
  const key = decodeKey(secret);
  // Stryker disable next-line ConditionalExpression,BlockStatement: equivalent: caching a key or not changes only speed
  if (key) {
    // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent: when the oldest key is evicted changes only memory use, never a key
    if (keyCache.size >= KEY_CACHE_SIZE) keyCache.delete(keyCache.keys().next().value as string);
    keyCache.set(secret, key);
  }
  return key;
}

function decodeKey(secret: string): Buffer | null {
  if (typeof secret !== "string" || !secret.startsWith(PREFIX)) return null;
  const b64 = secret.slice(PREFIX.length);
  if (b64.length % 4 !== 0 || !BASE64.test(b64)) return null;
  const key = Buffer.from(b64, "base64");
  return key.length >= MIN_KEY_BYTES && key.length <= MAX_KEY_BYTES ? key : null;
}

/** True for `whsec_` + canonical base64 of 24–64 bytes. */
export function isValidSecret(s: string): boolean {
  return keyOf(s) !== null;
}

/** The base64 HMAC-SHA256 signature of one message with one secret (no `v1,` prefix). */
export function sign(secret: string, webhookId: string, timestamp: number, body: string): string {
  const key = keyOf(secret);
  if (!key) throw new InvalidSecretError();
  return createHmac("sha256", key).update(`${webhookId}.${timestamp}.${body}`).digest("base64");
}

/**
 * The `webhook-signature` header value: `v1,<b64>` per secret, space-separated, in the order given.
 * @example signatureHeader([oldSecret, newSecret], "evt_1:sub_1", 1614265330, body) // "v1,… v1,…"
 */
export function signatureHeader(secrets: string[], webhookId: string, timestamp: number, body: string): string {
  if (secrets.length === 0) throw new InvalidSecretError();
  return secrets.map((s) => `v1,${sign(s, webhookId, timestamp, body)}`).join(" ");
}
