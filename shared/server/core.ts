/**
 * The HTTP core every host shares: routes with `:params`, authentication through an
 * `Authenticator` that yields a `Principal`, a body read with a hard size limit, JSON errors of
 * one shape (`{ error: { code, message, details? } }`). `createApp(...).handle(request)` takes a
 * plain request (method, target, headers, body bytes) and resolves to the answer; it never
 * throws. It knows no server: the local node:http server (./router.ts) and the cloud functions'
 * adapters (functions/<cloud>/management.ts) translate their requests into this one, so every
 * host answers the same request the same way.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { Logger } from "pino";
import { failuresOf } from "../telemetry/repeatedFailures.js";
import { bearerAuthenticator, type Authenticator, type Principal } from "./auth.js";
import type { OperationDoc } from "./operation.js";
import { HttpError } from "./httpError.js";
import { checkQuery, pathParameter } from "./parameters.js";

export { HttpError };

export { bearerAuthenticator, bearerMatches, type Authenticator, type Principal } from "./auth.js";

/** Request headers: lower-case names; a header sent twice may be an array. */
export type RequestHeaders = IncomingHttpHeaders;

export interface Request {
  /** Who it acts for; set on `auth: "admin"` routes, undefined on public ones. */
  principal?: Principal;
  method: string;
  /** The route's path, after the host's base path (see `RawRequest.basePath`). */
  path: string;
  /** Where the host mounts the API (`""` at the root, `/api` behind a prefix): for links in pages. */
  basePath: string;
  params: Record<string, string>;
  query: URLSearchParams;
  headers: RequestHeaders;
  /** The raw body bytes; rejects with 413 beyond the limit. Read once, cached. */
  body(): Promise<Buffer>;
  /**
   * The body parsed as JSON; rejects with 415 when the content type is not JSON (`application/json`
   * or `…+json`), 400 with a precise message when the body is not JSON.
   */
  json<T = unknown>(): Promise<T>;
}

export interface Response {
  status: number;
  headers?: Record<string, string>;
  /** Objects are sent as JSON; strings and Buffers as they are (set content-type yourself). */
  body?: unknown;
}

export type Handler = (req: Request) => Promise<Response>;

export interface Route {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** e.g. `/deliveries/:id/attempts` */
  path: string;
  /** `admin` routes require a principal from the authenticator (default: `Authorization: Bearer <ADMIN_TOKEN>`). */
  auth: "admin" | "none";
  handler: Handler;
  /** Its entry in the OpenAPI document (./openapi.ts); routes without one are not documented. */
  doc?: OperationDoc;
}

export interface AppOptions {
  routes: Route[];
  adminToken: string;
  /** Who sent a request, for `auth: "admin"` routes. Default: bearerAuthenticator(adminToken). */
  authenticate?: Authenticator;
  /** Largest request body accepted. Default: 1 MiB. */
  maxBodyBytes?: number;
  logger?: Logger;
  /** Maps errors that are not HttpError (e.g. database down → 503). */
  mapError?: (error: unknown) => HttpError | undefined;
}

/** One request as a host received it. */
export interface RawRequest {
  method: string;
  /** The request target: an origin-form path with its query (`/deliveries?status=dead`), or an absolute URL. */
  url: string;
  headers: RequestHeaders;
  /**
   * The body bytes, or a reader of them that a streaming host (node:http) calls only when a route
   * reads the body, so an early answer (401, 404, 405) never waits for an upload. Absent: empty.
   */
  body?: Buffer | ((limit: number) => Promise<Buffer>);
  /**
   * A prefix the host mounts the API under (`/api`, an API Gateway stage): removed from the path
   * before routing, and handed to routes as `basePath`. Default: none.
   */
  basePath?: string;
}

export interface App {
  /** The answer to `request`; errors become their JSON answer (500 without details for the unexpected). */
  handle(request: RawRequest): Promise<Response>;
  /** The body limit in force. */
  readonly maxBodyBytes: number;
}

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

interface CompiledRoute extends Route {
  pattern: RegExp;
  names: string[];
}

function compile(route: Route): CompiledRoute {
  const names: string[] = [];
  const source = route.path
    .split("/")
    .map((part) => {
      if (!part.startsWith(":")) return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      names.push(part.slice(1));
      return "([^/]+)";
    })
    .join("/");
  return { ...route, pattern: new RegExp(`^${source}/?$`), names };
}

/** `application/json` or a `+json` type such as `application/merge-patch+json`, any parameters. */
function isJsonType(header: string | undefined): boolean {
  const type = (header ?? "").split(";")[0]!.trim().toLowerCase();
  return type === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(type);
}

export function errorResponse(error: HttpError): Response {
  const body: { error: { code: string; message: string; details?: unknown } } = {
    error: { code: error.code, message: error.message },
  };
  if (error.details !== undefined) body.error.details = error.details;
  return { status: error.status, headers: error.headers, body };
}

/** A response as bytes and headers: objects become JSON (with its content type), HEAD answers carry no body. */
export function serializeResponse(response: Response, method = "GET"): { status: number; headers: Record<string, string>; body: Buffer | undefined } {
  const headers: Record<string, string> = { ...response.headers };
  let body: Buffer | undefined;
  if (response.body === undefined) body = undefined;
  else if (Buffer.isBuffer(response.body)) body = response.body;
  else if (typeof response.body === "string") body = Buffer.from(response.body, "utf8");
  else {
    body = Buffer.from(JSON.stringify(response.body), "utf8");
    headers["content-type"] ??= "application/json; charset=utf-8";
  }
  return { status: response.status, headers, body: method.toUpperCase() === "HEAD" ? undefined : body };
}

/**
 * The request target as a URL. An origin-form target ("/path") is appended to a fixed origin, so
 * "//x" stays a path instead of being read as a protocol-relative host; anything unparsable is a 400.
 */
function requestUrl(target: string): URL {
  try {
    return target.startsWith("/") ? new URL(`http://localhost${target}`) : new URL(target, "http://localhost");
  } catch {
    throw new HttpError(400, "bad_request_target", "The request target is not a valid path; send an origin-form path such as /webhooks/<partner>.");
  }
}

/** `/api` from `api/`, `/api`, `/api/`; `""` for none. */
export function normalizeBasePath(basePath: string | undefined): string {
  const trimmed = (basePath ?? "").replace(/^\/+|\/+$/g, "");
  return trimmed ? `/${trimmed}` : "";
}

/** `path` with `basePath` removed; undefined when it lies outside it. */
function withinBase(path: string, basePath: string): string | undefined {
  if (!basePath) return path;
  if (path === basePath) return "/";
  return path.startsWith(`${basePath}/`) ? path.slice(basePath.length) : undefined;
}

function bodyTooLarge(size: number, limit: number): HttpError {
  return new HttpError(413, "payload_too_large", `Body is ${size} bytes; the limit is ${limit}.`);
}

/** The core: routes `RawRequest`s to their handlers. */
export function createApp(options: AppOptions): App {
  const routes = options.routes.map(compile);
  const authenticate = options.authenticate ?? bearerAuthenticator(options.adminToken);
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;

  const dispatch = async (raw: RawRequest): Promise<Response> => {
    const url = requestUrl(raw.url || "/");
    const method = (raw.method || "GET").toUpperCase();
    const basePath = normalizeBasePath(raw.basePath);
    const path = withinBase(url.pathname, basePath);
    if (path === undefined) throw new HttpError(404, "not_found", `No route for ${method} ${url.pathname}: this API is served under ${basePath}/.`);
    const allowed = new Set<string>();
    for (const route of routes) {
      const m = route.pattern.exec(path);
      if (!m) continue;
      allowed.add(route.method);
      if (route.method !== method && !(method === "HEAD" && route.method === "GET")) continue;
      const principal = route.auth === "admin" ? await authenticate(raw.headers, { method }) : undefined;
      if (route.auth === "admin" && !principal) {
        throw new HttpError(401, "unauthorized", "Missing, wrong or revoked bearer token: send `Authorization: Bearer <API key or ADMIN_TOKEN>`.", undefined, { "www-authenticate": "Bearer" });
      }
      const params: Record<string, string> = {};
      route.names.forEach((name, i) => { params[name] = pathParameter(name, m[i + 1] ?? ""); });
      checkQuery(url.search);
      let cached: Promise<Buffer> | undefined;
      const source = raw.body;
      const readBody = async (): Promise<Buffer> => {
        if (typeof source === "function") return source(limit);
        const bytes = source ?? Buffer.alloc(0);
        if (bytes.length > limit) throw bodyTooLarge(bytes.length, limit);
        return bytes;
      };
      const body = () => (cached ??= readBody());
      const headerValue = (name: string) => {
        const value = raw.headers[name];
        return Array.isArray(value) ? value.join(", ") : value;
      };
      return route.handler({
        principal,
        method,
        path,
        basePath,
        params,
        query: url.searchParams,
        headers: raw.headers,
        body,
        async json<T>() {
          const bytes = await body();
          const type = headerValue("content-type");
          if ((type !== undefined || bytes.length > 0) && !isJsonType(type)) {
            throw new HttpError(415, "unsupported_media_type", `The body must be JSON: send \`content-type: application/json\`${type ? `, not ${JSON.stringify(type.slice(0, 100))}` : ""}.`);
          }
          if (bytes.length === 0) throw new HttpError(400, "invalid_json", "The body is empty; send a JSON document.");
          try {
            return JSON.parse(bytes.toString("utf8")) as T;
          } catch (e) {
            throw new HttpError(400, "invalid_json", `The body is not valid JSON: ${(e as Error).message}`);
          }
        },
      });
    }
    if (allowed.size > 0) {
      if (allowed.has("GET")) allowed.add("HEAD");
      const allow = [...allowed].sort().join(", ");
      throw new HttpError(405, "method_not_allowed", `${method} is not allowed on ${path}; use ${allow}.`, undefined, { allow });
    }
    throw new HttpError(404, "not_found", `No route for ${method} ${path}.`);
  };

  return {
    maxBodyBytes: limit,
    async handle(raw) {
      try {
        return await dispatch(raw);
      } catch (error) {
        let httpError = error instanceof HttpError ? error : options.mapError?.(error);
        if (!httpError) {
          const path = (raw.url || "/").split("?")[0] ?? "";
          // Logged with its stack for the operator; the caller gets a sentence, never the stack.
          failuresOf(options.logger).record(`http:500:${raw.method} /${path.split("/")[1] ?? ""}`, "error", { err: error, method: raw.method, path }, "unhandled error in request");
          httpError = new HttpError(500, "internal_error", "Internal error; the server log has the details.");
        }
        return errorResponse(httpError);
      }
    },
  };
}
