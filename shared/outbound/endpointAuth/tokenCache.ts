/**
 * OAuth 2.0 access tokens shared by every relay on one database (`outbound_auth_tokens`, migration
 * 021), so N relays fetch one token per expiry rather than one each, and a token endpoint that is
 * down is asked a few times, not once per delivery.
 *
 * - Each relay keeps the token in memory until its refresh time; only then it reads the row.
 * - A fetch is taken under a lease on the row (`fetching_until`, an UPDATE … WHERE no lease or an
 *   expired one): the relay that wins asks the token endpoint; the others poll the row until the
 *   token (or the failure) is there. No transaction is held across the HTTP request (PGlite has
 *   one connection; PostgreSQL's would sit idle in transaction). A relay dying mid-fetch loses
 *   only its lease, which runs out.
 * - A 401 from the endpoint invalidates the token by its `generation`: of several relays told 401
 *   for the same token, the first invalidates it, and all use the one token fetched next.
 * - A failure is kept on the row for FAILURE_HOLD_SECONDS (retryable) or PERMANENT_HOLD_SECONDS
 *   (a misconfiguration), for this configuration version only: a corrected client secret is a new
 *   version and is tried at once.
 * The token is sealed at rest like a secret (`outbound_auth_tokens.token:<subscription id>`).
 */
import type { Logger } from "pino";
import type { Queryable } from "../../db/port.js";
import { activeKeyring } from "../../crypto/activeKeyring.js";
import { seal } from "../../crypto/envelope.js";
import { isUnreadableSecretError, openValue } from "../../crypto/subscriptionSecrets.js";
import type { Transport } from "../transport.js";
import { refreshInSeconds, requestToken, type Oauth2Config, type TokenFailureClass } from "./oauth2.js";

export const tokenWhere = (subscriptionId: string): string => `outbound_auth_tokens.token:${subscriptionId}`;

/** How long a token endpoint's retryable failure is reused before it is asked again. */
export const FAILURE_HOLD_SECONDS = 5;
/** How long a rejection (wrong secret, unknown client) is reused for the same configuration. */
export const PERMANENT_HOLD_SECONDS = 30;
/** How often a relay waiting for another's fetch reads the row. */
const WAIT_POLL_MS = 25;

export type TokenLookup =
  | { ok: true; token: string; generation: number }
  | { ok: false; errorClass: TokenFailureClass; retryable: boolean; detail: string };

export interface TokenCache {
  /** A token for the subscription's current configuration: from memory, the row, or the token endpoint. */
  get(subscriptionId: string, config: Oauth2Config): Promise<TokenLookup>;
  /** The endpoint answered 401 to the token of `generation`: the next `get` fetches a new one (once, whoever asks). */
  invalidate(subscriptionId: string, generation: number): Promise<void>;
}

interface Row {
  auth_version: string;
  generation: string;
  token: string | null;
  /** Seconds until refresh_at (negative: past), on the database's clock. */
  refresh_in: number | null;
  failed_in: number | null;
  failure_class: string | null;
  failure: string | null;
  fetching: boolean;
}

export interface TokenCacheOptions {
  db: Queryable;
  transport: Transport;
  logger?: Logger;
  /** Deadline of a token request, ms. Default: the transport's. */
  timeoutMs?: number;
  /** How long a failure is reused: retryable ones, rejections. Default: FAILURE_HOLD_SECONDS, PERMANENT_HOLD_SECONDS. */
  failureHoldSeconds?: { retryable: number; permanent: number };
  /** Called after each token request this relay made (tests, metrics). */
  onFetch?: (subscriptionId: string, ok: boolean) => void;
}

export function createTokenCache(options: TokenCacheOptions): TokenCache {
  const { db, transport, logger } = options;
  /** subscription → the token this relay uses until `refreshAt` (its own clock). */
  const memory = new Map<string, { version: string; token: string; generation: number; refreshAt: number }>();
  /** One lookup per subscription at a time in this process. */
  const pending = new Map<string, Promise<TokenLookup>>();
  const leaseSeconds = Math.ceil((options.timeoutMs ?? 10_000) / 1000) + 5;

  const read = async (id: string): Promise<Row | undefined> => (await db.query<Row>(
    `SELECT auth_version, generation::text AS generation, token,
            extract(epoch FROM refresh_at - now())::float8 AS refresh_in,
            extract(epoch FROM failed_until - now())::float8 AS failed_in,
            failure_class, failure, COALESCE(fetching_until > now(), false) AS fetching
     FROM outbound_auth_tokens WHERE subscription_id = $1`,
    [id],
  )).rows[0];

  /** The row's token if it is usable for `version` (null: fetch one). */
  const usable = (id: string, version: string, row: Row | undefined): TokenLookup | null => {
    if (!row || row.auth_version !== version) return null;
    if (row.token && (row.refresh_in ?? 0) > 0) {
      let token: string;
      try {
        token = openValue(row.token, tokenWhere(id));
      } catch (error) {
        if (!isUnreadableSecretError(error)) throw error;
        return null; // under a key this process lacks: a new token is cheaper than waiting
      }
      const generation = Number(row.generation);
      memory.set(id, { version, token, generation, refreshAt: Date.now() + row.refresh_in! * 1000 });
      return { ok: true, token, generation };
    }
    if (row.failure_class && (row.failed_in ?? 0) > 0) {
      return { ok: false, errorClass: row.failure_class as TokenFailureClass, retryable: row.failure_class === "auth_token_unavailable", detail: row.failure ?? row.failure_class };
    }
    return null;
  };

  /** Takes the fetch lease for `version` unless a usable token or failure is there or another relay fetches. */
  const takeLease = async (id: string, version: string): Promise<boolean> => {
    const { rows } = await db.query(
      `INSERT INTO outbound_auth_tokens (subscription_id, auth_version, fetching_until) VALUES ($1, $2, now() + make_interval(secs => $3))
       ON CONFLICT (subscription_id) DO UPDATE
         SET fetching_until = EXCLUDED.fetching_until, auth_version = EXCLUDED.auth_version,
             -- another configuration's token and failure mean nothing for this one
             token = CASE WHEN outbound_auth_tokens.auth_version = EXCLUDED.auth_version THEN outbound_auth_tokens.token END,
             failed_until = CASE WHEN outbound_auth_tokens.auth_version = EXCLUDED.auth_version THEN outbound_auth_tokens.failed_until END,
             updated_at = now()
         WHERE (outbound_auth_tokens.fetching_until IS NULL OR outbound_auth_tokens.fetching_until <= now())
           -- (COALESCE: a NULL refresh_at or failed_until means "none", not "unknown")
           AND NOT (outbound_auth_tokens.auth_version = EXCLUDED.auth_version AND outbound_auth_tokens.token IS NOT NULL AND COALESCE(outbound_auth_tokens.refresh_at > now(), false))
           AND NOT (outbound_auth_tokens.auth_version = EXCLUDED.auth_version AND COALESCE(outbound_auth_tokens.failed_until > now(), false))
       RETURNING 1`,
      [id, version, leaseSeconds],
    );
    return rows.length > 0;
  };

  const fetchAndStore = async (id: string, config: Oauth2Config): Promise<TokenLookup> => {
    const result = await requestToken(transport, config, options.timeoutMs);
    options.onFetch?.(id, result.ok);
    if (result.ok) {
      const refreshIn = refreshInSeconds(result.expiresIn);
      const { rows } = await db.query<{ generation: string }>(
        `UPDATE outbound_auth_tokens
         SET token = $3, generation = generation + 1, expires_at = now() + make_interval(secs => $4), refresh_at = now() + make_interval(secs => $5),
             fetching_until = NULL, failed_until = NULL, failure_class = NULL, failure = NULL, updated_at = now()
         WHERE subscription_id = $1 AND auth_version = $2
         RETURNING generation::text AS generation`,
        [id, config.version, seal(activeKeyring(), result.token, tokenWhere(id)), result.expiresIn ?? refreshIn, refreshIn],
      );
      const generation = Number(rows[0]?.generation ?? 0);
      memory.set(id, { version: config.version, token: result.token, generation, refreshAt: Date.now() + refreshIn * 1000 });
      return { ok: true, token: result.token, generation };
    }
    const holds = options.failureHoldSeconds ?? { retryable: FAILURE_HOLD_SECONDS, permanent: PERMANENT_HOLD_SECONDS };
    const hold = result.retryable ? holds.retryable : holds.permanent;
    logger?.warn({ subscriptionId: id, errorClass: result.errorClass, detail: result.detail }, "OAuth 2.0 token request failed");
    await db.query(
      `UPDATE outbound_auth_tokens SET fetching_until = NULL, failed_until = now() + make_interval(secs => $3), failure_class = $4, failure = $5, updated_at = now()
       WHERE subscription_id = $1 AND auth_version = $2`,
      [id, config.version, hold, result.errorClass, result.detail],
    );
    return result;
  };

  const lookup = async (id: string, config: Oauth2Config): Promise<TokenLookup> => {
    const deadline = Date.now() + leaseSeconds * 1000 * 2;
    for (;;) {
      const found = usable(id, config.version, await read(id));
      if (found) return found;
      if (await takeLease(id, config.version)) {
        try {
          return await fetchAndStore(id, config);
        } catch (error) {
          // The database failed around the fetch: give the lease back so another relay may try.
          await db.query("UPDATE outbound_auth_tokens SET fetching_until = NULL WHERE subscription_id = $1", [id]).catch(() => {});
          throw error;
        }
      }
      if (Date.now() > deadline) {
        return { ok: false, errorClass: "auth_token_unavailable", retryable: true, detail: "waited too long for another relay's token request" };
      }
      await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
    }
  };

  return {
    async get(id, config) {
      const held = memory.get(id);
      if (held && held.version === config.version && Date.now() < held.refreshAt) return { ok: true, token: held.token, generation: held.generation };
      let p = pending.get(id);
      if (!p) {
        p = lookup(id, config).finally(() => pending.delete(id));
        pending.set(id, p);
      }
      return p;
    },
    async invalidate(id, generation) {
      const held = memory.get(id);
      if (held?.generation === generation) memory.delete(id);
      await db.query(
        "UPDATE outbound_auth_tokens SET token = NULL, refresh_at = NULL, updated_at = now() WHERE subscription_id = $1 AND generation = $2",
        [id, generation],
      );
    },
  };
}
