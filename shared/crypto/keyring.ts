/**
 * The encryption keys of secrets at rest (docs/secrets.md). `ENCRYPTION_KEYS` lists them as
 * comma-separated `<keyId>:<base64 of 32 bytes>`: the FIRST encrypts, every one decrypts. Rotation
 * is therefore: prepend a new key, let the re-encryption pass rewrite every value under it
 * (shared/crypto/reencrypt.ts), then drop the old key.
 */
import { randomBytes } from "node:crypto";

/** One AES-256 key and the id stored beside every value it encrypts. */
export interface EncryptionKey {
  id: string;
  key: Buffer;
}

/** Keys by id; `primary` (the first listed) encrypts. */
export interface Keyring {
  primary: EncryptionKey;
  keys: ReadonlyMap<string, EncryptionKey>;
}

/** Key ids are short names stored in every envelope: letters, digits, `_` and `-`. */
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
// Padding of `==` cannot occur in the base64 of 32 bytes (one `=`), so `={0,2}` made `=` (a mutant) is equivalent.
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** ENCRYPTION_KEYS (or the key file) is not a list of `<keyId>:<base64 of 32 bytes>`. */
export class EncryptionKeysConfigError extends Error {
  override name = "EncryptionKeysConfigError";
}

/** A value was encrypted under a key id the keyring does not hold. */
export class MissingEncryptionKeyError extends Error {
  override name = "MissingEncryptionKeyError";
  constructor(readonly keyId: string, known: readonly string[]) {
    super(
      `A secret is encrypted under key id "${keyId}", which is not in ENCRYPTION_KEYS (it holds ${known.length > 0 ? known.map((k) => `"${k}"`).join(", ") : "no key"}). ` +
        `Put "${keyId}:<its base64>" back into ENCRYPTION_KEYS (after the new first key) until the re-encryption pass has rewritten every value (docs/secrets.md).`,
    );
  }
}

/** No keys are configured where a secret must be encrypted or decrypted. */
export class EncryptionKeysMissingError extends Error {
  override name = "EncryptionKeysMissingError";
  constructor(where = "this process") {
    super(
      `No encryption keys in ${where}: set ENCRYPTION_KEYS to "<keyId>:<base64 of 32 random bytes>" ` +
        `(e.g. "k1:$(openssl rand -base64 32)"); secrets are stored encrypted with it (docs/secrets.md).`,
    );
  }
}

/**
 * Parses `<keyId>:<base64>[,<keyId>:<base64>…]`; `source` names the setting in errors. The key
 * bytes never appear in a message.
 * @example parseEncryptionKeys("k2:…=,k1:…=").primary.id // "k2"
 */
export function parseEncryptionKeys(text: string, source = "ENCRYPTION_KEYS"): Keyring {
  const entries = text.split(",").map((s) => s.trim()).filter(Boolean);
  if (entries.length === 0) throw new EncryptionKeysConfigError(`${source} is empty: give at least one "<keyId>:<base64 of 32 bytes>".`);
  const keys = new Map<string, EncryptionKey>();
  entries.forEach((entry, i) => {
    const colon = entry.indexOf(":");
    // No colon, no id: refused just below, before the key part (then the whole entry) is read.
    // Stryker disable next-line StringLiteral: equivalent: any stand-in for the missing id that is not a valid id ("Stryker was here!") is refused the same way
    const id = colon === -1 ? "" : entry.slice(0, colon).trim();
    const b64 = entry.slice(colon + 1).trim();
    const where = `${source} entry ${i + 1}`;
    if (!KEY_ID.test(id)) throw new EncryptionKeysConfigError(`${where}: must be "<keyId>:<base64 of 32 bytes>" with a key id of 1–32 letters, digits, _ or -.`);
    if (keys.has(id)) throw new EncryptionKeysConfigError(`${where}: key id "${id}" is listed twice; each key needs its own id.`);
    const key = BASE64.test(b64) && b64.length % 4 === 0 ? Buffer.from(b64, "base64") : Buffer.alloc(0);
    if (key.length !== 32) throw new EncryptionKeysConfigError(`${where} ("${id}"): the key must be the base64 of exactly 32 bytes (e.g. from \`openssl rand -base64 32\`).`);
    keys.set(id, { id, key });
  });
  return { primary: keys.values().next().value as EncryptionKey, keys };
}

/** A new key entry, `<keyId>:<base64 of 32 random bytes>`, for ENCRYPTION_KEYS or the local key file. */
export function generateKeyEntry(id = `k${new Date().toISOString().slice(0, 10).replaceAll("-", "")}`): string {
  if (!KEY_ID.test(id)) throw new EncryptionKeysConfigError(`Key id "${id}" must be 1–32 letters, digits, _ or -.`);
  return `${id}:${randomBytes(32).toString("base64")}`;
}

/** The key for `id`, or MissingEncryptionKeyError naming it. */
export function keyFor(keyring: Keyring, id: string): EncryptionKey {
  const key = keyring.keys.get(id);
  if (!key) throw new MissingEncryptionKeyError(id, [...keyring.keys.keys()]);
  return key;
}
