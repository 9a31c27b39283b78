/**
 * The cryptographic core shared by every scheme: HMAC over exact bytes, strict decoding of the
 * signatures a sender wrote, and a constant-time match of any candidate against any secret.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { HmacAlgorithm, SignatureEncoding } from "./types.js";

/** HMAC of the concatenated parts; strings are UTF-8, Buffers are taken byte for byte. */
export function hmac(algorithm: HmacAlgorithm, key: Buffer, parts: ReadonlyArray<string | Buffer>): Buffer {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

const HEX = /^(?:[0-9a-fA-F]{2})+$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/;

/**
 * Decodes strictly, or returns null. Node's own decoders skip invalid characters, which would let
 * `<valid signature>garbage` pass; a signature must be exactly what the scheme says.
 */
export function decodeStrict(text: string, encoding: SignatureEncoding): Buffer | null {
  if (text === "") return null;
  if (encoding === "hex") return HEX.test(text) ? Buffer.from(text, "hex") : null;
  if (encoding === "base64") return BASE64.test(text) ? Buffer.from(text, "base64") : null;
  return BASE64URL.test(text) ? Buffer.from(text, "base64url") : null;
}

/**
 * True when some candidate equals some expected digest. Every comparison is constant-time
 * (`timingSafeEqual` on equal lengths; a length differing from the digest's is public knowledge).
 */
export function matchesAny(expected: readonly Buffer[], candidates: readonly Buffer[]): boolean {
  let found = false;
  for (const digest of expected) {
    for (const candidate of candidates) {
      // No early exit: the time taken does not depend on which pair matched.
      if (candidate.length === digest.length && timingSafeEqual(candidate, digest)) found = true;
    }
  }
  return found;
}
