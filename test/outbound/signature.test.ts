import { Webhook, WebhookVerificationError } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import nacl from "tweetnacl";
import { generateSecret, isValidSecret, schemeOf, signatureHeader, InvalidSecretError } from "../../shared/outbound/signature.js";
import { publicKeyText } from "../../shared/crypto/ed25519.js";

// The official Standard Webhooks test vector (standard-webhooks/spec, reference implementations).
const VECTOR = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: 1614265330,
  payload: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};

const headersFor = (id: string, ts: number, sig: string) => ({ "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": sig });

describe("Standard Webhooks signature", () => {
  afterEach(() => { vi.useRealTimers(); });

  it("reproduces the official test vector byte for byte", () => {
    expect(signatureHeader([VECTOR.secret], VECTOR.id, VECTOR.timestamp, VECTOR.payload)).toBe(VECTOR.signature);
  });

  it("is accepted by the standardwebhooks library on the test vector (clock set to its timestamp)", () => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date(VECTOR.timestamp * 1000));
    const header = signatureHeader([VECTOR.secret], VECTOR.id, VECTOR.timestamp, VECTOR.payload);
    expect(new Webhook(VECTOR.secret).verify(VECTOR.payload, headersFor(VECTOR.id, VECTOR.timestamp, header))).toEqual({ test: 2432232314 });
  });

  it("is verified by the standardwebhooks library with a generated secret and the current time", () => {
    const secret = generateSecret();
    const ts = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ type: "order.paid", data: { id: "ord_1", total: 4200, note: "çé🙂" } });
    const header = signatureHeader([secret], "evt_1:sub_1", ts, body);
    expect(new Webhook(secret).verify(body, headersFor("evt_1:sub_1", ts, header))).toEqual(JSON.parse(body));
  });

  it("rotation: one v1 entry per secret, and a receiver holding either secret verifies", () => {
    const [oldSecret, newSecret, stranger] = [generateSecret(), generateSecret(), generateSecret()];
    const ts = Math.floor(Date.now() / 1000);
    const body = '{"rotating":true}';
    const header = signatureHeader([oldSecret, newSecret], "evt_2:sub_1", ts, body);
    expect(header.split(" ")).toHaveLength(2);
    expect(header).toMatch(/^v1,[A-Za-z0-9+/]+=* v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(oldSecret).verify(body, headersFor("evt_2:sub_1", ts, header))).toEqual({ rotating: true });
    expect(new Webhook(newSecret).verify(body, headersFor("evt_2:sub_1", ts, header))).toEqual({ rotating: true });
    expect(() => new Webhook(stranger).verify(body, headersFor("evt_2:sub_1", ts, header))).toThrow(WebhookVerificationError);
  });

  it("a changed body, id or timestamp no longer verifies", () => {
    const secret = generateSecret();
    const ts = Math.floor(Date.now() / 1000);
    const header = signatureHeader([secret], "evt_3:sub_1", ts, '{"a":1}');
    const wh = new Webhook(secret);
    expect(() => wh.verify('{"a":2}', headersFor("evt_3:sub_1", ts, header))).toThrow(WebhookVerificationError);
    expect(() => wh.verify('{"a":1}', headersFor("evt_4:sub_1", ts, header))).toThrow(WebhookVerificationError);
    expect(() => wh.verify('{"a":1}', headersFor("evt_3:sub_1", ts - 1, header))).toThrow(WebhookVerificationError);
  });

  it("generates distinct, valid whsec_ secrets of 32 bytes", () => {
    const secrets = new Set(Array.from({ length: 50 }, () => generateSecret()));
    expect(secrets.size).toBe(50);
    for (const s of secrets) {
      expect(isValidSecret(s)).toBe(true);
      expect(Buffer.from(s.slice("whsec_".length), "base64")).toHaveLength(32);
    }
  });

  it.each([
    ["no prefix", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
    ["wrong prefix", "wsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
    ["not base64", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLa!w"],
    ["too short", `whsec_${Buffer.alloc(16, 1).toString("base64")}`],
    ["too long", `whsec_${Buffer.alloc(65, 1).toString("base64")}`],
    ["empty", ""],
  ])("rejects a secret with %s", (_label, secret) => {
    expect(isValidSecret(secret)).toBe(false);
    expect(() => signatureHeader([secret], "id", 1, "{}")).toThrow(InvalidSecretError);
  });

  const b64 = (bytes: number, fill = 7) => Buffer.alloc(bytes, fill).toString("base64");
  it.each([
    ["24 bytes, the smallest", `whsec_${b64(24)}`],
    ["32 bytes", `whsec_${b64(32)}`],
    ["33 bytes (no padding needed)", `whsec_${b64(33)}`],
    ["64 bytes, the largest", `whsec_${b64(64)}`],
    ["every base64 character", `whsec_${"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"}`],
  ])("accepts a secret of %s", (_label, secret) => {
    expect(isValidSecret(secret)).toBe(true);
    expect(signatureHeader([secret], "id", 1, "{}")).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
  });

  it.each([
    ["23 bytes", `whsec_${b64(23)}`],
    ["65 bytes", `whsec_${b64(65)}`],
    ["unpadded base64 (32 bytes without its =)", `whsec_${b64(32).replace(/=+$/, "")}`],
    ["unpadded base64 (64 bytes without its ==)", `whsec_${b64(64).replace(/=+$/, "")}`],
    ["a character before the base64", `whsec_!${b64(32).slice(1)}`],
    ["characters after the base64", `whsec_${b64(33)}!!!!`],
    ["padding inside", `whsec_${b64(32).slice(0, 20)}=${b64(32).slice(21)}`],
    ["base64url characters", `whsec_${b64(32, 0xfb).replace(/\+/g, "-").replace(/\//g, "_")}`],
    ["a space inside", `whsec_${b64(32).slice(0, 20)} ${b64(32).slice(21)}`],
    ["another prefix of the same length", `whsek_${b64(32)}`],
    ["the prefix in capitals", `WHSEC_${b64(32)}`],
    ["the prefix alone", "whsec_"],
  ])("rejects a secret of %s", (_label, secret) => {
    expect(isValidSecret(secret)).toBe(false);
    expect(() => signatureHeader([secret], "id", 1, "{}")).toThrow(InvalidSecretError);
  });

  it("rejects what is not a string", () => {
    expect(isValidSecret(42 as unknown as string)).toBe(false);
    expect(isValidSecret(undefined as unknown as string)).toBe(false);
  });

  it("says what a secret must be", () => {
    const error = (() => { try { signatureHeader(["nope"], "id", 1, "{}"); } catch (e) { return e; } })();
    expect(error).toBeInstanceOf(InvalidSecretError);
    expect(error).toMatchObject({
      name: "InvalidSecretError",
      message: 'A signing secret must be "whsec_" followed by base64 of 24 to 64 bytes (v1), or "whsk_" followed by base64 of a 32-byte ed25519 seed (v1a); omit it to have one generated.',
    });
  });

  it("refuses to sign with no secret at all", () => {
    expect(() => signatureHeader([], "id", 1, "{}")).toThrow(InvalidSecretError);
  });
});

/**
 * v1a (issue 17, Must-show 3): ed25519 signatures made with node:crypto, checked by tweetnacl, an
 * independent implementation (its own curve arithmetic and SHA-512), on the spec's signed content.
 */
describe("Standard Webhooks v1a signature (ed25519)", () => {
  const seed = Buffer.alloc(32, 0x2a);
  const pair = nacl.sign.keyPair.fromSeed(seed);
  const whsk = `whsk_${seed.toString("base64")}`;
  const entries = (header: string) => header.split(" ").map((e) => e.split(",") as [string, string]);
  const naclVerifies = (sig: string, content: string, publicKey = pair.publicKey) =>
    nacl.sign.detached.verify(Buffer.from(content), Buffer.from(sig, "base64"), publicKey);

  it("signs `{id}.{timestamp}.{body}` with ed25519: v1a,<base64 of 64 bytes>, verified by tweetnacl", () => {
    const header = signatureHeader([whsk], VECTOR.id, VECTOR.timestamp, VECTOR.payload);
    const [[version, sig]] = entries(header) as [[string, string]];
    expect(version).toBe("v1a");
    expect(Buffer.from(sig, "base64")).toHaveLength(64);
    expect(naclVerifies(sig, `${VECTOR.id}.${VECTOR.timestamp}.${VECTOR.payload}`)).toBe(true);
    // ed25519 is deterministic: tweetnacl's own signature of the same content is the same bytes.
    expect(sig).toBe(Buffer.from(nacl.sign.detached(Buffer.from(`${VECTOR.id}.${VECTOR.timestamp}.${VECTOR.payload}`), pair.secretKey)).toString("base64"));
  });

  it("a changed body, id or timestamp no longer verifies, nor under another key", () => {
    const [[, sig]] = entries(signatureHeader([whsk], "msg_1", 1700000000, '{"a":1}')) as [[string, string]];
    expect(naclVerifies(sig, 'msg_1.1700000000.{"a":1}')).toBe(true);
    expect(naclVerifies(sig, 'msg_1.1700000000.{"a":2}')).toBe(false);
    expect(naclVerifies(sig, 'msg_2.1700000000.{"a":1}')).toBe(false);
    expect(naclVerifies(sig, 'msg_1.1700000001.{"a":1}')).toBe(false);
    expect(naclVerifies(sig, 'msg_1.1700000000.{"a":1}', nacl.sign.keyPair.fromSeed(Buffer.alloc(32, 1)).publicKey)).toBe(false);
  });

  it("accepts tweetnacl's 64-byte secret key form (seed then public key), signing the same", () => {
    const long = `whsk_${Buffer.from(pair.secretKey).toString("base64")}`;
    expect(isValidSecret(long)).toBe(true);
    expect(signatureHeader([long], "m", 1, "{}")).toBe(signatureHeader([whsk], "m", 1, "{}"));
  });

  it("rotation and migration: one entry per secret in order, v1 and v1a side by side, each verifiable", () => {
    const header = signatureHeader([whsk, VECTOR.secret], VECTOR.id, VECTOR.timestamp, VECTOR.payload);
    const [[v1a, sig], [v1, mac]] = entries(header) as [[string, string], [string, string]];
    expect([v1a, v1]).toEqual(["v1a", "v1"]);
    expect(`v1,${mac}`).toBe(VECTOR.signature);
    expect(naclVerifies(sig, `${VECTOR.id}.${VECTOR.timestamp}.${VECTOR.payload}`)).toBe(true);
  });

  it("generates v1a signing keys on request: whsk_ + base64 of a 32-byte seed, distinct, each signing v1a", () => {
    const keys = new Set(Array.from({ length: 20 }, () => generateSecret("v1a")));
    expect(keys.size).toBe(20);
    for (const k of keys) {
      expect(k).toMatch(/^whsk_[A-Za-z0-9+/]{43}=$/);
      expect(schemeOf(k)).toBe("v1a");
      expect(isValidSecret(k)).toBe(true);
      const pub = nacl.sign.keyPair.fromSeed(Buffer.from(k.slice(5), "base64")).publicKey;
      expect(publicKeyText(k)).toBe(`whpk_${Buffer.from(pub).toString("base64")}`);
      const [[, sig]] = entries(signatureHeader([k], "m", 1, "{}")) as [[string, string]];
      expect(naclVerifies(sig, "m.1.{}", pub)).toBe(true);
    }
    expect(generateSecret()).toMatch(/^whsec_/);
    expect(generateSecret("v1")).toMatch(/^whsec_/);
    expect(schemeOf(generateSecret())).toBe("v1");
  });

  it.each([
    ["31 bytes", `whsk_${Buffer.alloc(31, 1).toString("base64")}`],
    ["33 bytes", `whsk_${Buffer.alloc(33, 1).toString("base64")}`],
    ["64 bytes whose public half is not the seed's", `whsk_${Buffer.concat([seed, Buffer.alloc(32, 1)]).toString("base64")}`],
    ["unpadded base64", `whsk_${seed.toString("base64").replace(/=+$/, "")}`],
    ["a public key (it cannot sign)", `whpk_${Buffer.from(pair.publicKey).toString("base64")}`],
    ["the prefix alone", "whsk_"],
  ])("refuses a v1a signing key of %s", (_label, secret) => {
    expect(isValidSecret(secret)).toBe(false);
    expect(schemeOf(secret)).toBe(null);
    expect(() => signatureHeader([secret], "id", 1, "{}")).toThrow(InvalidSecretError);
  });
});
