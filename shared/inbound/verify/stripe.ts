/**
 * Stripe: `Stripe-Signature: t=<seconds>,v1=<hex>[,v1=<hex>…]`, each v1 an HMAC-SHA256 of
 * "t.body" keyed by the endpoint secret's text (`whsec_…`, used as is). Several v1 appear while
 * Stripe rolls a secret; v0 (test-mode SHA-1) and unknown keys are ignored. The event id is the
 * body's `id`, its type the body's `type`.
 */
import { isRejection, requireHeader } from "./headers.js";
import { decodeStrict, hmac, matchesAny } from "./hmac.js";
import { checkFreshness, parseEpoch } from "./timestamp.js";
import { reject, type Rejection, type SchemeVerifier } from "./types.js";

interface StripeHeader {
  timestamp: string;
  signatures: Buffer[];
}

function parseStripeHeader(header: string): StripeHeader | Rejection {
  const stamps: string[] = [];
  const signatures: Buffer[] = [];
  // Stripe writes `k=v` items joined by "," with no space; ", " is how Node joins a header sent twice.
  if (/,\s/.test(header)) return reject(401, "ambiguous_header", "The Stripe-Signature header was sent more than once; send it exactly once.");
  for (const item of header.split(",")) {
    const eq = item.indexOf("=");
    if (eq <= 0) return reject(401, "malformed_signature", "The Stripe-Signature header must be comma-separated key=value items (t=…,v1=…).");
    const key = item.slice(0, eq);
    const value = item.slice(eq + 1);
    if (key === "t") stamps.push(value);
    else if (key === "v1") {
      const sig = decodeStrict(value, "hex");
      if (sig) signatures.push(sig);
    }
  }
  // Two `t=` mean two headers were merged (or a forgery attempt): we will not pick one.
  if (stamps.length > 1) return reject(401, "ambiguous_header", "The Stripe-Signature header holds more than one timestamp (t=); send it exactly once.");
  const [timestamp] = stamps;
  if (timestamp === undefined) return reject(401, "missing_timestamp", "The Stripe-Signature header holds no timestamp (t=<seconds>).");
  if (signatures.length === 0) return reject(401, "malformed_signature", "The Stripe-Signature header holds no v1=<hex> signature.");
  return { timestamp, signatures };
}

export const stripe: SchemeVerifier = {
  checkSignature(partner, headers, rawBody, nowSeconds) {
    const header = requireHeader(headers, "stripe-signature", 401, "missing_signature", "Stripe signs every event; check the endpoint's signing secret");
    if (isRejection(header)) return header;
    const parsed = parseStripeHeader(header);
    if (isRejection(parsed)) return parsed;
    const signedAt = parseEpoch(parsed.timestamp);
    if (signedAt === null) return reject(401, "invalid_timestamp", "The Stripe-Signature timestamp (t=) must be whole seconds since the epoch.");
    const prefix = `${parsed.timestamp}.`;
    const expected = partner.secrets.map((secret) => hmac("sha256", Buffer.from(secret), [prefix, rawBody]));
    if (!matchesAny(expected, parsed.signatures)) {
      return reject(401, "signature_mismatch", "No v1 signature in Stripe-Signature matches this body with any of the partner's current secrets.");
    }
    return checkFreshness(signedAt, nowSeconds, partner.toleranceSeconds);
  },

  identify(_partner, _headers, body) {
    return { id: body.id, idSource: "JSON field id", type: body.type };
  },
};
