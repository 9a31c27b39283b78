/**
 * Standard Webhooks (standardwebhooks.com, also Svix): `webhook-id`, `webhook-timestamp` (seconds)
 * and `webhook-signature`, a space-separated list of `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`.
 * Secrets are `whsec_<base64 key>`. The event id is `webhook-id` (it is signed, so it cannot be swapped).
 */
import { requireHeader, isRejection } from "./headers.js";
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
    // Other versions (e.g. v1a, asymmetric) are not ours to check: only v1 entries count.
    const candidates = header
      .split(" ")
      .filter((entry) => entry.startsWith("v1,"))
      .map((entry) => decodeStrict(entry.slice(3), "base64"))
      .filter((sig): sig is Buffer => sig !== null);
    if (candidates.length === 0) {
      return reject(401, "malformed_signature", "The webhook-signature header holds no `v1,<base64>` signature.");
    }
    const prefix = `${id}.${ts}.`;
    const expected = partner.secrets
      .map(standardWebhooksKey)
      .filter((key): key is Buffer => key !== null)
      .map((key) => hmac("sha256", key, [prefix, rawBody]));
    if (!matchesAny(expected, candidates)) {
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
