/**
 * The envelope of one secret at rest: `enc.v1.<keyId>.<iv>.<ciphertext+tag>` (base64url parts),
 * AES-256-GCM with a random 96-bit IV per value. The key id travels with the value, so values under
 * an old key keep decrypting while a rotation rewrites them. The additional authenticated data
 * (AAD) names where the value lives (`outbound_subscriptions.secrets:<id>`): a value copied into
 * another row or column fails to decrypt instead of signing for the wrong subscription.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { keyFor, type Keyring } from "./keyring.js";

const PREFIX = "enc.v1.";
const IV_BYTES = 12;
const TAG_BYTES = 16;
const B64URL = /^[A-Za-z0-9_-]+$/;

/** A value that is an envelope but does not decrypt: altered, truncated, or moved from another row. */
export class SecretDecryptionError extends Error {
  override name = "SecretDecryptionError";
  constructor(readonly where: string, detail: string) {
    super(`The encrypted value of ${where} does not decrypt (${detail}): it was altered or copied from another row; set the secret again.`);
  }
}

/** True for a string in the envelope format (whatever its key); plaintext secrets (`whsec_…`) are not. */
export function isSealed(value: string): boolean {
  return value.startsWith(PREFIX);
}

/** The key id of an envelope, or null for a plaintext value. */
export function keyIdOf(value: string): string | null {
  if (!isSealed(value)) return null;
  const end = value.indexOf(".", PREFIX.length);
  // `end <= 0` (a mutant) is equivalent: the search starts at PREFIX.length, so end is -1 or at least 7.
  return end < 0 ? null : value.slice(PREFIX.length, end);
}

/**
 * Encrypts `plaintext` under the keyring's primary key, bound to `where` (the AAD).
 * @example seal(keyring, "whsec_…", "outbound_subscriptions.secrets:sub_1") // "enc.v1.k1.…"
 */
export function seal(keyring: Keyring, plaintext: string, where: string): string {
  const { id, key } = keyring.primary;
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  // Stryker disable next-line StringLiteral: equivalent: Buffer.from reads a string as UTF-8 when the encoding is empty
  cipher.setAAD(Buffer.from(where, "utf8"));
  // Stryker disable next-line StringLiteral: equivalent: Cipher.update reads a string as UTF-8 when the encoding is empty
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
  return `${PREFIX}${id}.${iv.toString("base64url")}.${body.toString("base64url")}`;
}

/**
 * Decrypts an envelope made by `seal` for the same `where`. A value that is not an envelope is
 * returned as it is: rows written before secrets were encrypted stay readable until the
 * re-encryption pass has sealed them. Throws MissingEncryptionKeyError (naming the key id) or
 * SecretDecryptionError.
 */
export function open(keyring: Keyring, value: string, where: string): string {
  if (!isSealed(value)) return value;
  const parts = value.slice(PREFIX.length).split(".");
  if (parts.length !== 3 || !parts.every((p) => B64URL.test(p))) throw new SecretDecryptionError(where, "malformed envelope");
  const [keyId, ivText, bodyText] = parts as [string, string, string];
  const { key } = keyFor(keyring, keyId);
  const iv = Buffer.from(ivText, "base64url");
  const body = Buffer.from(bodyText, "base64url");
  if (iv.length !== IV_BYTES || body.length < TAG_BYTES) throw new SecretDecryptionError(where, "malformed envelope");
  const decipher = createDecipheriv("aes-256-gcm", key, iv);
  // Stryker disable next-line StringLiteral: equivalent: Buffer.from reads a string as UTF-8 when the encoding is empty
  decipher.setAAD(Buffer.from(where, "utf8"));
  decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString("utf8");
  } catch {
    throw new SecretDecryptionError(where, `authentication failed under key "${keyId}"`);
  }
}
