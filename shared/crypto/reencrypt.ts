/**
 * The re-encryption pass: rewrites every stored secret that is not under the keyring's primary
 * key (plaintext rows from before secrets were encrypted, and values under an older key after a
 * rotation), in small batches, while relays keep delivering. Each row is rewritten only if it has
 * not changed since it was read (a concurrent rotation or edit wins; the next pass looks again),
 * so the pass never loses a secret written meanwhile. A relay holding a delivery whose secrets it
 * read before the rewrite still decrypts them: the old key stays in ENCRYPTION_KEYS until a pass
 * reports nothing left under it (docs/secrets.md, rotation).
 *
 * It runs with the relay's periodic work (locally every few minutes and at start; in the cloud at
 * each scheduled relay run) and from `reencryptSecrets` directly.
 */
import type { Queryable } from "../db/port.js";
import { activeKeyring } from "./activeKeyring.js";
import { seal } from "./envelope.js";
import type { Keyring } from "./keyring.js";
import { headerWhere, isUnreadableSecretError, openHeaders, openSecrets, openValue, secretsWhere } from "./subscriptionSecrets.js";
import { authWhere, SECRET_FIELD, type StoredAuth } from "../outbound/endpointAuth/config.js";
import { destinationWhere, type StoredDestination } from "../outbound/destinations/config.js";

export interface ReencryptResult {
  /** Rows rewritten under the primary key. */
  rewritten: number;
  /** Rows that changed between read and write (left for the next pass). */
  skipped: number;
  /** Rows whose values do not decrypt here, with why (a missing key id is named). */
  unreadable: { id: string; error: string }[];
}

export interface ReencryptOptions {
  /** Rows read per statement. Default: 100. */
  batchSize?: number;
  /** Checked between batches: stop early (a relay shutting down). */
  shouldStop?: () => boolean;
  /** Default: the active keyring. */
  keyring?: Keyring;
}

interface Row {
  id: string;
  secrets: string[];
  headers: Record<string, string> | null;
  /** Endpoint authentication (migration 021): its one secret part is sealed (endpointAuth/config.ts). */
  auth: StoredAuth | null;
  /** A queue destination (migration 025): the secret parts of its credentials under `sealed` (destinations/config.ts). */
  destination: StoredDestination | null;
}

/** The secret part of `auth` (its field depends on the kind), in SQL. */
const AUTH_SECRET_SQL = `auth ->> (CASE auth ->> 'kind' ${Object.entries(SECRET_FIELD).map(([k, f]) => `WHEN '${k}' THEN '${f}'`).join(" ")} END)`;

/** Rows (deleted ones too: they still hold secrets) with a value not under `$1` (the primary's envelope prefix). */
const STALE_ROWS = `SELECT id, secrets, headers, auth, destination FROM outbound_subscriptions
   WHERE id > $2
     AND (EXISTS (SELECT 1 FROM unnest(secrets) AS s(v) WHERE NOT starts_with(s.v, $1))
          OR EXISTS (SELECT 1 FROM jsonb_each_text(headers) AS h(k, v) WHERE NOT starts_with(h.v, $1))
          OR (auth IS NOT NULL AND NOT starts_with(${AUTH_SECRET_SQL}, $1))
          OR EXISTS (SELECT 1 FROM jsonb_each_text(destination -> 'sealed') AS d(k, v) WHERE NOT starts_with(d.v, $1)))
   ORDER BY id
   LIMIT $3`;

/** Rewrites every stale row (see the module comment); returns what it did. */
export async function reencryptSecrets(q: Queryable, options: ReencryptOptions = {}): Promise<ReencryptResult> {
  const keyring = options.keyring ?? activeKeyring();
  const prefix = `enc.v1.${keyring.primary.id}.`;
  const batchSize = options.batchSize ?? 100;
  const result: ReencryptResult = { rewritten: 0, skipped: 0, unreadable: [] };
  let after = "";
  for (;;) {
    if (options.shouldStop?.()) break;
    const { rows } = await q.query<Row>(STALE_ROWS, [prefix, after, batchSize]);
    for (const row of rows) {
      let secrets: string[];
      let headers: Record<string, string>;
      let auth: StoredAuth | null = null;
      let destination: StoredDestination | null = null;
      try {
        secrets = openSecrets(row.id, row.secrets).map((s) => seal(keyring, s, secretsWhere(row.id)));
        headers = Object.fromEntries(Object.entries(openHeaders(row.id, row.headers)).map(([k, v]) => [k, seal(keyring, v, headerWhere(row.id, k))]));
        if (row.auth) {
          const field = SECRET_FIELD[row.auth.kind];
          const where = authWhere(row.id, field);
          auth = { ...row.auth, [field]: seal(keyring, openValue((row.auth as unknown as Record<string, string>)[field]!, where), where) } as StoredAuth;
        }
        if (row.destination) {
          const sealed = Object.fromEntries(Object.entries(row.destination.sealed ?? {}).map(([field, value]) => {
            const where = destinationWhere(row.id, field);
            return [field, seal(keyring, openValue(value, where), where)];
          }));
          destination = { ...row.destination, sealed };
        }
      } catch (error) {
        if (!isUnreadableSecretError(error)) throw error;
        result.unreadable.push({ id: row.id, error: (error as Error).message });
        continue;
      }
      // Guarded by the values read: a row changed meanwhile is left as it is (the writer sealed it).
      const { rowCount } = await q.query(
        `UPDATE outbound_subscriptions SET secrets = $2::text[], headers = $3::jsonb, auth = $6::jsonb, destination = $8::jsonb
         WHERE id = $1 AND secrets = $4::text[] AND headers IS NOT DISTINCT FROM $5::jsonb AND auth IS NOT DISTINCT FROM $7::jsonb
           AND destination IS NOT DISTINCT FROM $9::jsonb`,
        [row.id, secrets, JSON.stringify(headers), row.secrets, row.headers === null ? null : JSON.stringify(row.headers),
          auth === null ? null : JSON.stringify(auth), row.auth === null ? null : JSON.stringify(row.auth),
          destination === null ? null : JSON.stringify(destination), row.destination === null ? null : JSON.stringify(row.destination)],
      );
      if ((rowCount ?? 0) > 0) result.rewritten += 1;
      else result.skipped += 1;
    }
    if (rows.length < batchSize) break;
    after = rows[rows.length - 1]!.id;
  }
  // Cached OAuth 2.0 tokens under another key are dropped, not rewritten: a new one is a fetch away.
  if (!options.shouldStop?.()) await q.query("DELETE FROM outbound_auth_tokens WHERE token IS NOT NULL AND NOT starts_with(token, $1)", [prefix]);
  return result;
}

/** How many stored values are under each key id (`plaintext` for none): what a rotation still waits for. */
export async function secretsByKey(q: Queryable): Promise<Record<string, number>> {
  const { rows } = await q.query<{ key: string; n: string }>(
    `SELECT CASE WHEN starts_with(v, 'enc.v1.') THEN split_part(v, '.', 3) ELSE 'plaintext' END AS key, count(*) AS n
     FROM (SELECT s.v FROM outbound_subscriptions, unnest(secrets) AS s(v)
           UNION ALL
           SELECT h.v FROM outbound_subscriptions, jsonb_each_text(headers) AS h(k, v)
           UNION ALL
           SELECT ${AUTH_SECRET_SQL} FROM outbound_subscriptions WHERE auth IS NOT NULL
           UNION ALL
           SELECT d.v FROM outbound_subscriptions, jsonb_each_text(destination -> 'sealed') AS d(k, v)
           UNION ALL
           SELECT token FROM outbound_auth_tokens WHERE token IS NOT NULL) AS stored
     GROUP BY 1`,
  );
  return Object.fromEntries(rows.map((r) => [r.key, Number(r.n)]));
}
