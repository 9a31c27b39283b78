/**
 * Endpoint authentication at delivery time (issue 29, docs/endpointAuth.md): the relay hands each
 * attempt here; a subscription without `auth` goes straight to the transport, one with it gets its
 * credentials first.
 *
 * - `basic`: `Authorization: Basic …` (it replaces a custom `authorization` header).
 * - `oauth2ClientCredentials`: `Authorization: Bearer <token>`, the token shared by the relays
 *   (tokenCache.ts). A token endpoint's failure is the attempt's outcome (oauth2.ts classifies it);
 *   a 401 from the endpoint refreshes the token once and the attempt is sent again.
 * - `mtls`: the transport presents the client certificate (its own connection pool). An expired
 *   certificate is not presented: the attempt fails permanently as `client_certificate_expired`.
 *
 * Configurations are read per subscription and kept CONFIG_TTL_MS; a 401 or 403, or a failure of
 * the credentials themselves (token endpoint, expired certificate), reads the subscription's again
 * at once, and when it changed meanwhile (a rotation, a corrected secret) the attempt is sent again
 * with the new one: a rotation loses no delivery to the old credentials.
 */
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import type { Queryable } from "../../db/port.js";
import { isUnreadableSecretError } from "../../crypto/subscriptionSecrets.js";
import type { DeliveryOutcome, DeliveryRequest, Transport } from "../transport.js";
import { CERTIFICATE_WARNING_DAYS, openAuth, type StoredAuth } from "./config.js";
import { isRetryableTokenFailure, type Oauth2Config } from "./oauth2.js";
import { createTokenCache, type TokenCache } from "./tokenCache.js";

/** How long a relay uses a subscription's auth configuration before reading it again. */
export const CONFIG_TTL_MS = 5_000;
/** A relay notes a subscription's auth failure (for `auth.failing`, shared/authEvents.ts) at most this often per cause. */
const NOTE_EVERY_MS = 60_000;
/** …and a certificate about to expire this often. */
const NOTE_EXPIRING_EVERY_MS = 3_600_000;

export interface EndpointAuth {
  /**
   * Sends `req` for `subscriptionId` with its authentication (or none). Never throws for the endpoint's or the token endpoint's failures.
   * `subscriptionUrl`: the subscription's own URL when `req.url` is another (a transformation's):
   * a subscription with auth is then sent only to that URL's origin (its credentials go nowhere else).
   */
  deliver(subscriptionId: string, req: DeliveryRequest, subscriptionUrl?: string): Promise<DeliveryOutcome>;
}

export interface EndpointAuthOptions {
  db: Queryable;
  transport: Transport;
  logger?: Logger;
  /** Shared tokens; default: one on `db`. */
  tokens?: TokenCache;
}

export function createEndpointAuth(options: EndpointAuthOptions): EndpointAuth {
  const { db, transport } = options;
  const tokens = options.tokens ?? createTokenCache({ db, transport, logger: options.logger });
  const configs = new Map<string, { auth: StoredAuth | null; readAt: number }>();
  /** subscription + cause → when this relay last noted it. */
  const noted = new Map<string, number>();
  /** Notes a cause for `auth.failing` (never fails the attempt: a lost note only loses an alert). */
  const note = (id: string, errorClass: string, detail: string) => {
    const key = `${id} ${errorClass}`;
    const now = performance.now();
    const last = noted.get(key);
    if (last !== undefined && now - last < (errorClass === "client_certificate_expiring" ? NOTE_EXPIRING_EVERY_MS : NOTE_EVERY_MS)) return;
    if (noted.size > 10_000) noted.clear();
    noted.set(key, now);
    db.query("INSERT INTO outbound_auth_failures (subscription_id, error_class, detail) VALUES ($1, $2, $3)", [id, errorClass, detail.slice(0, 500)])
      .catch((error) => options.logger?.warn({ err: error, subscriptionId: id }, "could not note an endpoint auth failure (auth.failing)"));
  };

  const read = async (id: string): Promise<StoredAuth | null> => {
    let auth: StoredAuth | null;
    try {
      auth = (await db.query<{ auth: StoredAuth | null }>("SELECT auth FROM outbound_subscriptions WHERE id = $1", [id])).rows[0]?.auth ?? null;
    } catch (error) {
      // A database before migration 021: no subscription has auth there.
      if ((error as { code?: string }).code !== "42703") throw error;
      auth = null;
    }
    if (configs.size > 10_000) configs.clear();
    configs.set(id, { auth, readAt: performance.now() });
    return auth;
  };
  const configOf = async (id: string): Promise<StoredAuth | null> => {
    const cached = configs.get(id);
    if (cached && performance.now() - cached.readAt < CONFIG_TTL_MS) return cached.auth;
    return read(id);
  };

  const failed = (result: DeliveryOutcome["result"], errorClass: string, excerpt: string): DeliveryOutcome =>
    ({ result, status: null, latencyMs: 0, errorClass, responseExcerpt: excerpt, retryAfterSeconds: null });

  const sendWith = async (id: string, stored: StoredAuth, req: DeliveryRequest): Promise<DeliveryOutcome & { generation?: number }> => {
    let auth: StoredAuth;
    try {
      auth = openAuth(id, stored);
    } catch (error) {
      if (!isUnreadableSecretError(error)) throw error;
      // Like a signing secret that does not decrypt: not the endpoint's fault, so retried.
      return failed("retryable", "auth_secret_unreadable", (error as Error).message);
    }
    switch (auth.kind) {
      case "basic":
        return transport.deliver({ ...req, headers: { ...req.headers, authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString("base64")}` } });
      case "mtls":
        const left = Date.parse(auth.notAfter) - Date.now();
        if (left <= 0) {
          const detail = `the subscription's client certificate (${auth.subject}) expired on ${auth.notAfter}; set a new one (PATCH auth), then replay the dead letters`;
          note(id, "client_certificate_expired", detail);
          return failed("permanent", "client_certificate_expired", detail);
        }
        if (left < CERTIFICATE_WARNING_DAYS * 86_400_000) note(id, "client_certificate_expiring", `the client certificate (${auth.subject}) expires on ${auth.notAfter}`);
        return transport.deliver({ ...req, clientCertificate: { id: `${id}:${auth.version}`, cert: auth.certificate, key: auth.privateKey, ca: auth.ca } });
      case "oauth2ClientCredentials": {
        const token = await tokens.get(id, auth as Oauth2Config);
        if (!token.ok) {
          note(id, token.errorClass, token.detail);
          return failed(isRetryableTokenFailure(token.errorClass) ? "retryable" : "permanent", token.errorClass, token.detail);
        }
        const outcome = await transport.deliver({ ...req, headers: { ...req.headers, authorization: `Bearer ${token.token}` } });
        return { ...outcome, generation: token.generation };
      }
    }
  };

  return {
    async deliver(id, req, subscriptionUrl) {
      const stored = await configOf(id);
      if (!stored) return transport.deliver(req);
      const elsewhere = subscriptionUrl === undefined ? null : otherOrigin(req.url, subscriptionUrl);
      if (elsewhere) {
        // The URL came from the subscription's transformation (issue 30): credentials meant for
        // the subscription's endpoint must not follow it to another host; the transformation's fault,
        // so the failure is its (permanent, and not the endpoint's health: health.ts wasNotSent).
        return failed("permanent", "transformation_failed",
          `returned a url of another origin (${elsewhere.to}) than the subscription's (${elsewhere.own}); the subscription has endpoint auth (${stored.kind}), whose credentials are sent to its own origin only`);
      }
      const first = await sendWith(id, stored, req);
      if (!refusedOrMisconfigured(first)) return strip(first);
      // Refused, or our side failed: maybe a token revoked early, maybe the credentials were
      // corrected or rotated since they were read (a replay right after fixing a client secret).
      const current = await read(id);
      if (!current) return strip(first);
      if (current.version !== stored.version) return strip(await sendWith(id, current, req));
      if (current.kind === "oauth2ClientCredentials" && first.status === 401 && first.generation !== undefined) {
        await tokens.invalidate(id, first.generation);
        return strip(await sendWith(id, current, req));
      }
      return strip(first);
    },
  };
}

/** The origins when `url` is not of `own`'s origin (scheme, host and port; default ports normalised). */
const otherOrigin = (url: string, own: string): { to: string; own: string } | null => {
  const to = new URL(url).origin;
  const ownOrigin = new URL(own).origin;
  return to === ownOrigin ? null : { to, own: ownOrigin };
};

/** An answer or failure that newer credentials might fix. */
const refusedOrMisconfigured = (o: DeliveryOutcome): boolean =>
  o.status === 401 || o.status === 403 || (o.errorClass !== null && (o.errorClass.startsWith("auth_") || o.errorClass.startsWith("client_certificate_")));

const strip = ({ generation: _g, ...outcome }: DeliveryOutcome & { generation?: number }): DeliveryOutcome => outcome;

export { authInputSchema, prepareAuth, publicAuth, authWarnings, type StoredAuth, type PublicAuth } from "./config.js";
