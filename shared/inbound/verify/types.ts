/**
 * The shapes shared by every signature scheme: a partner's configuration, the verdict, and the
 * two-step contract each scheme module implements (signature first, identity second).
 */

/** The signature schemes we can check. */
export type Scheme = "standard-webhooks" | "stripe" | "github" | "generic-hmac";

/** HMAC digests a generic partner may use. SHA-1 only for legacy senders that offer nothing else. */
export type HmacAlgorithm = "sha256" | "sha512" | "sha1";

/** How a signature is written in its header. */
export type SignatureEncoding = "hex" | "base64" | "base64url";

/**
 * One inbound partner: who may post to `POST /webhooks/:name`, and how their requests are signed.
 * Built by `parsePartners` (validated); the generic-hmac fields are only read for that scheme.
 */
export interface PartnerConfig {
  /** The `:partner` path segment, e.g. `stripe`. */
  name: string;
  scheme: Scheme;
  /** Every secret currently accepted; during a rotation, the old and the new one. */
  secrets: string[];
  /** How far a signed timestamp may be from our clock, in seconds. Default: 300. */
  toleranceSeconds?: number;
  /** Events of this partner that no inbound handler takes: `ignore` (default, status ignored) or `quarantine`. */
  unhandled?: "ignore" | "quarantine";
  /**
   * Hand each verified, de-duplicated event on: to `url`, signed with `secrets` (Standard
   * Webhooks), the partner's `default` destination; and to the destinations added through the API
   * (each with its filter and transformation, shared/inbound/forwardDestinations.ts). `true`:
   * forward to the API's destinations only.
   */
  forward?: true | { url: string; secrets: string[] };

  // generic-hmac options
  /** Header carrying the signature(s), e.g. `X-Signature`. Required for generic-hmac. */
  signatureHeader?: string;
  /** Default: `sha256`. */
  algorithm?: HmacAlgorithm;
  /** Default: `hex`. */
  encoding?: SignatureEncoding;
  /** Text before each signature in the header, e.g. `sha256=`. Default: none. */
  prefix?: string;
  /** How the secrets are written. Default: `utf8` (the secret's text is the key). */
  secretEncoding?: "utf8" | "base64" | "hex";
  /** Header with the signing time, in seconds (or milliseconds, see `timestampUnit`). */
  timestampHeader?: string;
  /** Default: `seconds`. */
  timestampUnit?: "seconds" | "milliseconds";
  /**
   * What is signed: `{body}` (the exact bytes), `{timestamp}` and `{id}` (the values of the
   * timestamp and event id headers). Default: `{body}`, or `{timestamp}.{body}` with a timestamp header.
   */
  signedPayload?: string;
  /** Header with the partner's event id (exactly one of eventIdHeader / eventIdField). */
  eventIdHeader?: string;
  /** Dotted path to the event id in the JSON body, e.g. `data.id`. */
  eventIdField?: string;
  /** Header with the event type (optional). */
  eventTypeHeader?: string;
  /** Dotted path to the event type in the JSON body (optional). */
  eventTypeField?: string;
}

/** A refusal: 401 for anything about the signature, 400 for the body or a missing event id. */
export interface Rejection {
  ok: false;
  status: 400 | 401;
  /** Stable, machine-readable, e.g. `signature_mismatch`, `timestamp_too_old`. */
  code: string;
  /** For the sender: what is wrong and what to do. Never reveals a secret or an expected value. */
  reason: string;
}

export type VerifyResult = { ok: true; eventId: string; eventType: string | null } | Rejection;

export type HeaderBag = Record<string, string | string[] | undefined>;

/** Where a scheme found the event id and type (validated centrally by `verifyWebhook`). */
export interface Identity {
  id: unknown;
  /** Named in the rejection when the id is missing, e.g. `header X-GitHub-Delivery`. */
  idSource: string;
  type: unknown;
}

/** What each scheme module implements. */
export interface SchemeVerifier {
  /** Null when one of the partner's secrets signed these exact bytes within the tolerance; else a 401. */
  checkSignature(partner: PartnerConfig, headers: HeaderBag, rawBody: Buffer, nowSeconds: number): Rejection | null;
  /** The event id and type, from headers or the parsed body; a 400 when a header is ambiguous. */
  identify(partner: PartnerConfig, headers: HeaderBag, body: Record<string, unknown>): Identity | Rejection;
}

export const DEFAULT_TOLERANCE_SECONDS = 300;

export function reject(status: 400 | 401, code: string, reason: string): Rejection {
  return { ok: false, status, code, reason };
}
