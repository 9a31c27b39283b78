/**
 * `auth.failing` operational events (issue 29): a subscription's endpoint credentials failing, or
 * about to. Relays note each cause in `outbound_auth_failures` (shared/outbound/endpointAuth,
 * at most once a minute per subscription and cause, an hour for an expiring certificate); the
 * alert poller raises each noted row as an event of the platform (shared/platformEvents.ts): to
 * the operator's destinations and the subscription's own application's subscriptions naming it
 * (`auth.*`, `auth.failing`), never another application's.
 *
 * | `errorClass` | when |
 * |---|---|
 * | `auth_token_unavailable` | the OAuth 2.0 token endpoint does not answer, or answers 5xx/429 |
 * | `auth_token_rejected`, `auth_token_invalid_response`, `auth_token_destination_refused` | it refuses the client, answers no token, or its URL is refused |
 * | `client_certificate_expired` | an attempt found the mTLS certificate expired |
 * | `client_certificate_expiring` | an attempt found it within 30 days of expiry (a warning before) |
 *
 * Debounced like endpoint events: nothing is raised for a subscription and cause raised less than
 * `debounceSeconds` ago (default 300; a day for `client_certificate_expiring`). Rows are taken
 * under a skip-locked lock and marked with their event in one transaction.
 */
import type { Logger } from "pino";
import type { Database } from "./db/port.js";
import { raisePlatformEvent } from "./platformEvents.js";

export const AUTH_FAILING = "auth.failing";
const DEFAULT_DEBOUNCE_SECONDS = 300;
const EXPIRING_DEBOUNCE_SECONDS = 86_400;

interface Row { id: string; subscription_id: string; error_class: string; detail: string | null; at: Date | string; application_id: string | null; url: string | null; kind: string | null }

export interface AuthFailingEvent {
  eventId: string;
  subscriptionId: string;
  applicationId: string;
  url: string;
  kind: string | null;
  errorClass: string;
  detail: string | null;
  at: string;
}

/** One scan: raises the noted failures not handled yet (debounced); returns those raised. */
export async function scanAuthFailures(db: Database, options: { logger?: Logger; debounceSeconds?: number; limit?: number; maxPayloadBytes?: number } = {}): Promise<AuthFailingEvent[]> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<Row>(
      `SELECT f.id::text AS id, f.subscription_id, f.error_class, f.detail, f.at, s.application_id, s.url, s.auth ->> 'kind' AS kind
       FROM outbound_auth_failures f
       LEFT JOIN outbound_subscriptions s ON s.id = f.subscription_id AND s.deleted_at IS NULL
       WHERE f.handled_at IS NULL
       ORDER BY f.id
       LIMIT $1
       FOR UPDATE OF f SKIP LOCKED`,
      [options.limit ?? 100],
    );
    const raised: AuthFailingEvent[] = [];
    for (const row of rows) {
      let eventId: string | null = null;
      if (row.application_id) {
        const window = row.error_class === "client_certificate_expiring" ? EXPIRING_DEBOUNCE_SECONDS : options.debounceSeconds ?? DEFAULT_DEBOUNCE_SECONDS;
        const recent = await tx.query(
          `SELECT 1 FROM outbound_auth_failures
           WHERE subscription_id = $1 AND error_class = $2 AND event_id IS NOT NULL AND id <> $3::bigint
             AND at > $4::timestamptz - make_interval(secs => $5::float8)
           LIMIT 1`,
          [row.subscription_id, row.error_class, row.id, row.at, window],
        );
        if (recent.rows.length === 0) {
          const event: AuthFailingEvent = {
            eventId: `auth-failing-${row.id}`, subscriptionId: row.subscription_id, applicationId: row.application_id, url: row.url ?? "",
            kind: row.kind, errorClass: row.error_class, detail: row.detail, at: new Date(row.at).toISOString(),
          };
          const { eventId: id, ...data } = event;
          if (await raisePlatformEvent(tx, { id, type: AUTH_FAILING, data, applicationId: row.application_id }, { maxPayloadBytes: options.maxPayloadBytes })) {
            eventId = id;
            raised.push(event);
            options.logger?.warn({ event: AUTH_FAILING, eventId: id, subscriptionId: row.subscription_id, applicationId: row.application_id, errorClass: row.error_class }, `operational event ${AUTH_FAILING}`);
          }
        }
      }
      await tx.query("UPDATE outbound_auth_failures SET handled_at = now(), event_id = $2 WHERE id = $1::bigint", [row.id, eventId]);
    }
    return raised;
  });
}
