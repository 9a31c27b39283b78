/**
 * The v1a keys (shared/crypto/ed25519.ts) against tweetnacl, an ed25519 implementation independent
 * of node:crypto: the `whsk_` secret in both forms (32-byte seed, 64-byte seed + public key), the
 * `whpk_` public key, and a table of texts that are not keys (wrong prefix, wrong length, broken
 * base64), each refused rather than turned into some other key.
 */
import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import nacl from "tweetnacl";
import { generateSigningKey, publicKeyOf, publicKeyText, signEd25519, signingKeyOf, verifyEd25519 } from "../../shared/crypto/ed25519.js";

const seed = Buffer.alloc(32, 0x2a);
const pair = nacl.sign.keyPair.fromSeed(seed);
const otherPair = nacl.sign.keyPair.fromSeed(Buffer.alloc(32, 0x17));
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
const whsk = `whsk_${b64(seed)}`;
const whpk = `whpk_${b64(pair.publicKey)}`;
const tweetnaclSignature = (content: string | Uint8Array, secretKey = pair.secretKey) =>
  Buffer.from(nacl.sign.detached(typeof content === "string" ? Buffer.from(content, "utf8") : content, secretKey));

describe("whsk_ signing keys", () => {
  it("a 32-byte seed gives the key tweetnacl derives: the same public key, the same (deterministic) signature", () => {
    const key = signingKeyOf(whsk)!;
    expect(key).not.toBeNull();
    expect(key.publicKey.equals(Buffer.from(pair.publicKey))).toBe(true);
    expect(signEd25519(key, "msg_1.1764000000.{}").equals(tweetnaclSignature("msg_1.1764000000.{}"))).toBe(true);
  });

  it("accepts the 64-byte form of libsodium and tweetnacl (seed + its public key) as the same key", () => {
    const key = signingKeyOf(`whsk_${b64(pair.secretKey)}`)!;
    expect(key).not.toBeNull();
    expect(key.publicKey.equals(Buffer.from(pair.publicKey))).toBe(true);
    expect(signEd25519(key, "x").equals(tweetnaclSignature("x"))).toBe(true);
  });

  it("refuses a 64-byte form whose public half belongs to another seed (a broken key, not a silent other key)", () => {
    const mixed = Buffer.concat([seed, Buffer.from(otherPair.publicKey)]);
    expect(signingKeyOf(`whsk_${mixed.toString("base64")}`)).toBeNull();
    // One bit of the public half changed is refused too.
    const flipped = Buffer.from(pair.secretKey);
    flipped[63] = flipped[63]! ^ 1;
    expect(signingKeyOf(`whsk_${flipped.toString("base64")}`)).toBeNull();
  });

  it.each([
    ["empty", ""],
    ["the prefix alone", "whsk_"],
    ["a public key", whpk],
    ["a v1 secret", `whsec_${b64(seed)}`],
    ["the prefix in capitals", `WHSK_${b64(seed)}`],
    ["text before the prefix", `x${whsk}`],
    ["31 bytes", `whsk_${b64(Buffer.alloc(31, 1))}`],
    ["33 bytes", `whsk_${b64(Buffer.alloc(33, 1))}`],
    ["63 bytes", `whsk_${b64(pair.secretKey.subarray(0, 63))}`],
    ["65 bytes", `whsk_${b64(Buffer.concat([pair.secretKey, Buffer.alloc(1)]))}`],
    ["base64 without its padding", whsk.replace(/=+$/, "")],
    ["base64url characters", `whsk_${Buffer.alloc(32, 0xfb).toString("base64url")}=`],
    ["a space inside", `${whsk.slice(0, 20)} ${whsk.slice(20)}`],
    ["a trailing newline", `${whsk}\n`],
    ["a leading space after the prefix", `whsk_ ${b64(seed)}`],
    ["padding in the middle", `whsk_${b64(seed).slice(0, 4)}=${b64(seed).slice(5)}`],
    ["three padding characters", `whsk_${b64(Buffer.alloc(31, 1))}=`],
  ])("refuses %s", (_, text) => {
    expect(signingKeyOf(text)).toBeNull();
    expect(publicKeyText(text)).toBeNull();
  });

  it("refuses what is not a string (a secret from JSON may be anything)", () => {
    expect(signingKeyOf(undefined as unknown as string)).toBeNull();
    expect(signingKeyOf(42 as unknown as string)).toBeNull();
  });

  it("publicKeyText is whpk_ + base64 of the 32-byte public key tweetnacl derives", () => {
    expect(publicKeyText(whsk)).toBe(whpk);
    expect(publicKeyText(`whsk_${b64(pair.secretKey)}`)).toBe(whpk);
  });

  it("generates whsk_ + base64 of a fresh random 32-byte seed, each one usable", () => {
    const a = generateSigningKey();
    const b = generateSigningKey();
    expect(a).toMatch(/^whsk_[A-Za-z0-9+/]{43}=$/);
    expect(a).not.toBe(b);
    const key = signingKeyOf(a)!;
    const tw = nacl.sign.keyPair.fromSeed(Buffer.from(a.slice(5), "base64"));
    expect(key.publicKey.equals(Buffer.from(tw.publicKey))).toBe(true);
  });

  it("signs a string as its UTF-8 bytes, the same as the Buffer of them", () => {
    const key = signingKeyOf(whsk)!;
    const content = '{"name":"Zoë ☃"}';
    expect(signEd25519(key, content).equals(tweetnaclSignature(Buffer.from(content, "utf8")))).toBe(true);
    expect(signEd25519(key, Buffer.from(content, "utf8")).equals(signEd25519(key, content))).toBe(true);
    expect(signEd25519(key, Buffer.from(content, "latin1")).equals(signEd25519(key, content))).toBe(false);
  });
});

describe("whpk_ public keys", () => {
  const content = Buffer.from("msg_1.1764000000.{}");

  it("verifies tweetnacl's signature under the sender's whpk_ key, and nothing else", () => {
    const key = publicKeyOf(whpk)!;
    expect(key).not.toBeNull();
    const signature = tweetnaclSignature(content);
    expect(verifyEd25519(key, content, signature)).toBe(true);
    expect(verifyEd25519(key, Buffer.from("msg_1.1764000000.{ }"), signature)).toBe(false);
    expect(verifyEd25519(key, content, tweetnaclSignature(content, otherPair.secretKey))).toBe(false);
    expect(verifyEd25519(publicKeyOf(`whpk_${b64(otherPair.publicKey)}`)!, content, signature)).toBe(false);
    const altered = Buffer.from(signature);
    altered[10] = altered[10]! ^ 1;
    expect(verifyEd25519(key, content, altered)).toBe(false);
  });

  it("a key that cannot verify (an X25519 key) is a refusal, not a throw", () => {
    const { publicKey } = generateKeyPairSync("x25519");
    expect(verifyEd25519(publicKey, content, tweetnaclSignature(content))).toBe(false);
  });

  it.each([
    ["empty", Buffer.alloc(0)],
    ["63 bytes (truncated)", tweetnaclSignature(content).subarray(0, 63)],
    ["65 bytes (a byte appended)", Buffer.concat([tweetnaclSignature(content), Buffer.alloc(1)])],
    ["128 bytes (the signature twice)", Buffer.concat([tweetnaclSignature(content), tweetnaclSignature(content)])],
  ])("refuses a signature of the wrong length: %s", (_, signature) => {
    expect(verifyEd25519(publicKeyOf(whpk)!, content, signature)).toBe(false);
  });

  it.each([
    ["empty", ""],
    ["the prefix alone", "whpk_"],
    ["a signing key", whsk],
    ["the prefix in capitals", `WHPK_${b64(pair.publicKey)}`],
    ["31 bytes", `whpk_${b64(pair.publicKey.subarray(0, 31))}`],
    ["33 bytes", `whpk_${b64(Buffer.concat([pair.publicKey, Buffer.alloc(1)]))}`],
    ["64 bytes", `whpk_${b64(pair.secretKey)}`],
    ["base64 without its padding", whpk.replace(/=+$/, "")],
    ["a trailing newline", `${whpk}\n`],
    ["not base64", "whpk_!!!!"],
  ])("refuses %s as a public key", (_, text) => {
    expect(publicKeyOf(text)).toBeNull();
  });
});
