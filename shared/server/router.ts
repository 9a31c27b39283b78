/**
 * A small HTTP layer over node:http: routes with `:params`, a body read with a hard size limit,
 * JSON errors with a stable shape, and bearer-token auth for the management surface.
 * No framework: the cloud functions call the same framework-free core functions.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { timingSafeEqual } from "node:crypto";
import type { Logger } from "pino";
import { failuresOf } from "../telemetry/repeatedFailures.js";
import type { OperationDoc } from "./operation.js";

/**
 * Who a request acts for, as the authenticator established it. Today one kind: the holder of the
 * admin token. Scoped keys (issue 17: applications, keys limited to them) add kinds here, and
 * handlers narrow what they show by it.
 */
export type Principal = { kind: "admin" };

/**
 * Decides who sent a request from its headers: a Principal, or undefined (answered 401). Runs only
 * for `auth: "admin"` routes. Default: the bearer token compared in constant time with ADMIN_TOKEN.
 */
export type Authenticator = (headers: IncomingHttpHeaders) => Principal | undefined | Promise<Principal | undefined>;

/** The default authenticator: `Authorization: Bearer <token>`, compared in constant time. */
export function bearerAuthenticator(token: string): Authenticator {
  return (headers) => (bearerMatches(headers.authorization, token) ? { kind: "admin" } : undefined);
}

export interface Request {
  /** Who it acts for; set on `auth: "admin"` routes, undefined on public ones. */
  principal?: Principal;
  method: string;
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
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
  /** `admin` routes require `Authorization: Bearer <ADMIN_TOKEN>`. */
  auth: "admin" | "none";
  handler: Handler;
  /** Its entry in the OpenAPI document (./openapi.ts); routes without one are not documented. */
  doc?: OperationDoc;
}

/** An error a caller can act on: becomes `{ error: { code, message, details } }` with `status`. */
export class HttpError extends Error {
  override name = "HttpError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export interface ServerOptions {
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

export function bearerMatches(header: string | undefined, token: string): boolean {
  const given = /^Bearer (.+)$/i.exec(header ?? "")?.[1] ?? "";
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new HttpError(413, "payload_too_large", `Body is ${declared} bytes; the limit is ${limit}.`));
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new HttpError(413, "payload_too_large", `Body exceeds the limit of ${limit} bytes.`));
        req.removeAllListeners("data");
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    // The client went away mid-body: its request is over, and this is no server fault (not a 5xx).
    const aborted = () => reject(new HttpError(400, "request_aborted", "The request body was cut off before its end."));
    req.on("error", aborted);
    req.on("aborted", aborted);
  });
}

/** An early answer drains at least this much of a body still arriving (or 8 × the body limit). */
export const DRAIN_AT_LEAST_BYTES = 16 * 1024 * 1024;
/** …for at most this long. */
export const DRAIN_TIMEOUT_MS = 15_000;

/**
 * Reads and discards what is left of a request body, up to `maxBytes` and DRAIN_TIMEOUT_MS.
 * True when the body ended: the connection can then carry the answer and stay usable.
 */
function drainRequest(req: IncomingMessage, maxBytes: number): Promise<boolean> {
  if (req.complete) return Promise.resolve(true);
  return new Promise((resolve) => {
    let seen = 0;
    const finish = (ended: boolean) => {
      clearTimeout(timer);
      req.off("data", count);
      req.off("end", onEnd);
      req.off("error", onFail);
      req.off("close", onFail);
      resolve(ended);
    };
    const count = (chunk: Buffer) => { seen += chunk.length; if (seen > maxBytes) finish(false); };
    const onEnd = () => finish(true);
    const onFail = () => finish(req.complete);
    const timer = setTimeout(() => finish(false), DRAIN_TIMEOUT_MS);
    timer.unref?.();
    req.on("data", count);
    req.on("end", onEnd);
    req.on("error", onFail);
    req.on("close", onFail);
    req.resume();
  });
}

/**
 * Sends `response` once the request body is read. An answer given before the body was read (a
 * 413, a 401 or a 405 for a large upload) is useless if the connection is closed while the sender
 * is still writing: it gets EPIPE or a reset, never the status, and retries a request that cannot
 * succeed. So the rest of the body is read and thrown away first (bounded); past the bound the
 * answer goes out with `connection: close`, and the socket is closed once it is written.
 */
async function answer(req: IncomingMessage, res: ServerResponse, response: Response, drainBytes: number): Promise<void> {
  const ended = await drainRequest(req, drainBytes);
  if (res.headersSent || res.destroyed) return;
  if (!ended) {
    send(res, { ...response, headers: { ...response.headers, connection: "close" } });
    res.once("finish", () => req.socket.destroySoon?.());
    return;
  }
  send(res, response);
}

export function send(res: ServerResponse, response: Response): void {
  const headers: Record<string, string> = { ...response.headers };
  let payload: string | Buffer | undefined;
  if (response.body === undefined) payload = undefined;
  else if (typeof response.body === "string" || Buffer.isBuffer(response.body)) payload = response.body;
  else {
    payload = JSON.stringify(response.body);
    headers["content-type"] ??= "application/json; charset=utf-8";
  }
  res.writeHead(response.status, headers);
  res.end(payload);
}

export function errorResponse(error: HttpError): Response {
  const body: { error: { code: string; message: string; details?: unknown } } = {
    error: { code: error.code, message: error.message },
  };
  if (error.details !== undefined) body.error.details = error.details;
  return { status: error.status, headers: error.headers, body };
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

/** Builds the request handler; exported apart from the server so tests can mount it anywhere. */
export function createHandler(options: ServerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const routes = options.routes.map(compile);
  const authenticate = options.authenticate ?? bearerAuthenticator(options.adminToken);
  const limit = options.maxBodyBytes ?? 1024 * 1024;

  const dispatch = async (req: IncomingMessage): Promise<Response> => {
    const url = requestUrl(req.url ?? "/");
    const method = (req.method ?? "GET").toUpperCase();
    const allowed = new Set<string>();
    for (const route of routes) {
      const m = route.pattern.exec(url.pathname);
      if (!m) continue;
      allowed.add(route.method);
      if (route.method !== method && !(method === "HEAD" && route.method === "GET")) continue;
      const principal = route.auth === "admin" ? await authenticate(req.headers) : undefined;
      if (route.auth === "admin" && !principal) {
        throw new HttpError(401, "unauthorized", "Missing or wrong bearer token: send `Authorization: Bearer <ADMIN_TOKEN>`.", undefined, { "www-authenticate": "Bearer" });
      }
      const params: Record<string, string> = {};
      route.names.forEach((name, i) => {
        try {
          params[name] = decodeURIComponent(m[i + 1] ?? "");
        } catch {
          throw new HttpError(400, "bad_path", `Path parameter ${name} is not valid percent-encoding.`);
        }
      });
      let cached: Promise<Buffer> | undefined;
      const body = () => (cached ??= readBody(req, limit));
      return route.handler({
        principal,
        method,
        path: url.pathname,
        params,
        query: url.searchParams,
        headers: req.headers,
        body,
        async json<T>() {
          const raw = await body();
          const type = req.headers["content-type"];
          if ((type !== undefined || raw.length > 0) && !isJsonType(type)) {
            throw new HttpError(415, "unsupported_media_type", `The body must be JSON: send \`content-type: application/json\`${type ? `, not ${JSON.stringify(type.slice(0, 100))}` : ""}.`);
          }
          if (raw.length === 0) throw new HttpError(400, "invalid_json", "The body is empty; send a JSON document.");
          try {
            return JSON.parse(raw.toString("utf8")) as T;
          } catch (e) {
            throw new HttpError(400, "invalid_json", `The body is not valid JSON: ${(e as Error).message}`);
          }
        },
      });
    }
    if (allowed.size > 0) {
      if (allowed.has("GET")) allowed.add("HEAD");
      const allow = [...allowed].sort().join(", ");
      throw new HttpError(405, "method_not_allowed", `${method} is not allowed on ${url.pathname}; use ${allow}.`, undefined, { allow });
    }
    throw new HttpError(404, "not_found", `No route for ${method} ${url.pathname}.`);
  };

  // What an early answer (413, 401, 405…) reads and discards of a body still arriving.
  const drainBytes = Math.max(8 * limit, DRAIN_AT_LEAST_BYTES);

  return (req, res) => {
    dispatch(req)
      .then((response) => answer(req, res, response, drainBytes))
      .catch((error: unknown) => {
        let httpError = error instanceof HttpError ? error : options.mapError?.(error);
        if (!httpError) {
          const path = req.url?.split("?")[0] ?? "";
          failuresOf(options.logger).record(`http:500:${req.method} /${path.split("/")[1] ?? ""}`, "error", { err: error, method: req.method, path }, "unhandled error in request");
          httpError = new HttpError(500, "internal_error", "Internal error; the server log has the details.");
        }
        if (!res.headersSent) return answer(req, res, errorResponse(httpError), drainBytes);
        res.end();
      });
  };
}

export function createHttpServer(options: ServerOptions): Server {
  const server = createServer(createHandler(options));
  server.keepAliveTimeout = 65_000;
  // A malformed request line or header never reaches a route: answer 400, not a crash.
  server.on("clientError", (_err, socket) => {
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
    else socket.destroy();
  });
  return server;
}
