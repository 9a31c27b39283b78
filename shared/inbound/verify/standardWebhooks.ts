/**
 * Standard Webhooks (standardwebhooks.com, also Svix): `webhook-id`, `webhook-timestamp` (seconds)
 * and `webhook-signature`, a space-separated list of `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`
 * and/or `v1a,<base64 ed25519 signature of the same>`. A partner's secrets are `whsec_<base64 key>`
 * (v1) and/or `whpk_<base64 public key>` (v1a): a sender signing only v1a is accepted with its
 * public key. The event id is `webhook-id` (it is signed, so it cannot be swapped).
 */
import { requireHeader, isRejection } from "./headers.js";
import type { KeyObject } from "node:crypto";
import { publicKeyOf, verifyEd25519 } from "../../crypto/ed25519.js";
import { decodeStrict, hmac, matchesAny } from "./hmac.js";
import { checkFreshness, parseEpoch } from "./timestamp.js";
import { reject, type SchemeVerifier } from "./types.js";

/** The HMAC key of a `whsec_…` secret (the prefix is optional, as in the reference libraries). */
export function standardWebhooksKey(secret: string): Buffer | null {
  return decodeStrict(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret, "base64");
}

export const standardWebhooks: SchemeVerifier = {
  checkSignature(partner, headers, rawBody, nowSeconds) {
    const id = requireHeader(headers, "webhook-id", 401, "missing_header", "Standard Webhooks signs the message id with the body");
    if (isRejection(id)) return id;
    const ts = requireHeader(headers, "webhook-timestamp", 401, "missing_timestamp", "Standard Webhooks signs the time of sending (seconds since the epoch)");
    if (isRejection(ts)) return ts;
    const signedAt = parseEpoch(ts);
    if (signedAt === null) return reject(401, "invalid_timestamp", "The webhook-timestamp header must be whole seconds since the epoch.");
    const header = requireHeader(headers, "webhook-signature", 401, "missing_signature", "sign the request with one of the partner's secrets");
    if (isRejection(header)) return header;

    // ", " never occurs in a list (entries are "v<n>,<base64>" separated by spaces): it is how
    // Node joins a header sent twice. Refuse rather than pick a copy.
    if (/,\s/.test(header)) return reject(401, "ambiguous_header", "The webhook-signature header was sent more than once; send one header with space-separated signatures.");
    // v1 entries are checked with the whsec_ secrets (HMAC), v1a entries with the whpk_ public keys
    // (ed25519); other versions are not ours to check. Any one valid signature is enough.
    const entries = header.split(" ");
    const decoded = (version: string) => entries
      .filter((entry) => entry.startsWith(`${version},`))
      .map((entry) => decodeStrict(entry.slice(version.length + 1), "base64"))
      .filter((sig): sig is Buffer => sig !== null);
    const v1 = decoded("v1");
    const v1a = decoded("v1a");
    if (v1.length === 0 && v1a.length === 0) {
      return reject(401, "malformed_signature", "The webhook-signature header holds no `v1,<base64>` (HMAC) or `v1a,<base64>` (ed25519) signature.");
    }
    const prefix = `${id}.${ts}.`;
    const expected = partner.secrets
      .map(standardWebhooksKey)
      .filter((key): key is Buffer => key !== null)
      .map((key) => hmac("sha256", key, [prefix, rawBody]));
    const publicKeys = partner.secrets.map(publicKeyOf).filter((key): key is KeyObject => key !== null);
    // Stryker disable next-line StringLiteral: equivalent: Buffer.from reads a string as UTF-8 when the encoding is empty
    const signed = Buffer.concat([Buffer.from(prefix, "utf8"), rawBody]);
    // Every pair is checked (no early exit), like matchesAny: the time does not say which matched.
    let asymmetric = false;
    for (const key of publicKeys) for (const sig of v1a) if (verifyEd25519(key, signed, sig)) asymmetric = true;
    if (!matchesAny(expected, v1) && !asymmetric) {
      if (v1.length === 0 && publicKeys.length === 0) {
        return reject(401, "signature_mismatch", "The webhook-signature header holds only v1a (ed25519) signatures, and this partner has no whpk_ public key among its secrets: add the sender's whpk_ key.");
      }
      if (v1a.length === 0 && expected.length === 0) {
        return reject(401, "signature_mismatch", "The webhook-signature header holds only v1 (HMAC) signatures, and this partner has only whpk_ public keys: add the sender's whsec_ secret.");
      }
      return reject(401, "signature_mismatch", "No signature in webhook-signature matches this body with any of the partner's current secrets.");
    }
    return checkFreshness(signedAt, nowSeconds, partner.toleranceSeconds);
  },

  identify(_partner, headers, body) {
    const id = requireHeader(headers, "webhook-id", 400, "missing_event_id", "it is the event id");
    if (isRejection(id)) return id;
    return { id, idSource: "header webhook-id", type: body.type };
  },
};
