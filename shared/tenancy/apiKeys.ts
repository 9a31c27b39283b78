/**
 * API keys of the management API: several, each with a scope, created and revoked at run time.
 *
 * A key is `whk_<16 hex id>_<43 characters: 32 random bytes, base64url>`. The id is its visible,
 * public part (listed, logged, recorded in the audit log); only the SHA-256 of the whole key is
 * stored, and the key is shown once, in the answer that creates it. A fast hash is right here,
 * unlike for passwords: a slow hash (bcrypt, scrypt, argon2) exists to make guessing a
 * low-entropy secret expensive, and 256 random bits cannot be guessed at any speed, so it would
 * only add ~100 ms to every request. Comparison of the digests is constant-time.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import * as z from "zod/mini";
import type { Queryable } from "../db/port.js";
import { NotFoundError, OutboundValidationError } from "../outbound/errors.js";
import { parseOrThrow } from "../outbound/validation.js";
import { PLATFORM_APPLICATION_ID } from "./defaults.js";

/** What a key may do: `write` also changes things; `read` only reads. */
export type KeyAccess = "write" | "read";

export interface ApiKey {
  id: string;
  /** null: an operator key (every application); else the one application it sees. */
  applicationId: string | null;
  access: KeyAccess;
  description: string | null;
  createdBy: string;
  createdAt: Date;
  revokedAt: Date | null;
  revokedBy: string | null;
}

/** Who a valid key acts for. */
export interface KeyIdentity {
  keyId: string;
  applicationId: string | null;
  access: KeyAccess;
}

// The anchors keep junk from reaching the database; dropping one (a mutant) is equivalent in
// outcome, since the SHA-256 compared is of the whole token, so a token with text around a key fails.
const KEY_FORMAT = /^whk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

export const apiKeyInputSchema = z.strictObject({
  /** Omitted or null: an operator key. */
  applicationId: z.optional(z.nullable(z.string().check(z.minLength(1), z.maxLength(200)))),
  /** Default: write. */
  access: z.optional(z.enum(["write", "read"])),
  description: z.optional(z.string().check(z.maxLength(500))),
});

function sha256(text: string): Buffer {
  // Stryker disable next-line StringLiteral: equivalent: Buffer.from reads a string as UTF-8 when the encoding is empty
  const bytes = Buffer.from(text, "utf8");
  return createHash("sha256").update(bytes).digest();
}

interface Row {
  id: string;
  application_id: string | null;
  access: KeyAccess;
  description: string | null;
  created_by: string;
  created_at: Date;
  revoked_at: Date | null;
  revoked_by: string | null;
}
const COLUMNS = "id, application_id, access, description, created_by, created_at, revoked_at, revoked_by";
const toKey = (r: Row): ApiKey => ({
  id: r.id, applicationId: r.application_id, access: r.access, description: r.description,
  createdBy: r.created_by, createdAt: r.created_at, revokedAt: r.revoked_at, revokedBy: r.revoked_by,
});

/**
 * Creates a key; the answer carries `key`, the only time it is shown. An application key names a
 * live application (NotFoundError otherwise), never the platform's own (operator-only: its
 * resources are no tenant's, docs/tenancy.md#operator-only).
 * @example
 * const { key } = await createApiKey(db, { applicationId: "app_…", access: "read" }, { createdBy: "bootstrap" });
 */
export async function createApiKey(q: Queryable, input: unknown, options: { createdBy: string }): Promise<ApiKey & { key: string }> {
  const valid = parseOrThrow(apiKeyInputSchema, input ?? {}, "API key");
  const hexId = randomBytes(8).toString("hex");
  const key = `whk_${hexId}_${randomBytes(32).toString("base64url")}`;
  const id = `key_${hexId}`;
  const applicationId = valid.applicationId ?? null;
  if (applicationId === PLATFORM_APPLICATION_ID) {
    throw new OutboundValidationError(
      `Invalid API key: applicationId: ${PLATFORM_APPLICATION_ID} holds the platform's own resources (alerts, forwarding) and is operator-only; create an operator key (no applicationId) instead.`,
      [{ path: "applicationId", message: "operator-only application" }],
    );
  }
  const { rows } = await q.query<Row>(
    `INSERT INTO management_api_keys (id, secret_sha256, access, application_id, description, created_by)
     SELECT $1, $2, $3, $4, $5, $6
     WHERE $4::text IS NULL OR EXISTS (SELECT 1 FROM outbound_applications WHERE id = $4 AND deleted_at IS NULL)
     RETURNING ${COLUMNS}`,
    [id, sha256(key), valid.access ?? "write", applicationId, valid.description ?? null, options.createdBy],
  );
  if (!rows[0]) throw new NotFoundError("application", applicationId!);
  return { ...toKey(rows[0]), key };
}

/** Keys in id order, revoked ones included unless `active`; `after` is the last id of the previous page. */
export async function listApiKeys(q: Queryable, options: { limit?: number; after?: string; applicationId?: string; active?: boolean } = {}): Promise<ApiKey[]> {
  const { rows } = await q.query<Row>(
    `SELECT ${COLUMNS} FROM management_api_keys
     WHERE ($1::text IS NULL OR id > $1) AND ($3::text IS NULL OR application_id = $3) AND ($4::boolean IS NOT TRUE OR revoked_at IS NULL)
     ORDER BY id LIMIT $2`,
    [options.after ?? null, options.limit ?? 100, options.applicationId ?? null, options.active ?? null],
  );
  return rows.map(toKey);
}

/** Revokes a key at once (the next request with it is a 401); NotFoundError if it is unknown or revoked already. */
export async function revokeApiKey(q: Queryable, id: string, options: { revokedBy: string }): Promise<ApiKey> {
  const { rows } = await q.query<Row>(
    `UPDATE management_api_keys SET revoked_at = now(), revoked_by = $2 WHERE id = $1 AND revoked_at IS NULL RETURNING ${COLUMNS}`,
    [id, options.revokedBy],
  );
  if (!rows[0]) throw new NotFoundError("API key", id);
  return toKey(rows[0]);
}

/**
 * Who `token` is, if it is a live key: looked up by its id, its SHA-256 compared in constant time.
 * A key of a deleted application is not live (deleting revokes them too; checked here as well).
 * Read on every request, so a revocation takes effect at once, on every server and function.
 */
export async function identifyKey(q: Queryable, token: string): Promise<KeyIdentity | undefined> {
  const match = KEY_FORMAT.exec(token);
  if (!match) return undefined;
  const { rows } = await q.query<{ id: string; secret_sha256: Buffer | Uint8Array; application_id: string | null; access: KeyAccess }>(
    `SELECT k.id, k.secret_sha256, k.application_id, k.access FROM management_api_keys k
     WHERE k.id = $1 AND k.revoked_at IS NULL
       AND (k.application_id IS NULL OR EXISTS (SELECT 1 FROM outbound_applications a WHERE a.id = k.application_id AND a.deleted_at IS NULL))`,
    [`key_${match[1]}`],
  );
  const row = rows[0];
  if (!row) return undefined;
  const stored = Buffer.from(row.secret_sha256);
  const given = sha256(token);
  if (stored.length !== given.length || !timingSafeEqual(stored, given)) return undefined;
  return { keyId: row.id, applicationId: row.application_id, access: row.access };
}
