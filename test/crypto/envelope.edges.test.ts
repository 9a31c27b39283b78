/**
 * Edge cases of the envelope and of ENCRYPTION_KEYS, one way of being wrong per row, so that a
 * check dropped from shared/crypto/envelope.ts or keyring.ts is noticed (issue 20): malformed
 * envelopes (parts missing or added, characters outside base64url that Node's decoder would
 * silently skip, an IV of the wrong length, a truncated tag), the wrong key or AAD, and key lists
 * with whitespace, empty entries, duplicate ids, ids that would break the envelope, keys of the
 * wrong length or not in strict base64.
 */
import { describe, expect, it } from "vitest";
import { isSealed, keyIdOf, open, seal, SecretDecryptionError } from "../../shared/crypto/envelope.js";
import {
  EncryptionKeysConfigError,
  EncryptionKeysMissingError,
  generateKeyEntry,
  keyFor,
  MissingEncryptionKeyError,
  parseEncryptionKeys,
} from "../../shared/crypto/keyring.js";

const K1 = Buffer.alloc(32, 1).toString("base64");
const K2 = Buffer.alloc(32, 2).toString("base64");
const ring = parseEncryptionKeys(`k1:${K1},k2:${K2}`);
const where = "outbound_subscriptions.secrets:sub_1";

/** The envelope's parts after `enc.v1.`: key id, IV, ciphertext + tag. */
const partsOf = (sealed: string) => sealed.slice("enc.v1.".length).split(".") as [string, string, string];
const envelope = (keyId: string, iv: string, body: string) => `enc.v1.${keyId}.${iv}.${body}`;

function refusal(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error("not refused");
}

describe("envelope edges", () => {
  const sealed = seal(ring, "whsec_abc", where);
  const [keyId, iv, body] = partsOf(sealed);

  it("keyIdOf reads the id of an envelope only; a plaintext with dots, or an envelope cut before its IV, has none", () => {
    expect(keyIdOf(sealed)).toBe("k1");
    expect(keyIdOf("whsec_a.b.c.d")).toBeNull();
    expect(keyIdOf("secret.enc.v1.k1.x.y")).toBeNull();
    expect(keyIdOf("enc.v1.k1")).toBeNull();
    expect(isSealed("ENC.V1.k1.a.b")).toBe(false);
    expect(isSealed("enc.v2.k1.a.b")).toBe(false);
  });

  it("round-trips the empty string, non-ASCII text and a long value", () => {
    for (const plaintext of ["", "Zoë ☃ 秘密", "x".repeat(10_000)]) {
      const s = seal(ring, plaintext, where);
      expect(open(ring, s, where)).toBe(plaintext);
    }
    // The AAD is the UTF-8 of `where`: a non-ASCII row name binds as well.
    const s = seal(ring, "v", "t.c:sub_é");
    expect(open(ring, s, "t.c:sub_é")).toBe("v");
    expect(() => open(ring, s, "t.c:sub_e")).toThrow(SecretDecryptionError);
  });

  it.each([
    ["a part missing", `enc.v1.${keyId}.${body}`],
    ["a part added after a valid envelope", `${sealed}.${iv}`],
    ["an empty part", envelope(keyId, "", body)],
    ["a character outside base64url before the body", envelope(keyId, iv, `!${body}`)],
    ["a character outside base64url after the body", envelope(keyId, iv, `${body}!`)],
    ["a character outside base64url inside the IV", envelope(keyId, `${iv.slice(0, 4)}*${iv.slice(4)}`, body)],
    ["base64 padding on the body", envelope(keyId, iv, `${body}==`)],
    ["a space in the body", envelope(keyId, iv, `${body.slice(0, 5)} ${body.slice(5)}`)],
    ["an IV of 16 bytes", envelope(keyId, Buffer.alloc(16, 3).toString("base64url"), body)],
    ["an IV of 11 bytes", envelope(keyId, Buffer.from(iv, "base64url").subarray(0, 11).toString("base64url"), body)],
    ["a tag truncated to 12 bytes and no ciphertext", envelope(keyId, iv, Buffer.from(body, "base64url").subarray(-16, -4).toString("base64url"))],
    ["a body of 15 bytes", envelope(keyId, iv, Buffer.alloc(15, 1).toString("base64url"))],
  ])("refuses %s as a malformed envelope, naming the row, never the plaintext", (_, value) => {
    const error = refusal(() => open(ring, value, where));
    expect(error).toBeInstanceOf(SecretDecryptionError);
    expect(error.name).toBe("SecretDecryptionError");
    expect(error.message).toBe(
      `The encrypted value of ${where} does not decrypt (malformed envelope): it was altered or copied from another row; set the secret again.`,
    );
    expect((error as SecretDecryptionError).where).toBe(where);
  });

  it.each([
    ["the tag's last byte changed", () => { const b = Buffer.from(body, "base64url"); b[b.length - 1] = b[b.length - 1]! ^ 1; return envelope(keyId, iv, b.toString("base64url")); }],
    ["the ciphertext's first byte changed", () => { const b = Buffer.from(body, "base64url"); b[0] = b[0]! ^ 1; return envelope(keyId, iv, b.toString("base64url")); }],
    ["another IV", () => envelope(keyId, Buffer.alloc(12, 9).toString("base64url"), body)],
    ["the ciphertext of another envelope under this tag", () => envelope(keyId, iv, partsOf(seal(ring, "whsec_abd", where))[2])],
    ["the key id changed to another key of the ring", () => envelope("k2", iv, body)],
  ])("refuses %s: authentication fails under the key named", (_, make) => {
    const value = make();
    const error = refusal(() => open(ring, value, where));
    expect(error).toBeInstanceOf(SecretDecryptionError);
    expect(error.message).toContain(`(authentication failed under key "${partsOf(value)[0]}")`);
  });

  it("an envelope of an unknown key id is MissingEncryptionKeyError, before any decryption", () => {
    expect(() => open(ring, envelope("k9", iv, body), where)).toThrow(MissingEncryptionKeyError);
    expect(() => open(ring, envelope("k9", iv, body), where)).toThrow(/key id "k9".*it holds "k1", "k2"/);
  });
});

describe("ENCRYPTION_KEYS edges", () => {
  it("ignores whitespace around entries, ids and keys, and empty entries (a trailing comma)", () => {
    const parsed = parseEncryptionKeys(`\n k2 : ${K2} ,, k1:${K1} ,\t`);
    expect(parsed.primary.id).toBe("k2");
    expect(parsed.primary.key.equals(Buffer.alloc(32, 2))).toBe(true);
    expect([...parsed.keys.keys()]).toEqual(["k2", "k1"]);
    expect(parsed.keys.get("k1")).toEqual({ id: "k1", key: Buffer.alloc(32, 1) });
    expect(parsed.keys.get("k2")).toBe(parsed.primary);
  });

  it("accepts ids of 1 and 32 letters, digits, _ and -", () => {
    const id32 = `A-z_9${"x".repeat(27)}`;
    expect(parseEncryptionKeys(`a:${K1},${id32}:${K2}`).keys.has(id32)).toBe(true);
  });

  it.each([
    [" , ,", "ENCRYPTION_KEYS is empty"],
    [`k1:${K1},k2`, "ENCRYPTION_KEYS entry 2: must be"],
    [`:${K1}`, "entry 1: must be"],
    [`k.1:${K1}`, "entry 1: must be"], // a dot would split the envelope in the wrong place
    [`k 1:${K1}`, "entry 1: must be"],
    [`${"x".repeat(33)}:${K1}`, "entry 1: must be"],
    [`ünï:${K1}`, "entry 1: must be"],
    [`k1:${K1},k2:${K2},k1:${K2}`, 'entry 3: key id "k1" is listed twice'],
    [`k1:${K1.replace(/=$/, "")}`, 'entry 1 ("k1"): the key must be the base64 of exactly 32 bytes'],
    [`k1:${Buffer.alloc(32, 0xfb).toString("base64url")}`, "exactly 32 bytes"],
    [`k1:${K1.slice(0, 20)} ${K1.slice(20)}`, "exactly 32 bytes"],
    [`k1:!${K1}`, "exactly 32 bytes"],
    // Characters Node's base64 decoder would skip, in a length it would accept (a multiple of 4).
    [`k1:!!!!${K1}`, "exactly 32 bytes"],
    [`k1:${K1}!!!!`, "exactly 32 bytes"],
    [`k1:${K1.slice(0, 20)}!!!!${K1.slice(20)}`, "exactly 32 bytes"],
    [`k1:${K1}!`, "exactly 32 bytes"],
    [`k1:${K1}=`, "exactly 32 bytes"],
    [`k1:${Buffer.alloc(33, 1).toString("base64")}`, "exactly 32 bytes"],
    [`k1:${Buffer.alloc(31, 1).toString("base64")}`, "exactly 32 bytes"],
    [`k1:${Buffer.alloc(48, 1).toString("base64")}`, "exactly 32 bytes"],
    ["k1:", "exactly 32 bytes"],
    [`k1:${K1}:${K2}`, "exactly 32 bytes"],
  ])("refuses %j: %s", (text, message) => {
    const error = refusal(() => parseEncryptionKeys(text));
    expect(error).toBeInstanceOf(EncryptionKeysConfigError);
    expect(error.name).toBe("EncryptionKeysConfigError");
    expect(error.message).toContain(message);
    expect(error.message).not.toContain(K1);
  });

  it("names the setting it parses in its errors", () => {
    expect(() => parseEncryptionKeys("", "the key file /x/keys")).toThrow(/^the key file \/x\/keys is empty/);
    expect(() => parseEncryptionKeys("bad", "the key file /x/keys")).toThrow(/^the key file \/x\/keys entry 1:/);
  });

  it("generates an entry named k<today, YYYYMMDD> by default, with 32 fresh random bytes; refuses a bad id", () => {
    const today = new Date().toISOString().slice(0, 10).replaceAll("-", "");
    const entry = generateKeyEntry();
    expect(entry).toMatch(new RegExp(`^k${today}:[A-Za-z0-9+/]{43}=$`));
    expect(generateKeyEntry("a").slice(2)).not.toBe(generateKeyEntry("a").slice(2));
    expect(parseEncryptionKeys(entry).primary.key).toHaveLength(32);
    expect(() => generateKeyEntry("bad.id")).toThrow(EncryptionKeysConfigError);
    expect(() => generateKeyEntry("bad.id")).toThrow('Key id "bad.id" must be 1–32 letters, digits, _ or -.');
  });

  it("keyFor finds a key by id, or names the missing id and the ones held", () => {
    expect(keyFor(ring, "k2").key.equals(Buffer.alloc(32, 2))).toBe(true);
    const error = refusal(() => keyFor(ring, "old"));
    expect(error).toBeInstanceOf(MissingEncryptionKeyError);
    expect(error.name).toBe("MissingEncryptionKeyError");
    expect((error as MissingEncryptionKeyError).keyId).toBe("old");
    expect(error.message).toBe(
      'A secret is encrypted under key id "old", which is not in ENCRYPTION_KEYS (it holds "k1", "k2"). ' +
        'Put "old:<its base64>" back into ENCRYPTION_KEYS (after the new first key) until the re-encryption pass has rewritten every value (docs/secrets.md).',
    );
    expect(new MissingEncryptionKeyError("old", []).message).toContain("(it holds no key)");
  });

  it("says where keys are missing and how to make one", () => {
    const error = new EncryptionKeysMissingError();
    expect(error.name).toBe("EncryptionKeysMissingError");
    expect(error.message).toBe(
      'No encryption keys in this process: set ENCRYPTION_KEYS to "<keyId>:<base64 of 32 random bytes>" ' +
        '(e.g. "k1:$(openssl rand -base64 32)"); secrets are stored encrypted with it (docs/secrets.md).',
    );
    expect(new EncryptionKeysMissingError("the relay").message).toMatch(/^No encryption keys in the relay:/);
  });
});
