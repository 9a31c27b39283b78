/**
 * A subscription's endpoint authentication (issue 29, docs/endpointAuth.md): what the API accepts,
 * how it is stored, and what the API shows of it.
 *
 * | kind | accepted | secret part (sealed at rest, never answered) |
 * |---|---|---|
 * | `oauth2ClientCredentials` | tokenUrl, clientId, clientSecret, scope?, audience?, parameters?, clientAuthentication? | clientSecret |
 * | `mtls` | certificate (PEM), privateKey (PEM), ca? (PEM) | privateKey |
 * | `basic` | username, password | password |
 *
 * The stored form (`outbound_subscriptions.auth`, migration 021) keeps the readable parts as given
 * and each secret part as an envelope bound to the subscription and the field
 * (`outbound_subscriptions.auth.<field>:<id>`), so a value copied to another row or field does not
 * decrypt there. Each stored configuration gets a random `version`: the token cache
 * (tokenCache.ts) keeps a token for one version only, so a rotated client secret never goes on
 * with a token fetched with the old one.
 */
import { createPrivateKey, randomBytes, X509Certificate } from "node:crypto";
import * as z from "zod/mini";
import { httpUrlSchema } from "../httpUrl.js";
import { activeKeyring } from "../../crypto/activeKeyring.js";
import { seal } from "../../crypto/envelope.js";
import { OutboundValidationError } from "../errors.js";
import { openValue } from "../../crypto/subscriptionSecrets.js";

/** A client certificate expiring within this many days is warned of (answers, `certificate.expiresSoon`). */
export const CERTIFICATE_WARNING_DAYS = 30;
const DAY_MS = 86_400_000;

/** Parameters the token request sets itself: not overridable by `parameters`. */
const RESERVED_TOKEN_PARAMETERS = new Set(["grant_type", "client_id", "client_secret", "scope", "audience"]);
/** Visible ASCII on one line: it ends up in a header or a form body. */
const PRINTABLE = /^[\x20-\x7e]*$/;

const tokenUrlSchema = httpUrlSchema({ example: "https://auth.example.com/oauth/token", credentialsHint: "give clientId and clientSecret" });

const text = (max: number, what = "") => z.string().check(z.minLength(1, `must not be empty${what}`), z.maxLength(max, `must have at most ${max} characters`));
const pem = (max: number) => z.string().check(z.minLength(1, "must not be empty"), z.maxLength(max, `must have at most ${max} characters`));

export const oauth2AuthSchema = z.strictObject({
  kind: z.literal("oauth2ClientCredentials"),
  /** The token endpoint; it passes the same destination policy (ALLOWED_DESTINATIONS, SSRF) as endpoint URLs. */
  tokenUrl: tokenUrlSchema,
  clientId: text(500).check(z.regex(PRINTABLE, "must be printable ASCII")),
  /** Stored encrypted; never answered. */
  clientSecret: text(2000).check(z.regex(PRINTABLE, "must be printable ASCII")),
  scope: z.optional(text(1000).check(z.regex(PRINTABLE, "must be printable ASCII"))),
  /** Sent as the `audience` parameter (Auth0, Okta and others want it). */
  audience: z.optional(text(1000).check(z.regex(PRINTABLE, "must be printable ASCII"))),
  /** More form parameters of the token request (not secret: they are answered back). */
  parameters: z.optional(z.record(z.string(), z.string()).check(z.superRefine((params, ctx) => {
    const names = Object.keys(params);
    if (names.length > 20) ctx.addIssue({ code: "custom", message: "at most 20 parameters" });
    for (const name of names) {
      if (RESERVED_TOKEN_PARAMETERS.has(name)) ctx.addIssue({ code: "custom", path: [name], message: `${name} is set from the other fields` });
      if (name.length === 0 || name.length > 100 || !PRINTABLE.test(name)) ctx.addIssue({ code: "custom", path: [name], message: "names are 1 to 100 printable ASCII characters" });
      if (params[name]!.length > 1000) ctx.addIssue({ code: "custom", path: [name], message: "must have at most 1000 characters" });
    }
  }))),
  /**
   * How the client authenticates to the token endpoint: `basic` (HTTP Basic, RFC 6749 §2.3.1's
   * client_secret_basic, the default) or `body` (client_id and client_secret in the form).
   */
  clientAuthentication: z.optional(z.enum(["basic", "body"])),
});

export const mtlsAuthSchema = z.strictObject({
  kind: z.literal("mtls"),
  /** The client certificate, PEM (its chain may follow it). */
  certificate: pem(50_000),
  /** Its private key, PEM, unencrypted (no passphrase). Stored encrypted; never answered. */
  privateKey: pem(20_000),
  /** PEM certificates to trust for the endpoint's own certificate instead of the system's roots. */
  ca: z.optional(pem(100_000)),
});

export const basicAuthSchema = z.strictObject({
  kind: z.literal("basic"),
  // RFC 7617: the user-id cannot contain a colon (the password can).
  username: text(500).check(z.regex(/^[\x20-\x39\x3b-\x7e]*$/, "must be printable ASCII without a colon")),
  /** Stored encrypted; never answered. */
  password: text(1000).check(z.regex(PRINTABLE, "must be printable ASCII")),
});

/** What `auth` of a subscription accepts (creation and edit; null in an edit removes it). */
export const authInputSchema = z.discriminatedUnion("kind", [oauth2AuthSchema, mtlsAuthSchema, basicAuthSchema]).check(
  z.describe("How the relay authenticates to the endpoint (docs/endpointAuth.md): `oauth2ClientCredentials`, `mtls` or `basic`. Secret parts (clientSecret, privateKey, password) are stored encrypted and never answered; send the whole object again to change or rotate it."),
);

export type AuthInput = z.infer<typeof authInputSchema>;

interface CertificateFacts {
  subject: string;
  issuer: string;
  notBefore: string;
  notAfter: string;
  fingerprint256: string;
}

export type StoredAuth =
  | { kind: "oauth2ClientCredentials"; version: string; tokenUrl: string; clientId: string; clientSecret: string; scope: string | null; audience: string | null; parameters: Record<string, string>; clientAuthentication: "basic" | "body" }
  | ({ kind: "mtls"; version: string; certificate: string; privateKey: string; ca: string | null } & CertificateFacts)
  | { kind: "basic"; version: string; username: string; password: string };

/** The secret field of each kind: sealed in storage, absent from answers. */
export const SECRET_FIELD = { oauth2ClientCredentials: "clientSecret", mtls: "privateKey", basic: "password" } as const satisfies Record<StoredAuth["kind"], string>;

/** What the API answers: never a secret part, nor the certificate's PEM (its facts instead). */
export type PublicAuth =
  | { kind: "oauth2ClientCredentials"; tokenUrl: string; clientId: string; scope: string | null; audience: string | null; parameters: Record<string, string>; clientAuthentication: "basic" | "body" }
  | { kind: "mtls"; certificate: CertificateFacts & { expired: boolean; expiresSoon: boolean; expiresInDays: number }; ca: boolean }
  | { kind: "basic"; username: string };

const invalid = (path: string, message: string): never => {
  throw new OutboundValidationError(`Invalid subscription: auth.${path}: ${message}`, [{ path: `auth.${path}`, message }]);
};

/** Every `-----BEGIN CERTIFICATE-----` block of a PEM bundle. */
function certificatesOf(pemText: string): string[] {
  return pemText.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/**
 * Checks a client certificate and key: both parse, the key is the certificate's, it has not
 * expired; the CA bundle, if any, holds certificates. Returns the certificate's facts and the
 * warnings (expiring within CERTIFICATE_WARNING_DAYS, not valid yet).
 */
export function checkClientCertificate(input: { certificate: string; privateKey: string; ca?: string | null }, now = new Date()): { facts: CertificateFacts; warnings: string[] } {
  const blocks = certificatesOf(input.certificate);
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(blocks[0] ?? input.certificate);
  } catch {
    return invalid("certificate", "is not a PEM X.509 certificate (-----BEGIN CERTIFICATE----- …)");
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey({ key: input.privateKey, format: "pem" });
  } catch {
    return invalid("privateKey", "is not an unencrypted PEM private key (-----BEGIN PRIVATE KEY----- …; remove a passphrase first)");
  }
  if (!x509.checkPrivateKey(key)) invalid("privateKey", "does not match the certificate (it is another certificate's key)");
  const notAfter = new Date(x509.validTo);
  const notBefore = new Date(x509.validFrom);
  if (notAfter.getTime() <= now.getTime()) invalid("certificate", `expired on ${notAfter.toISOString()}; give a valid one`);
  if (input.ca != null) {
    const cas = certificatesOf(input.ca);
    if (cas.length === 0) invalid("ca", "holds no PEM certificate (-----BEGIN CERTIFICATE----- …)");
    for (const [i, block] of cas.entries()) {
      try {
        new X509Certificate(block);
      } catch {
        invalid("ca", `certificate ${i + 1} does not parse`);
      }
    }
  }
  const facts = { subject: x509.subject, issuer: x509.issuer, notBefore: notBefore.toISOString(), notAfter: notAfter.toISOString(), fingerprint256: x509.fingerprint256 };
  return { facts, warnings: certificateWarnings(facts, now) };
}

/** Warnings about a client certificate at `now`: expired, expiring soon, or not valid yet. */
export function certificateWarnings(facts: Pick<CertificateFacts, "notBefore" | "notAfter">, now = new Date()): string[] {
  const left = new Date(facts.notAfter).getTime() - now.getTime();
  const warnings: string[] = [];
  if (left <= 0) warnings.push(`auth: the client certificate expired on ${facts.notAfter}: deliveries fail (client_certificate_expired) until a new one is set`);
  else if (left < CERTIFICATE_WARNING_DAYS * DAY_MS) {
    const days = Math.floor(left / DAY_MS);
    const when = days === 0 ? "in less than a day" : `in ${days} day${days === 1 ? "" : "s"}`;
    warnings.push(`auth: the client certificate expires on ${facts.notAfter} (${when}): set a new one before`);
  }
  if (new Date(facts.notBefore).getTime() > now.getTime()) warnings.push(`auth: the client certificate is not valid before ${facts.notBefore}`);
  return warnings;
}

/** Where a secret part of a subscription's auth is bound (the envelope's AAD). */
export const authWhere = (subscriptionId: string, field: string): string => `outbound_subscriptions.auth.${field}:${subscriptionId}`;

/**
 * The stored form of validated input (secret part sealed for `subscriptionId`), with warnings.
 * Throws OutboundValidationError for a certificate that does not check out.
 */
export function prepareAuth(subscriptionId: string, input: AuthInput, now = new Date()): { stored: StoredAuth; warnings: string[] } {
  const version = randomBytes(9).toString("base64url");
  const sealed = (field: string, value: string) => seal(activeKeyring(), value, authWhere(subscriptionId, field));
  switch (input.kind) {
    case "oauth2ClientCredentials":
      return {
        stored: {
          kind: input.kind, version, tokenUrl: input.tokenUrl, clientId: input.clientId, clientSecret: sealed("clientSecret", input.clientSecret),
          scope: input.scope ?? null, audience: input.audience ?? null, parameters: input.parameters ?? {}, clientAuthentication: input.clientAuthentication ?? "basic",
        },
        warnings: [],
      };
    case "mtls": {
      const { facts, warnings } = checkClientCertificate(input, now);
      return { stored: { kind: input.kind, version, certificate: input.certificate, privateKey: sealed("privateKey", input.privateKey), ca: input.ca ?? null, ...facts }, warnings };
    }
    case "basic":
      return { stored: { kind: input.kind, version, username: input.username, password: sealed("password", input.password) }, warnings: [] };
  }
}

/** The stored form with its secret part decrypted (for the relay). Throws the unreadable-secret errors. */
export function openAuth(subscriptionId: string, stored: StoredAuth): StoredAuth {
  const field = SECRET_FIELD[stored.kind];
  const value = (stored as unknown as Record<string, string>)[field]!;
  return { ...stored, [field]: openValue(value, authWhere(subscriptionId, field)) } as StoredAuth;
}

/** What the API shows of a stored configuration. */
export function publicAuth(stored: StoredAuth | null | undefined, now = new Date()): PublicAuth | null {
  if (!stored) return null;
  switch (stored.kind) {
    case "oauth2ClientCredentials":
      return { kind: stored.kind, tokenUrl: stored.tokenUrl, clientId: stored.clientId, scope: stored.scope, audience: stored.audience, parameters: stored.parameters, clientAuthentication: stored.clientAuthentication };
    case "mtls": {
      const left = new Date(stored.notAfter).getTime() - now.getTime();
      return {
        kind: stored.kind,
        certificate: {
          subject: stored.subject, issuer: stored.issuer, notBefore: stored.notBefore, notAfter: stored.notAfter, fingerprint256: stored.fingerprint256,
          expired: left <= 0, expiresSoon: left > 0 && left < CERTIFICATE_WARNING_DAYS * DAY_MS, expiresInDays: Math.floor(left / DAY_MS),
        },
        ca: stored.ca !== null,
      };
    }
    case "basic":
      return { kind: stored.kind, username: stored.username };
  }
}

/** Warnings to show with a subscription's answer (a client certificate expiring or expired). */
export function authWarnings(stored: StoredAuth | null | undefined, now = new Date()): string[] {
  return stored?.kind === "mtls" ? certificateWarnings(stored, now) : [];
}
