/**
 * Standard Webhooks asymmetric keys (`v1a`, ed25519, RFC 8032) with node:crypto. The spec
 * serialises them base64 with a prefix: `whsk_` for the secret key, `whpk_` for the public key. We
 * write `whsk_` + base64 of the 32-byte seed (RFC 8032's private key) and also accept the 64-byte
 * form libsodium and tweetnacl use (seed followed by its public key, checked to match);
 * `whpk_` is base64 of the 32-byte public key.
 */
import { createPrivateKey, createPublicKey, randomBytes, sign, verify, type KeyObject } from "node:crypto";

export const SIGNING_KEY_PREFIX = "whsk_";
export const PUBLIC_KEY_PREFIX = "whpk_";
// Strict base64, padding included. (The mutant requiring a padded last group is equivalent here:
// every length we accept, 32 and 64 bytes, ends in one.)
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** DER of a PKCS#8 ed25519 private key, less its last 32 bytes (the seed). */
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
/** DER of an SPKI ed25519 public key, less its last 32 bytes. */
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

export interface SigningKey {
  privateKey: KeyObject;
  /** The raw 32-byte public key. */
  publicKey: Buffer;
}

function decode(text: string, prefix: string): Buffer | null {
  if (typeof text !== "string" || !text.startsWith(prefix)) return null;
  const b64 = text.slice(prefix.length);
  // An empty remainder decodes to zero bytes, which every caller refuses by its length.
  return BASE64.test(b64) ? Buffer.from(b64, "base64") : null;
}

const rawPublicKey = (key: KeyObject): Buffer => Buffer.from(key.export({ format: "jwk" }).x!, "base64url");

/** Decoded signing keys of recently used secrets (a relay signs with the same few, often). Bounded. */
const cache = new Map<string, SigningKey>();
const CACHE_SIZE = 1024;

/** The key of a `whsk_…` secret, or null when it is not one. */
export function signingKeyOf(secret: string): SigningKey | null {
  const hit = cache.get(secret);
  // Stryker disable next-line ConditionalExpression: equivalent: a cache hit skipped is a decode done again, the same key, only slower
  if (hit) return hit;
  const bytes = decode(secret, SIGNING_KEY_PREFIX);
  if (!bytes || (bytes.length !== 32 && bytes.length !== 64)) return null;
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, bytes.subarray(0, 32)]), format: "der", type: "pkcs8" });
  const publicKey = rawPublicKey(createPublicKey(privateKey));
  // The 64-byte form carries its public key: one that does not belong to the seed is a broken key.
  if (bytes.length === 64 && !bytes.subarray(32).equals(publicKey)) return null;
  const key = { privateKey, publicKey };
  // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent: when to evict changes only memory use, never a key
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  cache.set(secret, key);
  return key;
}

/** The verifying key of a `whpk_…` public key, or null when it is not one. */
export function publicKeyOf(text: string): KeyObject | null {
  const bytes = decode(text, PUBLIC_KEY_PREFIX);
  if (!bytes || bytes.length !== 32) return null;
  try {
    return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, bytes]), format: "der", type: "spki" });
  }
  // Stryker disable next-line BlockStatement: equivalent today: OpenSSL imports any 32 bytes as an ed25519 public key (the point is checked on verify); kept so a stricter one refuses rather than throws
  catch {
    return null;
  }
}

/** A new signing key: `whsk_` + base64 of a random 32-byte seed. */
export function generateSigningKey(): string {
  return SIGNING_KEY_PREFIX + randomBytes(32).toString("base64");
}

/** The `whpk_…` public key of a `whsk_…` secret, or null when it is not one. */
export function publicKeyText(secret: string): string | null {
  const key = signingKeyOf(secret);
  return key ? PUBLIC_KEY_PREFIX + key.publicKey.toString("base64") : null;
}

/** The 64-byte ed25519 signature of `content`. */
export function signEd25519(key: SigningKey, content: string | Buffer): Buffer {
  // Stryker disable next-line ConditionalExpression,EqualityOperator,StringLiteral: equivalent: node:crypto's sign reads a string as UTF-8 too, and Buffer.from of a Buffer copies it; the conversion keeps to sign's documented Buffer input
  return sign(null, typeof content === "string" ? Buffer.from(content, "utf8") : content, key.privateKey);
}

/** Whether `signature` is a valid ed25519 signature of `content` under `publicKey`. */
export function verifyEd25519(publicKey: KeyObject, content: Buffer, signature: Buffer): boolean {
  // Made `false` (a mutant) is equivalent with node:crypto, which refuses a signature of another length itself; kept so no other length reaches the library.
  if (signature.length !== 64) return false;
  try {
    return verify(null, content, publicKey, signature);
  } catch {
    return false;
  }
}
