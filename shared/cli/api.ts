/**
 * The management API as the CLI sees it: the typed client generated from its OpenAPI document
 * (shared/client/, openapi-fetch over openapi-typescript's types), so a command that names a path,
 * a parameter or a field the API does not have does not compile. Every failure becomes an
 * `ApiError` whose message says what went wrong and what to do, never a stack trace.
 */
import type { ClientPathsWithMethod, MaybeOptionalInit, MethodResponse } from "openapi-fetch";
import { apiErrorOf, createWebhooksClient, type BodyOf, type paths, type QueryOf, type WebhooksClient } from "../client/index.js";

export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    message: string,
    /** HTTP status, or 0 when the server could not be reached. */
    readonly status: number,
    /** The server's error code (`{ error: { code } }`), when it sent one. */
    readonly code?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface ApiClientOptions {
  /** Base URL of the platform, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** An API key or the ADMIN_TOKEN. */
  token: string;
  /**
   * Where the token came from (`--token`, `WEBHOOKS_API_KEY`, `ADMIN_TOKEN`) and the other sources
   * that were set but not used: a 401 names them, since a stale key silently wins over a good one.
   */
  tokenSource?: { name: string; alsoSet: string[] };
  /** Per-request timeout in milliseconds. Default: 30 000. */
  timeoutMs?: number;
}

type Method = "get" | "post" | "patch" | "delete";
type RequiredKeys<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? never : K }[keyof T];
/** The request's options (`params.path`, `params.query`, `body`), required when the operation has required ones. */
type InitArgs<Init> = RequiredKeys<Init> extends never ? [init?: Init] : [init: Init];

/**
 * One operation, typed by the document: `GET("/subscriptions/{id}", { params: { path: { id } } })`
 * resolves to the answer's data (the 2xx body) or throws an `ApiError`. The options are the
 * operation's type itself, not one inferred from the call (as openapi-fetch's are), so a body or
 * query field the operation does not have is refused too, not only a missing or mistyped one.
 */
export type ApiCall<M extends Method> = <P extends ClientPathsWithMethod<WebhooksClient, M>>(
  path: P,
  ...init: InitArgs<MaybeOptionalInit<paths[P], M>>
) => Promise<MethodResponse<WebhooksClient, M, P>>;

/** The 2xx data of an operation, by path and method: `ApiData<"/subscriptions/{id}", "get">`. */
export type ApiData<P extends keyof paths, M extends Method = "get"> = P extends ClientPathsWithMethod<WebhooksClient, M> ? MethodResponse<WebhooksClient, M, P> : never;

/** The JSON body an operation takes: `ApiBody<"/subscriptions", "post">`. */
export type ApiBody<P extends keyof paths, M extends Method> = BodyOf<P, M>;

/** The query an operation takes: `ApiQuery<"/deliveries">`. */
export type ApiQuery<P extends keyof paths, M extends Method = "get"> = QueryOf<P, M>;

export interface ApiClient {
  GET: ApiCall<"get">;
  POST: ApiCall<"post">;
  PATCH: ApiCall<"patch">;
  DELETE: ApiCall<"delete">;
}

/** Builds a client on the generated one; path parameters are encoded by it. */
export function createApiClient(options: ApiClientOptions): ApiClient {
  const base = options.url.replace(/\/+$/, "");
  const basePath = URL.canParse(base) ? new URL(base).pathname.replace(/\/+$/, "") : "";
  const timeoutMs = options.timeoutMs ?? 30_000;

  const client = createWebhooksClient({
    url: base,
    token: options.token,
    headers: { accept: "application/json" },
    fetch: async (request) => {
      try {
        return await fetch(request, { redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
      } catch (error) {
        const reason = (error as Error).name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : ((error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message);
        throw new ApiError(`Could not reach the platform at ${base} (${reason}). Is it running? Set --url or WEBHOOKS_URL.`, 0, undefined, { cause: error });
      }
    },
  });

  /** The answer's body as JSON, or the ApiError it makes. The path in messages is the one requested, without the base or the query. */
  async function call(method: Uppercase<Method>, path: string, init: Record<string, unknown> = {}): Promise<unknown> {
    let url: URL | undefined;
    const { data, error, response } = await client.request(method.toLowerCase() as never, path as never, {
      ...init,
      // Read as text and parsed here: a body that is not JSON gets a message, not a SyntaxError.
      parseAs: "text",
      middleware: [{ onRequest: ({ request }: { request: Request }) => { url = new URL(request.url); } }],
    } as never) as { data?: string; error?: unknown; response: Response };
    const shown = `${method} ${url ? url.pathname.slice(basePath.length) || "/" : path}`;
    if (!response.ok) {
      const parsed = typeof error === "string" ? undefined : error;
      const err = apiErrorOf(parsed);
      if (response.status === 401) throw new ApiError(refusedTokenMessage(options), 401, err?.code);
      const what = err?.message ?? ((typeof error === "string" ? error.slice(0, 200) : "") || response.statusText);
      throw new ApiError(`${shown} failed with ${response.status}${err?.code ? ` ${err.code}` : ""}: ${what}`, response.status, err?.code);
    }
    if (!data) return undefined;
    try {
      return JSON.parse(data);
    } catch {
      throw new ApiError(`${shown} answered ${response.status} with a body that is not JSON; is --url pointing at the platform?`, response.status);
    }
  }

  return {
    GET: ((path: string, init?: Record<string, unknown>) => call("GET", path, init)) as ApiCall<"get">,
    // A POST without a body sends `{}`: the API's operations without one accept it, and some with an optional one need JSON.
    POST: ((path: string, init?: Record<string, unknown>) => call("POST", path, { body: {}, ...init })) as ApiCall<"post">,
    PATCH: ((path: string, init?: Record<string, unknown>) => call("PATCH", path, init)) as ApiCall<"patch">,
    DELETE: ((path: string, init?: Record<string, unknown>) => call("DELETE", path, init)) as ApiCall<"delete">,
  };
}

const KEY_ID = /^whk_([0-9a-f]{16})_/;

/** The token as it may be shown: an API key by its id (never its secret part), another by its length. */
function describeToken(token: string): string {
  const id = KEY_ID.exec(token)?.[1];
  if (id) return `key key_${id}`;
  if (token.startsWith("whk_")) return `${token.slice(0, 12)}…, not a well-formed API key`;
  return `${token.length} characters`;
}

function refusedTokenMessage({ token, tokenSource }: ApiClientOptions): string {
  const which = tokenSource ? `, the one from ${tokenSource.name} (${describeToken(token)})` : "";
  const others = tokenSource?.alsoSet.length
    ? ` ${tokenSource.alsoSet.join(" and ")} ${tokenSource.alsoSet.length === 1 ? "is" : "are"} set too but ${tokenSource.name} comes first: unset it, or pass the one you mean with --token.`
    : " Pass an API key or the ADMIN_TOKEN printed at start with --token (or set WEBHOOKS_API_KEY / ADMIN_TOKEN).";
  return `The platform refused the token (401)${which}: wrong, or a revoked key.${others}`;
}
