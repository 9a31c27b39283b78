/**
 * Tenancy routes (issue 17, docs/tenancy.md): applications, API keys, the audit log, and `GET /me`
 * (who the caller is, so a client such as the admin page shows only what the scope allows).
 * Applications, keys and the audit log are for operators; an application key may read its own
 * application and `/me`.
 */
import * as z from "zod/mini";
import type { PlatformContext } from "../../context.js";
import { createApiKey, listApiKeys, revokeApiKey } from "../../tenancy/apiKeys.js";
import { ApplicationInUseError, createApplication, deleteApplication, getApplication, listApplications } from "../../tenancy/applications.js";
import { listAuditLog } from "../../tenancy/auditLog.js";
import { principalOf } from "../../tenancy/access.js";
import { actorOf } from "../../tenancy/principal.js";
import { apiKeySchema, applicationSchema, auditEntrySchema, createdApiKeySchema, deletedApplicationSchema, principalSchema } from "../../tenancy/schemas.js";
import { decodeCursor, isString, page } from "../pagination.js";
import { HttpError, type Route } from "../router.js";
import { pageOf } from "../schemas.js";
import { cursor, filterText, limit, optionalJson, route } from "./validate.js";

const pageQuery = z.strictObject({ limit, cursor });
const keyQuery = z.strictObject({
  applicationId: filterText(),
  active: z.optional(z.pipe(z.enum(["true", "false"]), z.transform((v: "true" | "false") => v === "true"))),
  limit,
  cursor,
});
const deleteQuery = z.strictObject({ cascade: z.optional(z.pipe(z.enum(["true", "false"]), z.transform((v: "true" | "false") => v === "true"))) });
const auditQuery = z.strictObject({ actor: filterText(), operation: filterText(), applicationId: filterText(), resourceId: filterText(), limit, cursor });
const isAuditKey = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;

export function tenancyRoutes(ctx: PlatformContext): Route[] {
  const { db } = ctx;
  return [
    route("GET", "/me", {
      operationId: "whoAmI", tag: "Access", summary: "Who this token is: bootstrap or a key, and its scope",
      access: { action: "read", audience: "application" },
      responses: { 200: { description: "The caller.", schema: principalSchema } },
    }, async (req) => {
      const p = principalOf(req);
      const body = p?.kind === "key"
        ? { kind: "key", keyId: p.keyId, applicationId: p.applicationId, access: p.access }
        : { kind: "bootstrap", keyId: null, applicationId: null, access: "write" };
      return { status: 200, body };
    }),

    route("POST", "/applications", {
      operationId: "createApplication", tag: "Access", summary: "Create an application (a tenant)",
      description: "Its subscriptions, events, deliveries and dead letters are kept apart from every other application's; a key scoped to it sees only them.",
      body: z.strictObject({ name: z.string() }),
      access: { action: "write", audience: "operator" },
      responses: { 201: { description: "Created.", schema: applicationSchema } },
    }, async (req) => ({ status: 201, body: await createApplication(db, await req.json()) })),
    route("GET", "/applications", {
      operationId: "listApplications", tag: "Access", summary: "List applications", description: "In id order; deleted ones are left out.",
      query: pageQuery,
      access: { action: "read", audience: "operator" },
      responses: { 200: { description: "A page of applications.", schema: pageOf("applications", applicationSchema) } },
    }, async (_req, { cursor: c, limit: size }) => {
      const after = decodeCursor(c, isString);
      const { rows, next } = await page(size, (n) => listApplications(db, { after, limit: n }), (a) => a.id);
      return { status: 200, body: { applications: rows, next } };
    }),
    route("GET", "/applications/:id", {
      operationId: "getApplication", tag: "Access", summary: "Get an application",
      description: "An application key may read its own.",
      access: { action: "read", audience: "application", resource: "application" },
      responses: { 200: { description: "The application.", schema: applicationSchema } },
    }, async (req) => ({ status: 200, body: await getApplication(db, req.params.id!) })),
    route("DELETE", "/applications/:id", {
      operationId: "deleteApplication", tag: "Access", summary: "Delete an application",
      description: "Refused (409 `application_in_use`, with the counts) while it has subscriptions, unless `cascade=true`: then its subscriptions are deleted as `DELETE /subscriptions/{id}` does (pending deliveries `cancelled`, kept with their attempts). Its events, deliveries and dead letters stay readable by operators; its keys are revoked. The default application cannot be deleted.",
      query: deleteQuery,
      access: { action: "write", audience: "operator", resource: "application" },
      responses: {
        200: { description: "Deleted.", schema: deletedApplicationSchema },
        409: { description: "It still has subscriptions (pass `cascade=true`), or it is the default application." },
      },
    }, async (req, { cascade }) => {
      try {
        return { status: 200, body: await deleteApplication(db, req.params.id!, { cascade, revokedBy: actorOf(principalOf(req)) }) };
      } catch (error) {
        if (error instanceof ApplicationInUseError) throw new HttpError(409, "application_in_use", error.message, error.counts);
        throw error;
      }
    }),

    route("POST", "/keys", {
      operationId: "createApiKey", tag: "Access", summary: "Create an API key",
      description: "`applicationId` omitted or null: an operator key (every application); else scoped to that application. `access`: `write` (default) or `read` (changes nothing). The answer carries `key`, shown this once; only its SHA-256 is stored. It works at once, with no restart.",
      body: z.strictObject({ applicationId: z.optional(z.nullable(z.string())), access: z.optional(z.enum(["write", "read"])), description: z.optional(z.string()) }),
      bodyRequired: false,
      access: { action: "write", audience: "operator" },
      responses: { 201: { description: "Created, with the key.", schema: createdApiKeySchema } },
    }, async (req) => ({ status: 201, body: await createApiKey(db, await optionalJson(req), { createdBy: actorOf(principalOf(req)) }) })),
    route("GET", "/keys", {
      operationId: "listApiKeys", tag: "Access", summary: "List API keys",
      description: "In id order, revoked ones included unless `active=true`; never the keys themselves.",
      query: keyQuery,
      access: { action: "read", audience: "operator" },
      responses: { 200: { description: "A page of keys.", schema: pageOf("keys", apiKeySchema) } },
    }, async (_req, { cursor: c, limit: size, ...filter }) => {
      const after = decodeCursor(c, isString);
      const { rows, next } = await page(size, (n) => listApiKeys(db, { ...filter, after, limit: n }), (k) => k.id);
      return { status: 200, body: { keys: rows, next } };
    }),
    route("DELETE", "/keys/:id", {
      operationId: "revokeApiKey", tag: "Access", summary: "Revoke an API key",
      description: "At once: its next request is a 401, on every server and function. The key stays listed, with `revokedAt`.",
      access: { action: "write", audience: "operator" },
      responses: { 200: { description: "Revoked.", schema: apiKeySchema } },
    }, async (req) => ({ status: 200, body: await revokeApiKey(db, req.params.id!, { revokedBy: actorOf(principalOf(req)) }) })),

    route("GET", "/audit-log", {
      operationId: "listAuditLog", tag: "Access", summary: "List the audit log",
      description: "Every management change (each non-GET operation that succeeded), newest first: who (`actor`: a key id, or `bootstrap` for ADMIN_TOKEN), what (`operation`, `resourceId`, `applicationId`), when.",
      query: auditQuery,
      access: { action: "read", audience: "operator" },
      responses: { 200: { description: "A page of entries.", schema: pageOf("entries", auditEntrySchema) } },
    }, async (_req, { cursor: c, limit: size, ...filter }) => {
      const before = decodeCursor(c, isAuditKey);
      const { rows, next } = await page(size, (n) => listAuditLog(db, { ...filter, before, limit: n }), (e) => e.id);
      return { status: 200, body: { entries: rows, next } };
    }),
  ];
}
