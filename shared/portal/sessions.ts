/**
 * Portal links and the sessions they open (issue 32, docs/portal.md).
 *
 * An operator makes a link for one application (`read` or `write`, a lifetime in minutes, an
 * optional return URL). Its token, `whpl_<16 hex id>_<43 characters>`, is shown once; only its
 * SHA-256 is stored (as for API keys: 256 random bits need no slow hash). The portal exchanges it,
 * once, for a session: `whps_<16 hex id>_<43 characters>`, carried by an HttpOnly cookie, scoped to
 * the link's application and access, ending when the link would have expired. The exchange marks
 * the link used in the same transaction, so a second exchange of the same token (a reused link, a
 * leaked browser history) opens nothing. Revoking a link ends its session; a session can be ended
 * by its id too. A session acts as an application key does (shared/tenancy/access.ts), its id the
 * actor the audit log records.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import * as z from "zod/mini";
import type { Database, Queryable } from "../db/port.js";
import { NotFoundError, OutboundValidationError } from "../outbound/errors.js";
import { parseOrThrow } from "../outbound/validation.js";
import { PLATFORM_APPLICATION_ID } from "../tenancy/defaults.js";

export type PortalAccess = "read" | "write";

/** The longest a link (and so its session) may live: a day. A customer needing more gets a new link. */
export const MAX_LINK_MINUTES = 24 * 60;
export const DEFAULT_LINK_MINUTES = 60;

const LINK_FORMAT = /^whpl_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;
const SESSION_FORMAT = /^whps_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

/** A return URL: where the portal's "back" link and its end lead. http(s) only, no credentials. */
const returnUrl = z.string().check(
  z.maxLength(2000, "at most 2000 characters"),
  z.refine((s: string) => {
    try {
      const u = new URL(s);
      return (u.protocol === "https:" || u.protocol === "http:") && !u.username && !u.password;
    } catch {
      return false;
    }
  }, "use an absolute http(s) URL without credentials, e.g. https://app.example.com/settings/webhooks"),
);

export const portalLinkInputSchema = z.strictObject({
  /** `read` shows; `write` also creates, edits, rotates, replays. Default: read. */
  access: z.optional(z.enum(["read", "write"])),
  /** How long the link may be opened, and how long the session it opens lasts. Default: 60. */
  expiresInMinutes: z.optional(z.number().check(z.int("whole minutes"), z.gte(1, "at least 1 minute"), z.lte(MAX_LINK_MINUTES, `at most ${MAX_LINK_MINUTES} minutes (a day)`))),
  returnUrl: z.optional(z.nullable(returnUrl)),
});

export interface PortalSessionInfo {
  id: string;
  createdAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
  revokedBy: string | null;
}

export interface PortalLink {
  id: string;
  applicationId: string;
  access: PortalAccess;
  returnUrl: string | null;
  expiresAt: Date;
  createdBy: string;
  createdAt: Date;
  usedAt: Date | null;
  revokedAt: Date | null;
  revokedBy: string | null;
  /** The session it opened, once used. */
  session: PortalSessionInfo | null;
}

/** Who a live session cookie is. */
export interface PortalSessionIdentity {
  sessionId: string;
  linkId: string;
  applicationId: string;
  access: PortalAccess;
  expiresAt: Date;
  returnUrl: string | null;
}

/** Why a link opened nothing: said to the customer, so they ask for a new one. */
export class PortalLinkRefusedError extends Error {
  override name = "PortalLinkRefusedError";
  constructor(readonly reason: "invalid" | "used" | "expired" | "revoked", message: string) {
    super(message);
  }
}

const sha256 = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest();

function sameDigest(stored: Buffer | Uint8Array, token: string): boolean {
  const a = Buffer.from(stored);
  const b = sha256(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The CSRF token of a session: derived from its cookie (HMAC-SHA256), so nothing more is stored
 * and only a page that read it from `GET /portal/session` (same origin) can send it back.
 */
export function csrfTokenFor(sessionToken: string): string {
  return createHmac("sha256", sessionToken).update("portal-csrf-v1").digest("base64url");
}

interface LinkRow {
  id: string; application_id: string; access: PortalAccess; return_url: string | null; expires_at: Date; created_by: string; created_at: Date;
  used_at: Date | null; revoked_at: Date | null; revoked_by: string | null;
  session_id: string | null; session_created_at: Date | null; session_expires_at: Date | null; session_revoked_at: Date | null; session_revoked_by: string | null;
}

const LINK_SELECT = `SELECT l.id, l.application_id, l.access, l.return_url, l.expires_at, l.created_by, l.created_at, l.used_at, l.revoked_at, l.revoked_by,
         s.id AS session_id, s.created_at AS session_created_at, s.expires_at AS session_expires_at, s.revoked_at AS session_revoked_at, s.revoked_by AS session_revoked_by
  FROM portal_links l LEFT JOIN portal_sessions s ON s.link_id = l.id`;

const toLink = (r: LinkRow): PortalLink => ({
  id: r.id, applicationId: r.application_id, access: r.access, returnUrl: r.return_url, expiresAt: r.expires_at, createdBy: r.created_by, createdAt: r.created_at,
  usedAt: r.used_at, revokedAt: r.revoked_at, revokedBy: r.revoked_by,
  session: r.session_id ? { id: r.session_id, createdAt: r.session_created_at!, expiresAt: r.session_expires_at!, revokedAt: r.session_revoked_at, revokedBy: r.session_revoked_by } : null,
});

/**
 * Makes a link for `applicationId` (a live application, never the platform's own); the answer
 * carries `token`, the only time it is shown.
 */
export async function createPortalLink(q: Queryable, applicationId: string, input: unknown, options: { createdBy: string }): Promise<PortalLink & { token: string }> {
  const valid = parseOrThrow(portalLinkInputSchema, input ?? {}, "portal link");
  if (applicationId === PLATFORM_APPLICATION_ID) {
    throw new OutboundValidationError(`Invalid portal link: ${PLATFORM_APPLICATION_ID} holds the platform's own resources and is operator-only; make links for your customers' applications.`, [{ path: "applicationId", message: "operator-only application" }]);
  }
  const hex = randomBytes(8).toString("hex");
  const token = `whpl_${hex}_${randomBytes(32).toString("base64url")}`;
  const id = `pl_${hex}`;
  const { rows } = await q.query<{ id: string }>(
    `INSERT INTO portal_links (id, token_sha256, application_id, access, return_url, expires_at, created_by)
     SELECT $1, $2, $3, $4, $5, now() + $6::int * interval '1 minute', $7
     WHERE EXISTS (SELECT 1 FROM outbound_applications WHERE id = $3 AND deleted_at IS NULL)
     RETURNING id`,
    [id, sha256(token), applicationId, valid.access ?? "read", valid.returnUrl ?? null, valid.expiresInMinutes ?? DEFAULT_LINK_MINUTES, options.createdBy],
  );
  if (!rows[0]) throw new NotFoundError("application", applicationId);
  return { ...(await getPortalLink(q, id)), token };
}

export async function getPortalLink(q: Queryable, id: string): Promise<PortalLink> {
  const { rows } = await q.query<LinkRow>(`${LINK_SELECT} WHERE l.id = $1`, [id]);
  if (!rows[0]) throw new NotFoundError("portal link", id);
  return toLink(rows[0]);
}

/** An application's links, newest first; `before` is the last id of the previous page. */
export async function listPortalLinks(q: Queryable, applicationId: string, options: { limit?: number; before?: { createdAt: string; id: string } } = {}): Promise<PortalLink[]> {
  const { rows } = await q.query<LinkRow>(
    `${LINK_SELECT}
     WHERE l.application_id = $1 AND ($2::timestamptz IS NULL OR (l.created_at, l.id) < ($2::timestamptz, $3::text))
     ORDER BY l.created_at DESC, l.id DESC LIMIT $4`,
    [applicationId, options.before?.createdAt ?? null, options.before?.id ?? null, options.limit ?? 100],
  );
  return rows.map(toLink);
}

/**
 * Exchanges a link's token for a session, once. Refused (PortalLinkRefusedError) when the token is
 * no link's, or the link was used, revoked or has expired, or its application was deleted.
 */
export async function openPortalSession(db: Database, token: string): Promise<{ session: PortalSessionIdentity; token: string }> {
  const invalid = () => new PortalLinkRefusedError("invalid", "This is not a valid portal link. Ask whoever gave it to you for a new one.");
  const match = LINK_FORMAT.exec(token);
  if (!match) throw invalid();
  const id = `pl_${match[1]}`;
  return db.transaction(async (tx) => {
    // Locked: two exchanges of one token at once open one session; the second sees it used.
    const { rows } = await tx.query<{ token_sha256: Buffer | Uint8Array; application_id: string; access: PortalAccess; return_url: string | null; expires_at: Date; used_at: Date | null; revoked_at: Date | null; expired: boolean; live_app: boolean }>(
      `SELECT l.token_sha256, l.application_id, l.access, l.return_url, l.expires_at, l.used_at, l.revoked_at, l.expires_at <= now() AS expired,
              EXISTS (SELECT 1 FROM outbound_applications a WHERE a.id = l.application_id AND a.deleted_at IS NULL) AS live_app
       FROM portal_links l WHERE l.id = $1 FOR UPDATE`,
      [id],
    );
    const link = rows[0];
    if (!link || !sameDigest(link.token_sha256, token) || !link.live_app) throw invalid();
    if (link.revoked_at) throw new PortalLinkRefusedError("revoked", "This portal link was revoked. Ask for a new one.");
    if (link.used_at) throw new PortalLinkRefusedError("used", "This portal link was used already: each link opens the portal once. Ask for a new one.");
    if (link.expired) throw new PortalLinkRefusedError("expired", "This portal link has expired. Ask for a new one.");
    const hex = randomBytes(8).toString("hex");
    const sessionToken = `whps_${hex}_${randomBytes(32).toString("base64url")}`;
    const sessionId = `ps_${hex}`;
    await tx.query("UPDATE portal_links SET used_at = now() WHERE id = $1", [id]);
    await tx.query(
      `INSERT INTO portal_sessions (id, secret_sha256, link_id, application_id, access, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
      [sessionId, sha256(sessionToken), id, link.application_id, link.access, link.expires_at],
    );
    return {
      token: sessionToken,
      session: { sessionId, linkId: id, applicationId: link.application_id, access: link.access, expiresAt: link.expires_at, returnUrl: link.return_url },
    };
  });
}

/**
 * Who a session cookie is, if it is a live session (not revoked, not expired, its application not
 * deleted). Read on every request, so a revocation counts at once on every server and function.
 */
export async function identifyPortalSession(q: Queryable, token: string): Promise<PortalSessionIdentity | undefined> {
  const match = SESSION_FORMAT.exec(token);
  if (!match) return undefined;
  const { rows } = await q.query<{ id: string; secret_sha256: Buffer | Uint8Array; link_id: string; application_id: string; access: PortalAccess; expires_at: Date; return_url: string | null }>(
    `SELECT s.id, s.secret_sha256, s.link_id, s.application_id, s.access, s.expires_at, l.return_url
     FROM portal_sessions s JOIN portal_links l ON l.id = s.link_id
     WHERE s.id = $1 AND s.revoked_at IS NULL AND s.expires_at > now()
       AND EXISTS (SELECT 1 FROM outbound_applications a WHERE a.id = s.application_id AND a.deleted_at IS NULL)`,
    [`ps_${match[1]}`],
  );
  const row = rows[0];
  if (!row || !sameDigest(row.secret_sha256, token)) return undefined;
  return { sessionId: row.id, linkId: row.link_id, applicationId: row.application_id, access: row.access, expiresAt: row.expires_at, returnUrl: row.return_url };
}

/** Revokes a link (unused, it opens nothing; used, its session ends at once). */
export async function revokePortalLink(q: Queryable, id: string, options: { revokedBy: string }): Promise<PortalLink> {
  const { rows } = await q.query<{ id: string }>(
    `WITH link AS (
       UPDATE portal_links SET revoked_at = now(), revoked_by = $2 WHERE id = $1 AND revoked_at IS NULL RETURNING id
     ),
     session AS (
       UPDATE portal_sessions SET revoked_at = now(), revoked_by = $2 WHERE link_id IN (SELECT id FROM link) AND revoked_at IS NULL RETURNING 1
     )
     SELECT id, (SELECT count(*) FROM session) AS ended FROM link`,
    [id, options.revokedBy],
  );
  if (!rows[0]) throw new NotFoundError("portal link", id);
  return getPortalLink(q, id);
}

/** Ends a session at once (its next request is a 401); NotFoundError if unknown or ended already. */
export async function revokePortalSession(q: Queryable, id: string, options: { revokedBy: string }): Promise<PortalSessionInfo & { applicationId: string }> {
  const { rows } = await q.query<{ id: string; application_id: string; created_at: Date; expires_at: Date; revoked_at: Date; revoked_by: string }>(
    `UPDATE portal_sessions SET revoked_at = now(), revoked_by = $2 WHERE id = $1 AND revoked_at IS NULL
     RETURNING id, application_id, created_at, expires_at, revoked_at, revoked_by`,
    [id, options.revokedBy],
  );
  const r = rows[0];
  if (!r) throw new NotFoundError("portal session", id);
  return { id: r.id, applicationId: r.application_id, createdAt: r.created_at, expiresAt: r.expires_at, revokedAt: r.revoked_at, revokedBy: r.revoked_by };
}

/** The application a link or session belongs to (null: none with that id), for the access checks. */
export async function portalOwnerOf(q: Queryable, kind: "link" | "session", id: string): Promise<string | null> {
  const { rows } = await q.query<{ application_id: string }>(
    kind === "link" ? "SELECT application_id FROM portal_links WHERE id = $1" : "SELECT application_id FROM portal_sessions WHERE id = $1",
    [id],
  );
  return rows[0]?.application_id ?? null;
}
