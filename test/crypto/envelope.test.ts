/**
 * The keyring (ENCRYPTION_KEYS), the envelope (AES-256-GCM, key id beside the value, AAD bound to
 * the row) and the local default (a key file beside the embedded database; PostgreSQL refused).
 */
import { mkdtemp, readFile, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../shared/config.js";
import { isSealed, keyIdOf, open, seal, SecretDecryptionError } from "../../shared/crypto/envelope.js";
import { EncryptionKeysConfigError, EncryptionKeysMissingError, generateKeyEntry, MissingEncryptionKeyError, parseEncryptionKeys } from "../../shared/crypto/keyring.js";
import { keyFilePath, localKeyring } from "../../shared/crypto/localKeys.js";

const K1 = Buffer.alloc(32, 1).toString("base64");
const K2 = Buffer.alloc(32, 2).toString("base64");

describe("ENCRYPTION_KEYS", () => {
  it("lists keys, the first one encrypting", () => {
    const ring = parseEncryptionKeys(` k2:${K2} , k1:${K1}`);
    expect(ring.primary.id).toBe("k2");
    expect([...ring.keys.keys()]).toEqual(["k2", "k1"]);
    expect(ring.keys.get("k1")!.key.equals(Buffer.alloc(32, 1))).toBe(true);
  });

  it.each([
    ["", /empty/],
    [`k1${K1}`, /<keyId>:<base64 of 32 bytes>/],
    [`bad id:${K1}`, /key id of 1–32 letters/],
    [`k1:${Buffer.alloc(16, 1).toString("base64")}`, /exactly 32 bytes/],
    [`k1:not base64!!`, /exactly 32 bytes/],
    [`k1:${K1},k1:${K2}`, /listed twice/],
  ])("refuses %j with a message that says what to fix", (text, message) => {
    expect(() => parseEncryptionKeys(text)).toThrow(EncryptionKeysConfigError);
    expect(() => parseEncryptionKeys(text)).toThrow(message);
  });

  it("never quotes key bytes in an error, the platform's configuration included", () => {
    const secretish = Buffer.alloc(31, 9).toString("base64");
    let message = "";
    try {
      loadConfig({ ENCRYPTION_KEYS: `k1:${secretish}` });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/ENCRYPTION_KEYS.*exactly 32 bytes/s);
    expect(message).not.toContain(secretish);
    expect(loadConfig({ ENCRYPTION_KEYS: `k1:${K1}` }).ENCRYPTION_KEYS).toBe(`k1:${K1}`);
  });

  it("generates entries it can parse", () => {
    expect(parseEncryptionKeys(generateKeyEntry("new")).primary.id).toBe("new");
  });
});

describe("envelope", () => {
  const ring = parseEncryptionKeys(`k2:${K2},k1:${K1}`);
  const where = "outbound_subscriptions.secrets:sub_1";

  it("round-trips under the primary key, with the key id beside the value and a fresh IV each time", () => {
    const a = seal(ring, "whsec_abc", where);
    const b = seal(ring, "whsec_abc", where);
    expect(a).toMatch(/^enc\.v1\.k2\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain("whsec_abc");
    expect(isSealed(a)).toBe(true);
    expect(keyIdOf(a)).toBe("k2");
    expect(open(ring, a, where)).toBe("whsec_abc");
  });

  it("decrypts values under an older key still listed; a dropped key is named in the error", () => {
    const old = seal(parseEncryptionKeys(`k1:${K1}`), "whsec_old", where);
    expect(open(ring, old, where)).toBe("whsec_old");
    const dropped = parseEncryptionKeys(`k2:${K2}`);
    expect(() => open(dropped, old, where)).toThrow(MissingEncryptionKeyError);
    expect(() => open(dropped, old, where)).toThrow(/key id "k1", which is not in ENCRYPTION_KEYS \(it holds "k2"\)/);
  });

  it("refuses a value moved to another row or column (AAD), altered, or truncated", () => {
    const sealed = seal(ring, "whsec_abc", where);
    expect(() => open(ring, sealed, "outbound_subscriptions.secrets:sub_2")).toThrow(SecretDecryptionError);
    expect(() => open(ring, sealed, "outbound_subscriptions.headers.x-api-key:sub_1")).toThrow(/copied from another row/);
    const body = sealed.split(".")[4]!;
    const flipped = body.slice(0, 3) + (body[3] === "A" ? "B" : "A") + body.slice(4);
    expect(() => open(ring, sealed.replace(body, flipped), where)).toThrow(SecretDecryptionError);
    expect(() => open(ring, sealed.slice(0, 30), where)).toThrow(SecretDecryptionError);
    // Same key id, different key bytes (a key replaced under its old name): refused, not garbage.
    expect(() => open(parseEncryptionKeys(`k2:${K1}`), sealed, where)).toThrow(/authentication failed under key "k2"/);
  });

  it("passes plaintext values through (rows written before encryption, until the pass seals them)", () => {
    expect(open(ring, "whsec_legacy", where)).toBe("whsec_legacy");
  });
});

describe("the local default", () => {
  it("generates a key file beside the embedded database once, mode 0600, and reads it back", async () => {
    const dir = await mkdtemp(join(tmpdir(), "keys-"));
    const dataDir = join(dir, "pglite");
    const warnings: string[] = [];
    const first = await localKeyring({ DATA_DIR: dataDir }, (m) => warnings.push(m));
    const again = await localKeyring({ DATA_DIR: dataDir }, (m) => warnings.push(m));
    expect(again.primary.key.equals(first.primary.key)).toBe(true);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(keyFilePath(dataDir));
    expect(warnings[0]).toContain("ENCRYPTION_KEYS");
    expect((await stat(keyFilePath(dataDir))).mode & 0o777).toBe(0o600);
    expect(await readFile(keyFilePath(dataDir), "utf8")).toMatch(/^local1:[A-Za-z0-9+/]{43}=\n$/);
  });

  it("prefers ENCRYPTION_KEYS; refuses PostgreSQL without it; keeps a memory database's key in memory", async () => {
    expect((await localKeyring({ ENCRYPTION_KEYS: `k1:${K1}`, DATABASE_URL: "postgres://x/y" })).primary.id).toBe("k1");
    await expect(localKeyring({ DATABASE_URL: "postgres://x/y" })).rejects.toThrow(EncryptionKeysMissingError);
    await expect(localKeyring({ DATABASE_URL: "postgres://x/y" })).rejects.toThrow(/set ENCRYPTION_KEYS/);
    expect((await localKeyring({ DATA_DIR: "memory://" })).primary.id).toBe("memory");
  });
});
