/**
 * The customer portal (issue 32, docs/portal.md): the operator's portal links and settings, the
 * exchange of a link for a session cookie, the session itself, the page at `/portal`, and the two
 * operations the portal needs that the API lacked (a subscription's secrets; an endpoint's success
 * rate and latency over time). Everything else the portal does goes through the documented API,
 * the session cookie being one more credential scoped to one application.
 */
import * as z from "zod/mini";
import type { PlatformContext } from "../../context.js";
import { getSubscription } from "../../outbound/subscriptions.js";
import { endpointStats } from "../../portal/endpointStats.js";
import { parseOriginList } from "../../portal/origins.js";
import { portalAsset, portalSecurityHeaders } from "../../portal/assets.js";
import { checkSameOrigin, clearedSessionCookie, cookieValue, isHttps, SESSION_COOKIE, sessionCookie } from "../../portal/sessionAuth.js";
import {
  createPortalLink, csrfTokenFor, identifyPortalSession, listPortalLinks, openPortalSession, portalLinkInputSchema, PortalLinkRefusedError,
  revokePortalLink, revokePortalSession, type PortalLink,
} from "../../portal/sessions.js";
import { frameAncestorsOf, getPortalSettings, portalSettingsInputSchema, updatePortalSettings } from "../../portal/settings.js";
import { getApplication } from "../../tenancy/applications.js";
import { recordChange } from "../../tenancy/auditLog.js";
import { actorFor, principalOf } from "../../tenancy/access.js";
import { decodeCursor, page } from "../pagination.js";
import { HttpError, type Request, type Response, type Route } from "../router.js";
import { bodyOf, cursor, limit, optionalJson, route, toHttpError } from "./validate.js";

const TAG = "Customer portal";
const time = z.iso.datetime();
const nullableTime = z.nullable(time);

const sessionInfoSchema = z.strictObject({ id: z.string(), createdAt: time, expiresAt: time, revokedAt: nullableTime, revokedBy: z.nullable(z.string()) });
const portalLinkSchema = z.strictObject({
  id: z.string(), applicationId: z.string(), access: z.enum(["read", "write"]), returnUrl: z.nullable(z.string()), expiresAt: time,
  createdBy: z.string(), createdAt: time, usedAt: nullableTime, revokedAt: nullableTime, revokedBy: z.nullable(z.string()),
  session: z.nullable(sessionInfoSchema),
});
const createdLinkSchema = z.extend(portalLinkSchema, {
  token: z.string().check(z.describe("The link's token, shown this once (only its SHA-256 is kept).")),
  url: z.string().check(z.describe("The link to hand to the customer: the portal, the token in its fragment (never sent to a server, never in a log).")),
});
const themeSchema = z.strictObject({ name: z.nullable(z.string()), logoUrl: z.nullable(z.string()), accentColor: z.nullable(z.string()) });
const settingsSchema = z.strictObject({ applicationId: z.string(), frameAncestors: z.array(z.string()), theme: themeSchema, updatedAt: nullableTime });
const portalSessionSchema = z.strictObject({
  sessionId: z.string(), applicationId: z.string(), applicationName: z.string(), access: z.enum(["read", "write"]), expiresAt: time,
  returnUrl: z.nullable(z.string()),
  csrfToken: z.string().check(z.describe("Send it as `x-csrf-token` with every change made with the session cookie.")),
  theme: themeSchema,
});
const secretsSchema = z.strictObject({ id: z.string(), secrets: z.array(z.string()), publicKeys: z.array(z.string()) });
const bucketFields = {
  attempts: z.number(), delivered: z.number(), failed: z.number(), successRate: z.nullable(z.number()),
  latencyMsAvg: z.nullable(z.number()), latencyMsP95: z.nullable(z.number()),
};
const statsSchema = z.strictObject({
  subscriptionId: z.string(), minutes: z.number(), bucketMinutes: z.number(),
  totals: z.strictObject(bucketFields),
  buckets: z.array(z.strictObject({ start: time, ...bucketFields })),
});
const exchangeSchema = z.strictObject({ token: z.string().check(z.minLength(1), z.maxLength(200)) });
const statsQuery = z.strictObject({
  minutes: z.optional(z.coerce.number().check(z.int(), z.gte(5), z.lte(7 * 1440))),
  bucketMinutes: z.optional(z.coerce.number().check(z.int(), z.gte(1), z.lte(1440))),
});
const isLinkKey = (v: unknown): v is [string, string] => Array.isArray(v) && v.length === 2 && v.every((x) => typeof x === "string" && x.length > 0 && x.length <= 100);

/** The path the session cookie is sent for: the API's, wherever the host mounts it. */
const cookiePath = (req: Request) => `${req.basePath}/`;

/** Where customers reach this host: PORTAL_BASE_URL, else the request's own scheme and host. */
function publicBase(ctx: PlatformContext, req: Request): string {
  if (ctx.config.PORTAL_BASE_URL) return ctx.config.PORTAL_BASE_URL.replace(/\/+$/, "");
  const host = String(req.headers["x-forwarded-host"] ?? req.headers.host ?? "localhost").split(",")[0]!.trim();
  return `${isHttps(req.headers) ? "https" : "http"}://${host}${req.basePath}`;
}

export function portalRoutes(ctx: PlatformContext): Route[] {
  const { db, config } = ctx;
  // Validated at start (shared/config.ts); parsed once here.
  const globalAncestors = parseOriginList(config.PORTAL_FRAME_ANCESTORS ?? "");

  const sessionBody = async (s: { sessionId: string; applicationId: string; access: "read" | "write"; expiresAt: Date; returnUrl: string | null; csrfToken: string }) => {
    const [app, settings] = await Promise.all([getApplication(db, s.applicationId), getPortalSettings(db, s.applicationId)]);
    return { sessionId: s.sessionId, applicationId: s.applicationId, applicationName: app.name, access: s.access, expiresAt: s.expiresAt, returnUrl: s.returnUrl, csrfToken: s.csrfToken, theme: settings.theme };
  };

  /**
   * The page's frame-ancestors: the global origins and the application's. The application is the
   * one `?application=` names (a link's first load: its session is not made yet); when the
   * browser holds a live session of another application, only origins both allow, so a page
   * framed under one application's list never shows another's data.
   */
  const pagePolicy = async (req: Request): Promise<Record<string, string>> => {
    const named = req.query.get("application") ?? undefined;
    const token = cookieValue(req.headers, SESSION_COOKIE);
    const session = token ? await identifyPortalSession(db, token) : undefined;
    const mine = await frameAncestorsOf(db, session?.applicationId ?? named, globalAncestors);
    if (!session || !named || named === session.applicationId) return portalSecurityHeaders(mine.origins, mine.logoUrl);
    const other = await frameAncestorsOf(db, named, globalAncestors);
    return portalSecurityHeaders(mine.origins.filter((o) => other.origins.includes(o)), mine.logoUrl);
  };

  const servePage = async (req: Request, name: string): Promise<Response> => {
    const asset = portalAsset(name);
    if (!asset) throw new HttpError(404, "not_found", `No portal file named ${name}.`);
    const { contentType, body } = await asset;
    // The page links its files from where the host mounts the API.
    const text = name === "index.html" ? body.replaceAll("{{base}}", req.basePath) : body;
    return { status: 200, headers: { ...(await pagePolicy(req)), "content-type": contentType }, body: text };
  };

  const linkBody = (link: PortalLink) => link;

  return [
    // The page and its files carry no data: public, as the admin page's. Every number comes from the API.
    { method: "GET", path: "/portal", auth: "none", handler: (req) => servePage(req, "index.html") },
    { method: "GET", path: "/portal/assets/:file", auth: "none", handler: (req) => servePage(req, req.params.file ?? "") },

    // The operator's side: links, their revocation, the application's portal settings.
    route("POST", "/applications/:id/portal-links", {
      operationId: "createPortalLink", tag: TAG, summary: "Make a portal link for an application's customer",
      description: "A short-lived, single-use link that opens the customer portal with a session limited to this application: `access` `read` (default) or `write`, `expiresInMinutes` (1–1440, default 60: the link must be opened within it, and the session ends at it), an optional `returnUrl` the portal links back to. The answer carries `token` and `url`, shown this once; only the token's SHA-256 is kept. Opening the link a second time opens nothing.",
      body: portalLinkInputSchema, bodyRequired: false,
      access: { action: "write", audience: "operator", resource: "application" },
      responses: { 201: { description: "Made, with its token and URL.", schema: createdLinkSchema } },
    }, async (req) => {
      const link = await createPortalLink(db, req.params.id!, await optionalJson(req), { createdBy: actorFor(req) });
      const url = `${publicBase(ctx, req)}/portal?application=${encodeURIComponent(link.applicationId)}#link=${link.token}`;
      return { status: 201, body: { ...link, url } };
    }),
    route("GET", "/applications/:id/portal-links", {
      operationId: "listPortalLinks", tag: TAG, summary: "List an application's portal links",
      description: "Newest first, each with the session it opened (if it was used), never the tokens.",
      query: z.strictObject({ limit, cursor }),
      access: { action: "read", audience: "operator", resource: "application" },
      responses: { 200: { description: "A page of links.", schema: z.strictObject({ links: z.array(portalLinkSchema), next: z.nullable(z.string()) }) } },
    }, async (req, { cursor: c, limit: size }) => {
      await getApplication(db, req.params.id!);
      const before = decodeCursor(c, isLinkKey);
      const { rows, next } = await page(size, (n) => listPortalLinks(db, req.params.id!, { limit: n, before: before && { createdAt: before[0], id: before[1] } }), (l) => [l.createdAt.toISOString(), l.id]);
      return { status: 200, body: { links: rows.map(linkBody), next } };
    }),
    route("DELETE", "/portal-links/:id", {
      operationId: "revokePortalLink", tag: TAG, summary: "Revoke a portal link (and end its session)",
      description: "Unused, it opens nothing; used, the session it opened ends at once (its next request is a 401).",
      access: { action: "write", audience: "operator" },
      responses: { 200: { description: "Revoked.", schema: portalLinkSchema } },
    }, async (req) => ({ status: 200, body: linkBody(await revokePortalLink(db, req.params.id!, { revokedBy: actorFor(req) })) })),
    route("DELETE", "/portal-sessions/:id", {
      operationId: "revokePortalSession", tag: TAG, summary: "End a portal session",
      description: "At once, on every server and function. The session id is the `actor` of what it changed in the audit log (`ps_…`).",
      access: { action: "write", audience: "operator" },
      responses: { 200: { description: "Ended.", schema: z.extend(sessionInfoSchema, { applicationId: z.string() }) } },
    }, async (req) => ({ status: 200, body: await revokePortalSession(db, req.params.id!, { revokedBy: actorFor(req) }) })),
    route("GET", "/applications/:id/portal-settings", {
      operationId: "getPortalSettings", tag: TAG, summary: "Get an application's portal settings",
      description: "The origins that may frame its portal (besides PORTAL_FRAME_ANCESTORS, every application's) and its theme.",
      access: { action: "read", audience: "application", resource: "application" },
      responses: { 200: { description: "The settings.", schema: settingsSchema } },
    }, async (req) => ({ status: 200, body: await getPortalSettings(db, req.params.id!) })),
    route("PATCH", "/applications/:id/portal-settings", {
      operationId: "updatePortalSettings", tag: TAG, summary: "Change an application's portal settings",
      description: "`frameAncestors` replaces the list of origins that may frame its portal (`https://app.example.com`, `https://*.example.com`; at most 20; every other origin is refused). `theme`: `name` (shown instead of the application's, at most 80 characters), `logoUrl` (an https image URL), `accentColor` (`#rrggbb`); null puts one back to the default.",
      body: portalSettingsInputSchema,
      access: { action: "write", audience: "operator", resource: "application" },
      responses: { 200: { description: "The settings.", schema: settingsSchema } },
    }, async (req) => ({ status: 200, body: await updatePortalSettings(db, req.params.id!, await req.json()) })),

    // The customer's side: the exchange, the session, signing out.
    {
      method: "POST", path: "/portal/sessions", auth: "none",
      doc: {
        operationId: "openPortalSession", tag: TAG, summary: "Exchange a portal link for a session",
        description: "The portal page sends the token of the link it was opened with (`#link=…`). Once only: the link is then used, and a second exchange is refused, as is an expired or revoked link's (403 `link_refused`, `details.reason`: `invalid`, `used`, `expired`, `revoked`). The answer sets the session cookie (`whp_session`: HttpOnly; over https `Secure; SameSite=None; Partitioned`, else `SameSite=Lax`) until the link's expiry, and carries the session's CSRF token. Recorded in the audit log (`actor`: the session id).",
        body: exchangeSchema,
        responses: {
          201: { description: "The session, its cookie set.", schema: portalSessionSchema, headers: { "Set-Cookie": "The session cookie." } },
          403: { description: "The link opens nothing (`link_refused`), or the request came from another origin (`csrf_failed`)." },
        },
      },
      handler: async (req) => {
        try {
          // A page of another site must not log a browser into a session of its choosing.
          checkSameOrigin(req.headers);
          const input = bodyOf(exchangeSchema, await req.json(), "portal link exchange (send { \"token\": \"whpl_…\" })");
          let opened;
          try {
            opened = await openPortalSession(db, input.token);
          } catch (error) {
            if (error instanceof PortalLinkRefusedError) throw new HttpError(403, "link_refused", error.message, { reason: error.reason });
            throw error;
          }
          const { session, token } = opened;
          try {
            await recordChange(db, { actor: session.sessionId, operation: "openPortalSession", method: req.method, path: req.path, resourceId: session.linkId, applicationId: session.applicationId, status: 201 });
          } catch (error) {
            ctx.logger.error({ err: error, sessionId: session.sessionId }, "audit log write failed for a portal session that was opened");
          }
          const body = await sessionBody({ ...session, csrfToken: csrfTokenFor(token) });
          return { status: 201, headers: { "set-cookie": sessionCookie(token, { https: isHttps(req.headers), path: cookiePath(req), expiresAt: session.expiresAt }), "cache-control": "no-store" }, body };
        } catch (error) {
          throw toHttpError(error);
        }
      },
    },
    route("GET", "/portal/session", {
      operationId: "getPortalSession", tag: TAG, summary: "The portal session of this cookie",
      description: "Its application, access, expiry, return URL, the application's theme, and the CSRF token to send as `x-csrf-token` with every change. Only with the session cookie (404 `no_portal_session` otherwise).",
      access: { action: "read", audience: "application" },
      responses: { 200: { description: "The session.", schema: portalSessionSchema }, 404: { description: "This credential is not a portal session." } },
    }, async (req) => {
      const p = principalOf(req);
      if (p?.kind !== "key" || !p.session || !p.applicationId) throw new HttpError(404, "no_portal_session", "This credential is not a portal session: open the portal with a portal link.");
      return { status: 200, headers: { "cache-control": "no-store" }, body: await sessionBody({ sessionId: p.keyId, applicationId: p.applicationId, access: p.access, ...p.session }) };
    }),
    route("DELETE", "/portal/session", {
      operationId: "endPortalSession", tag: TAG, summary: "Sign out of the portal",
      description: "Ends this cookie's session (a read-only one too) and removes the cookie. Recorded in the audit log.",
      access: { action: "read", audience: "application" },
      responses: {
        200: { description: "Ended.", schema: z.extend(sessionInfoSchema, { applicationId: z.string() }) },
        403: { description: "Without the session's `x-csrf-token`, or from another origin (`csrf_failed`)." },
        404: { description: "This credential is not a portal session." },
      },
    }, async (req) => {
      const p = principalOf(req);
      if (p?.kind !== "key" || !p.session) throw new HttpError(404, "no_portal_session", "This credential is not a portal session.");
      const ended = await revokePortalSession(db, p.keyId, { revokedBy: p.keyId });
      await recordChange(db, { actor: p.keyId, operation: "endPortalSession", method: req.method, path: req.path, resourceId: p.keyId, applicationId: ended.applicationId, status: 200 })
        .catch((error: unknown) => ctx.logger.error({ err: error, sessionId: p.keyId }, "audit log write failed for a portal session that was ended"));
      return { status: 200, headers: { "set-cookie": clearedSessionCookie({ https: isHttps(req.headers), path: cookiePath(req) }) }, body: ended };
    }),

    // What the portal shows that the API did not have.
    route("GET", "/subscriptions/:id/secrets", {
      operationId: "getSubscriptionSecrets", tag: "Subscriptions", summary: "Show a subscription's signing secrets",
      description: "Newest first (two during a rotation), with the `whpk_…` public keys of its v1a keys. A credential: refused to read-only keys and sessions, and every reading is recorded in the audit log.",
      access: { action: "write", audience: "application", resource: "subscription" },
      responses: { 200: { description: "The secrets.", schema: secretsSchema } },
    }, async (req) => {
      const s = await getSubscription(db, req.params.id!, { includeSecrets: true });
      return { status: 200, headers: { "cache-control": "no-store" }, body: { id: s.id, secrets: s.secrets ?? [], publicKeys: s.publicKeys ?? [] } };
    }),
    route("GET", "/subscriptions/:id/stats", {
      operationId: "getSubscriptionStats", tag: "Subscriptions", summary: "An endpoint's success rate and latency over time",
      description: "Its attempts over the last `minutes` (5–10080, default 1440) in buckets of `bucketMinutes` (default: `minutes`/24, at least 1; at most 1440 buckets), oldest first, every bucket present: attempts, delivered, failed, success rate, mean and 95th-percentile latency; and the totals. Probes of a disabled endpoint are left out.",
      query: statsQuery,
      access: { action: "read", audience: "application", resource: "subscription" },
      responses: { 200: { description: "The series.", schema: statsSchema } },
    }, async (req, q) => {
      const minutes = q.minutes ?? 1440;
      const bucketMinutes = q.bucketMinutes ?? Math.max(1, Math.round(minutes / 24));
      if (minutes / bucketMinutes > 1440) throw new HttpError(400, "invalid_request", `Invalid query: ${minutes} minutes in buckets of ${bucketMinutes} make over 1440 buckets; choose a larger bucketMinutes.`);
      await getSubscription(db, req.params.id!); // a deleted one is not found
      return { status: 200, body: await endpointStats(db, req.params.id!, { minutes, bucketMinutes }) };
    }),
  ];
}
