/**
 * The OpenAPI 3.1 document of the API, generated from the routes: each route's description
 * (./operation.ts) names the zod schemas that validate its query and body and the schemas of its
 * answers; zod writes them as JSON Schema 2020-12, the dialect of OpenAPI 3.1. Nothing is kept by
 * hand, so the document cannot say what the code does not do (test/operator/openapi.test.ts
 * sends every documented operation to the server and checks each answer against it).
 */
import * as z from "zod/mini";
import type { ResponseDoc } from "./operation.js";
import type { Route } from "./router.js";
import { errorSchema } from "./schemas.js";

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.core.$ZodType, io: "input" | "output"): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: "draft-2020-12", io, unrepresentable: "any" }) as JsonSchema;
  return rest;
}

const STATUS_TEXT: Record<number, string> = {
  400: "The request is not valid: `error.message` says what to fix, `error.details` where.",
  401: "Missing or wrong bearer token.",
  403: "This key's scope does not allow it: `read_only` (a read-only key asked for a change) or `forbidden` (an application key asked for an operator-only operation).",
  404: "No such resource.",
  413: "The body is larger than the limit.",
  415: "The body is not JSON (send `content-type: application/json`).",
  500: "Internal error; the server log has the details.",
  503: "The database is unavailable; retry after `Retry-After` seconds.",
};

function errorResponse(status: number, given?: ResponseDoc): JsonSchema {
  const headers: Record<string, string> = { ...given?.headers };
  if (status === 503) headers["Retry-After"] ??= "Seconds to wait before retrying.";
  if (status === 401) headers["WWW-Authenticate"] ??= "`Bearer`.";
  return response({ description: given?.description ?? STATUS_TEXT[status] ?? "Error.", schema: errorSchema, headers });
}

function response(doc: ResponseDoc): JsonSchema {
  const out: JsonSchema = { description: doc.description };
  if (doc.schema) out.content = { [doc.mediaType ?? "application/json"]: { schema: jsonSchema(doc.schema, "output") } };
  else if (doc.mediaType) out.content = { [doc.mediaType]: { schema: { type: "string" } } };
  if (doc.headers) {
    out.headers = Object.fromEntries(Object.entries(doc.headers).map(([name, description]) => [name, { description, schema: { type: "string" } }]));
  }
  return out;
}

function queryParameters(schema: z.core.$ZodType): JsonSchema[] {
  const object = jsonSchema(schema, "input") as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(object.properties ?? {}).map(([name, s]) => ({
    name,
    in: "query",
    required: object.required?.includes(name) ?? false,
    ...(typeof s.description === "string" ? { description: s.description } : {}),
    ...(s.deprecated === true ? { deprecated: true } : {}),
    schema: s,
  }));
}

function operation(route: Route): JsonSchema {
  const doc = route.doc!;
  const pathNames = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
  const parameters = [
    ...pathNames.map((name) => ({ name, in: "path", required: true, schema: { type: "string" } })),
    ...(doc.query ? queryParameters(doc.query) : []),
  ];
  const json = doc.body !== undefined && doc.bodyMediaType === undefined;
  const responses: Record<string, JsonSchema> = {};
  for (const [status, r] of Object.entries(doc.responses)) {
    responses[status] = Number(status) >= 400 ? errorResponse(Number(status), r) : response(r);
  }
  const common = new Set<number>([500]);
  if (route.auth === "admin") common.add(401);
  // What a key's scope can refuse (shared/tenancy/accessRule.ts): a change to a read-only key, an
  // operator-only operation to an application key. Undeclared access is operator-write-only.
  const access = doc.access;
  if (route.auth === "admin" && (!access || access.action === "write" || access.audience === "operator")) common.add(403);
  if (parameters.length > 0 || doc.body) common.add(400);
  if (pathNames.length > 0) common.add(404);
  if (json) { common.add(413); common.add(415); }
  if (!doc.noDatabase) common.add(503);
  for (const status of common) responses[String(status)] ??= errorResponse(status);
  const out: JsonSchema = {
    operationId: doc.operationId,
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    tags: [doc.tag],
    ...(parameters.length ? { parameters } : {}),
    responses: Object.fromEntries(Object.entries(responses).sort(([a], [b]) => Number(a) - Number(b))),
    // Application operations also take the customer portal's session cookie (docs/portal.md).
    security: route.auth !== "admin" ? [] : access?.audience === "application" ? [{ bearer: [] }, { portalSession: [] }] : [{ bearer: [] }],
    // Who may call it, as enforced (docs/tenancy.md); the scope test walks the document by it.
    ...(route.auth === "admin" && access ? { "x-access": { action: access.action, audience: access.audience, ...(access.resource ? { resource: access.resource, param: access.param ?? "id" } : {}) } } : {}),
  };
  if (doc.body) {
    out.requestBody = {
      required: doc.bodyRequired ?? true,
      content: { [doc.bodyMediaType ?? "application/json"]: { schema: jsonSchema(doc.body, "input") } },
    };
  }
  return out;
}

export interface DocumentInfo {
  version: string;
  /** Where the API is served, e.g. the management URL of a cloud stack. */
  serverUrl?: string;
}

/** The OpenAPI 3.1 document of the documented routes among `routes`. */
export function openApiDocument(routes: readonly Route[], info: DocumentInfo): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    if (!route.doc) continue;
    const path = route.path.replace(/:(\w+)/g, "{$1}");
    (paths[path] ??= {})[route.method.toLowerCase()] = operation(route);
  }
  const tags = [...new Set(routes.flatMap((r) => (r.doc ? [r.doc.tag] : [])))].map((name) => ({ name }));
  return {
    openapi: "3.1.0",
    info: {
      title: "multicloud-webhooks management API",
      version: info.version,
      description: "Subscriptions, events, deliveries, dead letters and the inbox of a multicloud-webhooks platform: the same API on the local server and behind each cloud's ingress. Every list pages the same way: `limit` (1–1000, default 100) and `cursor` (the `next` of the previous page; null on the last). Errors are `{ \"error\": { \"code\", \"message\", \"details\"? } }`.",
    },
    ...(info.serverUrl ? { servers: [{ url: info.serverUrl }] } : {}),
    tags,
    paths,
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "An API key (`whk_…`, POST /keys; its scope is in `x-access` of each operation) or the bootstrap token: the platform's ADMIN_TOKEN (locally) or the management token in the cloud's secret store." },
        portalSession: { type: "apiKey", in: "cookie", name: "whp_session", description: "A customer portal session (POST /portal/sessions exchanges a portal link for it): scoped as an application key to its link's application and access. A change made with it also needs the `x-csrf-token` header of GET /portal/session." },
      },
    },
  };
}
