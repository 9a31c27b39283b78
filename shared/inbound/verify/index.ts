/**
 * Verifying inbound webhooks: each partner's signature scheme, checked on the exact bytes received
 * and with a constant-time comparison, before anything about the body is looked at.
 *
 * @example
 * const partners = loadPartners(process.env);
 * const partner = partners.get("stripe");
 * const verdict = verifyWebhook(partner, req.headers, rawBody);
 * if (!verdict.ok) return { status: verdict.status, body: { error: { code: verdict.code, message: verdict.reason } } };
 */
import { eventIdFrom, eventTypeFrom, parseJsonObject } from "./body.js";
import { genericHmac } from "./genericHmac.js";
import { github } from "./github.js";
import { indexHeaders, isRejection } from "./headers.js";
import { standardWebhooks } from "./standardWebhooks.js";
import { stripe } from "./stripe.js";
import type { HeaderBag, PartnerConfig, Scheme, SchemeVerifier, VerifyResult } from "./types.js";

export type { HeaderBag, HmacAlgorithm, PartnerConfig, Rejection, Scheme, SignatureEncoding, VerifyResult } from "./types.js";
export { DEFAULT_TOLERANCE_SECONDS } from "./types.js";
export { loadPartners, parsePartners } from "./partners.js";
export { MAX_EVENT_ID_LENGTH } from "./body.js";

const schemes: Record<Scheme, SchemeVerifier> = {
  "standard-webhooks": standardWebhooks,
  stripe,
  github,
  "generic-hmac": genericHmac,
};

/**
 * Checks the signature on the exact bytes (401 first, so nothing is revealed about the body), then
 * that the body is a JSON object (400), then extracts the partner's event id (400 with a clear
 * reason if none: never invent one).
 * @param headers as received; names in any case. A header given twice (array) is refused.
 * @param nowSeconds the clock for the timestamp tolerance. Default: now.
 */
export function verifyWebhook(partner: PartnerConfig, headers: HeaderBag, rawBody: Buffer, nowSeconds = Math.floor(Date.now() / 1000)): VerifyResult {
  const scheme = schemes[partner.scheme];
  const bag = indexHeaders(headers);
  const refused = scheme.checkSignature(partner, bag, rawBody, nowSeconds);
  if (refused) return refused;
  const body = parseJsonObject(rawBody);
  if (isRejection(body)) return body;
  const identity = scheme.identify(partner, bag, body);
  if (isRejection(identity)) return identity;
  const eventId = eventIdFrom(identity);
  if (isRejection(eventId)) return eventId;
  return { ok: true, eventId, eventType: eventTypeFrom(identity.type) };
}
