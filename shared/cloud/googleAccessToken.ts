/**
 * An OAuth access token of the service account a Cloud Run function runs as, from the metadata
 * server, cached until a minute before it expires. This is all the Google REST calls of the
 * functions need (Pub/Sub publish, Cloud Storage claim-checks), in place of google-auth-library
 * and the gRPC stack the client libraries bring.
 */
import { googleErrorText, httpRequest } from "./httpRequest.js";

/** Google's documented override of the metadata server's host (google-auth-library honours it too). */
const METADATA_HOST_VARIABLE = "GCE_METADATA_HOST";
const TOKEN_PATH = "/computeMetadata/v1/instance/service-accounts/default/token";
/** Refresh this long before expiry: a request signed now must not arrive with a dead token. */
const REFRESH_MARGIN_MS = 60_000;

export interface AccessTokenOptions {
  /** Metadata server host[:port]. Default: `GCE_METADATA_HOST`, else `metadata.google.internal`. */
  metadataHost?: string;
  /** Default: 5 000 ms (the metadata server answers locally, in milliseconds). */
  timeoutMs?: number;
  now?: () => number;
}

/** No token: the function is not on Google Cloud, or its service account is missing. */
export class AccessTokenError extends Error {
  override name = "AccessTokenError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** A provider of bearer tokens; concurrent callers share one metadata request. */
export type AccessTokenProvider = () => Promise<string>;

/**
 * @example
 * const token = metadataAccessToken();
 * await httpRequest(url, { headers: { authorization: `Bearer ${await token()}` } });
 */
export function metadataAccessToken(options: AccessTokenOptions = {}): AccessTokenProvider {
  const host = options.metadataHost ?? process.env[METADATA_HOST_VARIABLE] ?? "metadata.google.internal";
  const url = `http://${host}${TOKEN_PATH}`;
  const now = options.now ?? Date.now;
  let cached: { token: string; refreshAt: number } | undefined;
  let inFlight: Promise<string> | undefined;

  async function fetchToken(): Promise<string> {
    let response;
    try {
      response = await httpRequest(url, { headers: { "metadata-flavor": "Google" }, timeoutMs: options.timeoutMs ?? 5_000 });
    } catch (error) {
      throw new AccessTokenError(`No access token: the metadata server at ${host} did not answer (${(error as Error).message}). Outside Google Cloud, point the function at an emulator or set ${METADATA_HOST_VARIABLE}.`, { cause: error });
    }
    if (response.status !== 200) {
      throw new AccessTokenError(`No access token: the metadata server at ${host} answered ${response.status} (${googleErrorText(response)}); check the function's service account.`);
    }
    let body: { access_token?: unknown; expires_in?: unknown };
    try {
      body = JSON.parse(response.body.toString("utf8")) as typeof body;
    } catch {
      throw new AccessTokenError(`No access token: the metadata server at ${host} answered something other than JSON.`);
    }
    if (typeof body.access_token !== "string" || body.access_token === "" || typeof body.expires_in !== "number") {
      throw new AccessTokenError(`No access token: the metadata server at ${host} answered without access_token and expires_in.`);
    }
    cached = { token: body.access_token, refreshAt: now() + body.expires_in * 1000 - REFRESH_MARGIN_MS };
    return body.access_token;
  }

  return () => {
    if (cached && now() < cached.refreshAt) return Promise.resolve(cached.token);
    inFlight ??= fetchToken().finally(() => { inFlight = undefined; });
    return inFlight;
  };
}
