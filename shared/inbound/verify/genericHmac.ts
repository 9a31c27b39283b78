/**
 * A configurable HMAC for partners that follow no standard: which header carries the signature,
 * the digest, how it is written, an optional timestamp header (then signed and checked against the
 * tolerance), and a template of what is signed, e.g. `{timestamp}.{body}`. The event id comes from
 * a header or a JSON field, as configured.
 */
import { ConfigError } from "../../config.js";
import { isRejection, readHeader, requireHeader } from "./headers.js";
import { decodeStrict, hmac, matchesAny } from "./hmac.js";
import { checkFreshness, parseEpoch } from "./timestamp.js";
import { reject, type HeaderBag, type PartnerConfig, type Rejection, type SchemeVerifier } from "./types.js";

export const PLACEHOLDER = /\{(body|timestamp|id)\}/g;

/** The template of what is signed, with its default. */
export function signedPayloadTemplate(partner: PartnerConfig): string {
  return partner.signedPayload ?? (partner.timestampHeader ? "{timestamp}.{body}" : "{body}");
}

export function genericSecretKey(secret: string, encoding: PartnerConfig["secretEncoding"] = "utf8"): Buffer | null {
  return encoding === "utf8" ? Buffer.from(secret) : decodeStrict(secret, encoding);
}

/** Reads the value of `{timestamp}` / `{id}` when the template uses it; a 401 when it is not there. */
function signedHeaderValues(partner: PartnerConfig, headers: HeaderBag, template: string): { timestamp?: string; id?: string } | Rejection {
  const values: { timestamp?: string; id?: string } = {};
  if (partner.timestampHeader) {
    const ts = requireHeader(headers, partner.timestampHeader, 401, "missing_timestamp", "the partner signs the time of sending");
    if (isRejection(ts)) return ts;
    values.timestamp = ts;
  }
  if (template.includes("{id}")) {
    // Stryker disable next-line StringLiteral: equivalent: unreachable, checkSignature refuses {id} without eventIdHeader
    const idHeader = partner.eventIdHeader ?? "";
    const id = requireHeader(headers, idHeader, 401, "missing_header", "the event id is part of what is signed");
    if (isRejection(id)) return id;
    values.id = id;
  }
  return values;
}

export const genericHmac: SchemeVerifier = {
  checkSignature(partner, headers, rawBody, nowSeconds) {
    if (!partner.signatureHeader) throw new ConfigError(`Partner "${partner.name}": generic-hmac needs signatureHeader; build partners with parsePartners.`);
    const template = signedPayloadTemplate(partner);
    // parsePartners refuses these; a partner built by hand must not sign an empty value in their place.
    if (template.includes("{timestamp}") && !partner.timestampHeader) throw new ConfigError(`Partner "${partner.name}": signedPayload uses {timestamp}, which needs timestampHeader; build partners with parsePartners.`);
    if (template.includes("{id}") && !partner.eventIdHeader) throw new ConfigError(`Partner "${partner.name}": signedPayload uses {id}, which needs eventIdHeader; build partners with parsePartners.`);
    const signed = signedHeaderValues(partner, headers, template);
    if (isRejection(signed)) return signed;

    let signedAt: number | null = null;
    if (signed.timestamp !== undefined) {
      signedAt = parseEpoch(signed.timestamp);
      if (signedAt === null) return reject(401, "invalid_timestamp", `The ${partner.timestampHeader} header must be whole ${partner.timestampUnit ?? "seconds"} since the epoch.`);
      if (partner.timestampUnit === "milliseconds") signedAt = Math.floor(signedAt / 1000);
    }

    const header = requireHeader(headers, partner.signatureHeader, 401, "missing_signature", "sign the request with one of the partner's secrets");
    if (isRejection(header)) return header;
    const prefix = partner.prefix ?? "";
    // Several signatures may be listed (rotation); hex and base64 contain no space or comma.
    // The empty tokens between two separators decode to nothing and are dropped.
    const separator = prefix.includes(",") ? /\s/ : /[\s,]/;
    const candidates = header
      .split(separator)
      .filter((token) => token.startsWith(prefix))
      .map((token) => decodeStrict(token.slice(prefix.length), partner.encoding ?? "hex"))
      .filter((sig): sig is Buffer => sig !== null);
    if (candidates.length === 0) {
      return reject(401, "malformed_signature", `The ${partner.signatureHeader} header holds no signature of the form ${prefix}<${partner.encoding ?? "hex"}>.`);
    }

    // Literal text of the template is UTF-8; {body} is the exact bytes received.
    const parts = template.split(PLACEHOLDER).map((piece, i) => {
      if (i % 2 === 0) return piece;
      if (piece === "body") return rawBody;
      const value = piece === "timestamp" ? signed.timestamp : signed.id;
      // Stryker disable next-line StringLiteral: equivalent: unreachable, both values are read above whenever the template uses them
      return value ?? "";
    });
    const expected = partner.secrets
      .map((secret) => genericSecretKey(secret, partner.secretEncoding))
      .filter((key): key is Buffer => key !== null)
      .map((key) => hmac(partner.algorithm ?? "sha256", key, parts));
    if (!matchesAny(expected, candidates)) {
      return reject(401, "signature_mismatch", `No signature in ${partner.signatureHeader} matches this body with any of the partner's current secrets.`);
    }
    return signedAt === null ? null : checkFreshness(signedAt, nowSeconds, partner.toleranceSeconds);
  },

  identify(partner, headers, body) {
    let type: unknown = null;
    if (partner.eventTypeHeader) {
      const read = readHeader(headers, partner.eventTypeHeader);
      if ("ambiguous" in read) return reject(400, "ambiguous_header", `The ${partner.eventTypeHeader} header was sent more than once; send it exactly once.`);
      type = "value" in read ? read.value : null;
    } else if (partner.eventTypeField) {
      type = jsonPath(body, partner.eventTypeField);
    }
    if (partner.eventIdHeader) {
      const id = requireHeader(headers, partner.eventIdHeader, 400, "missing_event_id", "the partner sends its event id there");
      if (isRejection(id)) return id;
      return { id, idSource: `header ${partner.eventIdHeader}`, type };
    }
    const field = partner.eventIdField ?? "id";
    return { id: jsonPath(body, field), idSource: `JSON field ${field}`, type };
  },
};

/** The value at a dotted path (`data.object.id`), or undefined. Own properties only. */
export function jsonPath(value: unknown, path: string): unknown {
  let current: unknown = value;
  for (const key of path.split(".")) {
    if (typeof current !== "object" || current === null || Array.isArray(current) || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}
