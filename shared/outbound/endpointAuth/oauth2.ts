/**
 * OAuth 2.0 client credentials (RFC 6749 §4.4): one token request, and what its answer means.
 *
 * | token endpoint's answer | class | the delivery |
 * |---|---|---|
 * | 2xx with `access_token` (token_type Bearer) | – | sent with `Authorization: Bearer …` |
 * | no answer (refused, reset, DNS, TLS, timeout), 408, 425, 429, 5xx | `auth_token_unavailable` | retried (backoff) |
 * | 400 (`invalid_client`, `invalid_scope`, …), 401, 403, any other status | `auth_token_rejected` | dead-lettered: a misconfiguration that retrying will not fix |
 * | 2xx without a usable token (not JSON, no access_token, another token_type) | `auth_token_invalid_response` | dead-lettered |
 * | the token URL refused by the destination policy | `auth_token_destination_refused` | dead-lettered |
 *
 * The token endpoint's answer excerpt goes into the attempt's `responseExcerpt`; the client
 * secret never does (it is only in the request).
 */
import { classifyError, classifyStatus, type ExchangeResponse, type Transport } from "../transport.js";
import type { StoredAuth } from "./config.js";

export type Oauth2Config = Extract<StoredAuth, { kind: "oauth2ClientCredentials" }>;

export type TokenFailureClass = "auth_token_unavailable" | "auth_token_rejected" | "auth_token_invalid_response" | "auth_token_destination_refused";

export type TokenResult =
  | { ok: true; token: string; /** Seconds the token is valid for, as the endpoint said; null when it did not. */ expiresIn: number | null }
  | { ok: false; errorClass: TokenFailureClass; retryable: boolean; /** For the attempt log: what the endpoint answered (no secret). */ detail: string };

/** Whether a failure class is worth retrying (the endpoint may come back) or a misconfiguration. */
export const isRetryableTokenFailure = (errorClass: string): boolean => errorClass === "auth_token_unavailable";

/** The form and headers of the token request (client authentication as configured). */
export function tokenRequest(config: Oauth2Config): { headers: Record<string, string>; body: string } {
  const form = new URLSearchParams({ grant_type: "client_credentials" });
  if (config.scope) form.set("scope", config.scope);
  if (config.audience) form.set("audience", config.audience);
  for (const [name, value] of Object.entries(config.parameters)) form.set(name, value);
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded", accept: "application/json" };
  if (config.clientAuthentication === "body") {
    form.set("client_id", config.clientId);
    form.set("client_secret", config.clientSecret);
  } else {
    // RFC 6749 §2.3.1: each part form-urlencoded before the Basic encoding.
    const encode = (s: string) => encodeURIComponent(s).replace(/%20/g, "+");
    headers.authorization = `Basic ${Buffer.from(`${encode(config.clientId)}:${encode(config.clientSecret)}`).toString("base64")}`;
  }
  return { headers, body: form.toString() };
}

/** What a token endpoint's HTTP answer means. */
export function interpretTokenResponse(where: string, res: ExchangeResponse): TokenResult {
  const excerpt = res.body.slice(0, 300);
  const result = classifyStatus(res.status);
  if (result === "retryable") return { ok: false, errorClass: "auth_token_unavailable", retryable: true, detail: `token endpoint ${where} answered ${res.status}: ${excerpt}` };
  if (result !== "delivered") {
    let reason = "";
    try {
      const error = (JSON.parse(res.body) as { error?: unknown }).error;
      if (typeof error === "string") reason = ` (${error})`;
    } catch { /* not JSON: the excerpt says what it was */ }
    return { ok: false, errorClass: "auth_token_rejected", retryable: false, detail: `token endpoint ${where} refused the client credentials with ${res.status}${reason}: ${excerpt}` };
  }
  let parsed: { access_token?: unknown; token_type?: unknown; expires_in?: unknown };
  try {
    parsed = JSON.parse(res.body) as typeof parsed;
  } catch {
    return { ok: false, errorClass: "auth_token_invalid_response", retryable: false, detail: `token endpoint ${where} answered ${res.status} without JSON: ${excerpt}` };
  }
  if (typeof parsed?.access_token !== "string" || parsed.access_token.length === 0 || /[\r\n]/.test(parsed.access_token)) {
    return { ok: false, errorClass: "auth_token_invalid_response", retryable: false, detail: `token endpoint ${where} answered ${res.status} without an access_token` };
  }
  if (typeof parsed.token_type === "string" && parsed.token_type.toLowerCase() !== "bearer") {
    return { ok: false, errorClass: "auth_token_invalid_response", retryable: false, detail: `token endpoint ${where} issued a ${parsed.token_type} token; only Bearer tokens are supported` };
  }
  const expiresIn = typeof parsed.expires_in === "number" && parsed.expires_in > 0 ? parsed.expires_in
    : typeof parsed.expires_in === "string" && Number(parsed.expires_in) > 0 ? Number(parsed.expires_in) : null;
  return { ok: true, token: parsed.access_token, expiresIn };
}

/** Asks the token endpoint for a token through `transport` (its destination policy and deadline). */
export async function requestToken(transport: Transport, config: Oauth2Config, timeoutMs?: number): Promise<TokenResult> {
  const where = tokenUrlForLog(config.tokenUrl);
  if (!transport.exchange) return { ok: false, errorClass: "auth_token_unavailable", retryable: true, detail: "this relay's transport cannot send token requests" };
  const { headers, body } = tokenRequest(config);
  try {
    return interpretTokenResponse(where, await transport.exchange({ url: config.tokenUrl, headers, body, ...(timeoutMs ? { timeoutMs } : {}) }));
  } catch (error) {
    const errorClass = classifyError(error);
    if (errorClass === "destination_refused") {
      return { ok: false, errorClass: "auth_token_destination_refused", retryable: false, detail: `token endpoint ${where}: ${(error as Error).message}` };
    }
    return { ok: false, errorClass: "auth_token_unavailable", retryable: true, detail: `token endpoint ${where} did not answer (${errorClass})` };
  }
}

/** The token URL without its query (which might carry something the operator considers private). */
function tokenUrlForLog(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}

/**
 * When to fetch the next token, in seconds from now: before it expires, by a fifth of its lifetime
 * and at most a minute, so a delivery never leaves with a token about to lapse in flight. A token
 * without `expires_in` is kept DEFAULT_TOKEN_SECONDS (a 401 refreshes it sooner).
 */
export function refreshInSeconds(expiresIn: number | null): number {
  const lifetime = expiresIn ?? DEFAULT_TOKEN_SECONDS;
  return Math.max(lifetime - Math.min(60, lifetime / 5), 0.5);
}

/** How long a token whose endpoint gave no `expires_in` is used. */
export const DEFAULT_TOKEN_SECONDS = 300;
