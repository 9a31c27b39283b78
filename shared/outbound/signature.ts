/**
 * Standard Webhooks signing (https://www.standardwebhooks.com). The signed content is
 * `${webhookId}.${timestamp}.${body}`. A `whsec_…` secret signs `v1` (base64 HMAC-SHA256 with the
 * secret's decoded bytes as key); a `whsk_…` signing key signs `v1a` (base64 ed25519 signature,
 * shared/crypto/ed25519.ts), which receivers check with its `whpk_…` public key. The header lists
 * one entry per active secret, separated by spaces, so a receiver holding either the old or the new
 * secret (or public key) verifies during rotation, and a subscription moving from v1 to v1a can
 * send both for a while.
 */
import { createHmac, randomBytes } from "node:crypto";
import { generateSigningKey, signEd25519, signingKeyOf } from "../crypto/ed25519.js";

/** `v1`: HMAC-SHA256 with a shared `whsec_` secret. `v1a`: ed25519 with a `whsk_` signing key. */
export type SignatureScheme = "v1" | "v1a";

const PREFIX = "whsec_";
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** Secrets we accept: 24 to 64 key bytes (Standard Webhooks asks for 24 to 64). */
const MIN_KEY_BYTES = 24;
const MAX_KEY_BYTES = 64;

/** A signing secret that is not `whsec_` + base64 of 24–64 bytes. */
export class InvalidSecretError extends Error {
  override name = "InvalidSecretError";
  constructor() {
    super(`A signing secret must be "${PREFIX}" followed by base64 of ${MIN_KEY_BYTES} to ${MAX_KEY_BYTES} bytes (v1), or "whsk_" followed by base64 of a 32-byte ed25519 seed (v1a); omit it to have one generated.`);
  }
}

/**
 * A new secret: for v1 (the default) `whsec_` + base64 of 32 random bytes; for v1a an ed25519
 * signing key, `whsk_` + base64 of a random 32-byte seed.
 * @example generateSecret() // "whsec_3J0j…="
 */
// Stryker disable next-line StringLiteral: equivalent: every scheme but "v1a" generates a whsec_ secret
export function generateSecret(scheme: SignatureScheme = "v1"): string {
  return scheme === "v1a" ? generateSigningKey() : PREFIX + randomBytes(32).toString("base64");
}

/** The scheme a secret signs with: v1 for `whsec_…`, v1a for `whsk_…`, null for neither. */
export function schemeOf(secret: string): SignatureScheme | null {
  if (keyOf(secret)) return "v1";
  return signingKeyOf(secret) ? "v1a" : null;
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

/** True for `whsec_` + canonical base64 of 24–64 bytes, and for a `whsk_` ed25519 signing key. */
export function isValidSecret(s: string): boolean {
  return schemeOf(s) !== null;
}

/** The base64 HMAC-SHA256 signature of one message with one secret (no `v1,` prefix). */
export function sign(secret: string, webhookId: string, timestamp: number, body: string): string {
  const key = keyOf(secret);
  if (!key) throw new InvalidSecretError();
  return createHmac("sha256", key).update(`${webhookId}.${timestamp}.${body}`).digest("base64");
}

/** One entry of the header: `v1a,<b64 ed25519>` for a `whsk_` key, else `v1,<b64 HMAC>` (InvalidSecretError for neither). */
function entry(secret: string, webhookId: string, timestamp: number, body: string): string {
  const signingKey = signingKeyOf(secret);
  if (signingKey) return `v1a,${signEd25519(signingKey, `${webhookId}.${timestamp}.${body}`).toString("base64")}`;
  return `v1,${sign(secret, webhookId, timestamp, body)}`;
}

/**
 * The `webhook-signature` header value: one entry per secret (`v1,<b64>` for `whsec_`, `v1a,<b64>`
 * for `whsk_`), space-separated, in the order given.
 * @example signatureHeader([oldSecret, newSecret], "evt_1:sub_1", 1614265330, body) // "v1,… v1,…"
 */
export function signatureHeader(secrets: string[], webhookId: string, timestamp: number, body: string): string {
  if (secrets.length === 0) throw new InvalidSecretError();
  return secrets.map((s) => entry(s, webhookId, timestamp, body)).join(" ");
}
