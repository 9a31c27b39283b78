/**
 * The management API as the CLI sees it: JSON over HTTP with a bearer token. Every failure becomes
 * an `ApiError` whose message says what went wrong and what to do, never a stack trace.
 */

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

export interface ApiClient {
  get<T = unknown>(path: string, query?: Record<string, string | undefined>): Promise<T>;
  post<T = unknown>(path: string, body?: unknown): Promise<T>;
  patch<T = unknown>(path: string, body: unknown): Promise<T>;
  delete<T = unknown>(path: string): Promise<T>;
}

/** Builds a client; `path` segments taken from user input must be encoded by the caller (`seg`). */
export function createApiClient(options: ApiClientOptions): ApiClient {
  const base = options.url.replace(/\/+$/, "");
  const timeoutMs = options.timeoutMs ?? 30_000;

  async function call<T>(method: "GET" | "POST" | "PATCH" | "DELETE", path: string, body?: unknown, query?: Record<string, string | undefined>): Promise<T> {
    const url = new URL(base + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${options.token}`,
          accept: "application/json",
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
        redirect: "manual",
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      const reason = (error as Error).name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : ((error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message);
      throw new ApiError(`Could not reach the platform at ${base} (${reason}). Is it running? Set --url or WEBHOOKS_URL.`, 0, undefined, { cause: error });
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      const err = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
      if (res.status === 401) throw new ApiError(refusedTokenMessage(options), 401, err?.code);
      const what = err?.message ?? (text.slice(0, 200) || res.statusText);
      throw new ApiError(`${method} ${path} failed with ${res.status}${err?.code ? ` ${err.code}` : ""}: ${what}`, res.status, err?.code);
    }
    if (text && parsed === undefined) throw new ApiError(`${method} ${path} answered ${res.status} with a body that is not JSON; is --url pointing at the platform?`, res.status);
    return parsed as T;
  }

  return {
    get: (path, query) => call("GET", path, undefined, query),
    post: (path, body) => call("POST", path, body ?? {}),
    patch: (path, body) => call("PATCH", path, body),
    delete: (path) => call("DELETE", path),
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

/** Encodes one path segment taken from user input. */
export function seg(value: string): string {
  return encodeURIComponent(value);
}
