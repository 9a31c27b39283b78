/**
 * A `TokenCredential` for code that runs in Azure Functions (or App Service) with a managed
 * identity, in place of `@azure/identity` + MSAL (~270 KiB minified) in the function bundles.
 *
 * The platform sets `IDENTITY_ENDPOINT` (a local URL) and `IDENTITY_HEADER` (a secret) in the
 * function's environment. A token is one GET:
 *
 *   GET $IDENTITY_ENDPOINT?api-version=2019-08-01&resource=<resource>[&client_id=<user-assigned id>]
 *   X-IDENTITY-HEADER: $IDENTITY_HEADER
 *   → 200 { "access_token": "…", "expires_on": "<epoch seconds>", "token_type": "Bearer", … }
 *
 * Tokens are cached per resource. Within `refreshMarginMs` of its expiry a held token is still
 * returned at once while one background request renews it; a failed renewal is remembered and the
 * next one waits `failureBackoffMs` (doubling after each further failure, up to a minute). Only a
 * caller with no valid token waits for the endpoint: concurrent callers share one request, which
 * takes at most 3 × `timeoutMs` plus the retry pauses; in the back-off after a failure such a caller
 * gets that failure at once. A caller's `abortSignal` rejects its own wait with an `AbortError`;
 * the shared request goes on for the others. 429, 5xx, network errors and timeouts are retried
 * twice. Any other failure is a `ManagedIdentityError` that names the setting to check; no
 * message ever contains a token or the identity header.
 * Requests go through `node:http` (httpRequest.ts), not `fetch`, whose first use slows a cold start.
 */
import type { AccessToken, GetTokenOptions, TokenCredential } from "@azure/core-auth";
import { httpRequest, type HttpResponse } from "./httpRequest.js";

type AbortSignalLike = NonNullable<GetTokenOptions["abortSignal"]>;

export const IDENTITY_API_VERSION = "2019-08-01";
const DEFAULT_SUFFIX = "/.default";

export interface ManagedIdentityOptions {
  /** Client id of a user-assigned identity. Absent: the app's system-assigned identity. */
  clientId?: string;
  /** The setting `clientId` came from, named in errors (e.g. `AZURE_CLIENT_ID`). */
  clientIdSetting?: string;
  /** Where IDENTITY_ENDPOINT and IDENTITY_HEADER are read. Default: `process.env`. */
  env?: Record<string, string | undefined>;
  /** Ask for a new token this long before the held one expires. Default: 300 000 (5 min). */
  refreshMarginMs?: number;
  /** Deadline of one request to the endpoint. Default: 10 000 ms. */
  timeoutMs?: number;
  /** Pause before retry n (1, 2) is n × this. Default: 200 ms. */
  retryDelayMs?: number;
  /** After a failed token request, ask again no sooner than this; doubles per further failure, up to 60 000. Default: 5 000 ms. */
  failureBackoffMs?: number;
  now?: () => number;
}

/** The identity endpoint is missing, unreachable, or refused; the message says what to check. */
export class ManagedIdentityError extends Error {
  override name = "ManagedIdentityError";
  /** HTTP status of the endpoint's answer, when there was one. */
  readonly status?: number;
  constructor(message: string, options?: { cause?: unknown; status?: number }) {
    super(message, { cause: options?.cause });
    this.status = options?.status;
  }
}

/** A failure worth another try (429, 5xx, network, timeout). */
class Transient extends ManagedIdentityError {}

/** The caller's `abortSignal` fired while it waited for a token (the name the Azure SDKs check). */
export class AbortError extends Error {
  override name = "AbortError";
}

/** A held token this close to its expiry is no longer handed out (it could expire in flight). */
const EXPIRY_SLACK_MS = 30_000;
const MAX_FAILURE_BACKOFF_MS = 60_000;

/** What the credential knows about one resource. */
interface Slot {
  token?: AccessToken;
  /** The one request in flight for this resource, shared by every caller. */
  refreshing?: Promise<AccessToken>;
  /** The last request's failure (cleared by a success), and how long to leave the endpoint alone after it. */
  failure?: { at: number; error: unknown; backoffMs: number };
}

/**
 * @throws ManagedIdentityError at construction when IDENTITY_ENDPOINT or IDENTITY_HEADER is not set.
 * @example
 * const credential = new ManagedIdentityCredential({ clientId: process.env.AZURE_CLIENT_ID });
 * new ServiceBusClient("my-ns.servicebus.windows.net", credential);
 */
export class ManagedIdentityCredential implements TokenCredential {
  private readonly endpoint: URL;
  private readonly secret: string;
  private readonly slots = new Map<string, Slot>();
  private readonly now: () => number;

  constructor(private readonly options: ManagedIdentityOptions = {}) {
    const env = options.env ?? process.env;
    const missing = ["IDENTITY_ENDPOINT", "IDENTITY_HEADER"].filter((name) => !env[name]);
    if (missing.length > 0) {
      throw new ManagedIdentityError(
        `Managed identity is not available: ${missing.join(" and ")} ${missing.length > 1 ? "are" : "is"} not set. ` +
        "Azure sets IDENTITY_ENDPOINT and IDENTITY_HEADER in a Function App that has a managed identity; " +
        "elsewhere, configure a connection string instead.",
      );
    }
    try {
      this.endpoint = new URL(env.IDENTITY_ENDPOINT!);
    } catch {
      throw new ManagedIdentityError(`IDENTITY_ENDPOINT is not a URL: ${JSON.stringify(env.IDENTITY_ENDPOINT)}.`);
    }
    this.secret = env.IDENTITY_HEADER!;
    this.now = options.now ?? Date.now;
  }

  async getToken(scopes: string | string[], options?: GetTokenOptions): Promise<AccessToken> {
    const resource = resourceOf(scopes);
    const signal = options?.abortSignal;
    if (signal?.aborted) throw aborted(resource);
    let slot = this.slots.get(resource);
    if (!slot) this.slots.set(resource, (slot = {}));
    const now = this.now();
    const held = slot.token;
    if (held && held.expiresOnTimestamp - (this.options.refreshMarginMs ?? 300_000) > now) return held;
    if (held && held.expiresOnTimestamp - EXPIRY_SLACK_MS > now) {
      // Due for renewal but still valid: hand it out now and renew behind it (one request at a
      // time, none during the back-off); a failure is recorded in the slot, not thrown here.
      if (slot.refreshing || !this.backingOff(slot, now)) this.refresh(resource, slot).catch(() => {});
      return held;
    }
    if (!slot.refreshing && slot.failure && this.backingOff(slot, now)) throw remembered(slot.failure, now);
    return raceAbort(this.refresh(resource, slot), signal, resource);
  }

  private backingOff(slot: Slot, now: number): boolean {
    return slot.failure !== undefined && now - slot.failure.at < slot.failure.backoffMs;
  }

  /** The request in flight for `resource`, or a new one; it runs with no caller's signal. */
  private refresh(resource: string, slot: Slot): Promise<AccessToken> {
    slot.refreshing ??= this.fetchWithRetries(resource)
      .then(
        (token) => {
          slot.token = token;
          slot.failure = undefined;
          return token;
        },
        (error: unknown) => {
          const first = this.options.failureBackoffMs ?? 5_000;
          const backoffMs = slot.failure ? Math.min(slot.failure.backoffMs * 2, Math.max(first, MAX_FAILURE_BACKOFF_MS)) : first;
          slot.failure = { at: this.now(), error, backoffMs };
          throw error;
        },
      )
      .finally(() => { slot.refreshing = undefined; });
    return slot.refreshing;
  }

  private async fetchWithRetries(resource: string): Promise<AccessToken> {
    const pause = this.options.retryDelayMs ?? 200;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.fetchToken(resource);
      } catch (error) {
        if (!(error instanceof Transient) || attempt === 3) throw error;
        await new Promise((resolve) => setTimeout(resolve, attempt * pause));
      }
    }
  }

  private async fetchToken(resource: string): Promise<AccessToken> {
    const url = new URL(this.endpoint);
    url.searchParams.set("api-version", IDENTITY_API_VERSION);
    url.searchParams.set("resource", resource);
    if (this.options.clientId) url.searchParams.set("client_id", this.options.clientId);
    const whose = this.options.clientId
      ? `the user-assigned identity ${this.options.clientId}${this.options.clientIdSetting ? ` (${this.options.clientIdSetting})` : ""}`
      : "the system-assigned identity";
    const timeoutMs = this.options.timeoutMs ?? 10_000;
    let response: HttpResponse;
    try {
      response = await httpRequest(url.href, { headers: { "x-identity-header": this.secret, accept: "application/json" }, timeoutMs });
    } catch (error) {
      throw new Transient(`The managed identity endpoint (IDENTITY_ENDPOINT, ${this.endpoint.origin}${this.endpoint.pathname}) did not answer a token request for ${resource} for ${whose}: ${(error as Error).message}.`, { cause: error });
    }
    const text = response.body.toString("utf8");
    if (response.status !== 200) {
      const detail = errorDetail(text);
      const message = `The managed identity endpoint (IDENTITY_ENDPOINT) answered ${response.status} asking a token for ${resource} for ${whose}${detail ? `: ${detail}` : ""}. ${hint(response.status, this.options)}`;
      const retryable = response.status === 429 || response.status >= 500;
      throw retryable ? new Transient(message, { status: response.status }) : new ManagedIdentityError(message, { status: response.status });
    }
    return tokenFrom(text, resource, this.now());
  }
}

function aborted(resource: string): AbortError {
  return new AbortError(`The token request for ${resource} was aborted by its caller.`);
}

/** `work`, or an AbortError as soon as `signal` fires; `work` itself goes on for its other callers. */
function raceAbort<T>(work: Promise<T>, signal: AbortSignalLike | undefined, resource: string): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(aborted(resource));
    signal.addEventListener("abort", onAbort);
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** The last failure again, without asking the endpoint, while it is left alone after that failure. */
function remembered(failure: NonNullable<Slot["failure"]>, now: number): ManagedIdentityError {
  const error = failure.error as Error;
  const wait = Math.max(1, Math.ceil((failure.at + failure.backoffMs - now) / 1000));
  return new ManagedIdentityError(
    `${error.message} (Failed ${Math.round((now - failure.at) / 1000)} s ago; the endpoint is asked again in ${wait} s.)`,
    { cause: error, status: error instanceof ManagedIdentityError ? error.status : undefined },
  );
}

/** `https://servicebus.azure.net//.default` → `https://servicebus.azure.net/`: the v1 resource a scope names. */
export function resourceOf(scopes: string | string[]): string {
  const list = typeof scopes === "string" ? [scopes] : scopes;
  if (list.length !== 1 || !list[0]) {
    throw new ManagedIdentityError(`A managed identity token is for one resource; got scopes ${JSON.stringify(list)}.`);
  }
  const scope = list[0];
  return scope.endsWith(DEFAULT_SUFFIX) ? scope.slice(0, -DEFAULT_SUFFIX.length) : scope;
}

function tokenFrom(text: string, resource: string, now: number): AccessToken {
  let body: { access_token?: unknown; expires_on?: unknown; expires_in?: unknown };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    throw new ManagedIdentityError(`The managed identity endpoint (IDENTITY_ENDPOINT) answered 200 with a body that is not JSON, asking a token for ${resource}.`);
  }
  if (typeof body?.access_token !== "string" || body.access_token === "") {
    throw new ManagedIdentityError(`The managed identity endpoint (IDENTITY_ENDPOINT) answered 200 without an access_token, asking a token for ${resource}.`);
  }
  const expiresOn = expiry(body.expires_on, body.expires_in, now);
  if (expiresOn === undefined) {
    throw new ManagedIdentityError(`The managed identity endpoint (IDENTITY_ENDPOINT) answered a token for ${resource} without a readable expires_on (${JSON.stringify(body.expires_on)}).`);
  }
  return { token: body.access_token, expiresOnTimestamp: expiresOn, tokenType: "Bearer" };
}

/** `expires_on` as epoch seconds (number or digits) or an ISO 8601 date; else `expires_in` seconds. */
function expiry(expiresOn: unknown, expiresIn: unknown, now: number): number | undefined {
  if (typeof expiresOn === "number" || (typeof expiresOn === "string" && /^\d+$/.test(expiresOn))) return Number(expiresOn) * 1000;
  if (typeof expiresOn === "string" && !Number.isNaN(Date.parse(expiresOn))) return Date.parse(expiresOn);
  if (typeof expiresIn === "number" || (typeof expiresIn === "string" && /^\d+$/.test(expiresIn))) return now + Number(expiresIn) * 1000;
  return undefined;
}

/** The endpoint's own explanation (its error bodies carry no token), shortened. */
function errorDetail(text: string): string {
  let detail = text;
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; error_description?: unknown; message?: unknown; Message?: unknown };
    const candidates = [typeof body.error === "object" ? body.error?.message : undefined, body.error_description, body.message, body.Message, typeof body.error === "string" ? body.error : undefined];
    detail = String(candidates.find((c) => typeof c === "string" && c !== "") ?? text);
  } catch { /* plain text */ }
  detail = detail.replace(/\s+/g, " ").trim();
  return detail.length > 300 ? `${detail.slice(0, 297)}...` : detail;
}

function hint(status: number, options: ManagedIdentityOptions): string {
  if (status === 400 && options.clientId) {
    return `Check that ${options.clientIdSetting ?? "the client id"} is the client id of an identity assigned to this Function App.`;
  }
  if (status === 400) return "Check that the Function App has a system-assigned identity, or set the client id of its user-assigned identity.";
  if (status === 401 || status === 403) return "The endpoint refused IDENTITY_HEADER; it changes when the app restarts, so read it from the environment, never copy it.";
  return "The endpoint is the platform's; retry later.";
}
