/**
 * The transport: one signed HTTP POST per delivery attempt, classified into what the relay should
 * do next. It owns a keep-alive connection pool (undici `Agent`, one pool per origin), applies the
 * destination policy on every connection, never follows redirects, bounds each attempt with one
 * deadline covering connect, headers and body, and reads at most a small excerpt of the response.
 *
 * | outcome     | when                                                                  |
 * |-------------|-----------------------------------------------------------------------|
 * | delivered   | 2xx                                                                   |
 * | retryable   | 408, 425, 429, 5xx, timeout, network error (refused, reset, DNS, TLS)  |
 * | gone        | 410: the receiver asks us to stop; the relay disables the subscription |
 * | permanent   | any other status (3xx included: redirects are not followed), refused destination, bad URL |
 */
import { performance } from "node:perf_hooks";
import { Agent, buildConnector } from "undici";
import { createDestinationPolicy, DESTINATION_REFUSED, type Resolver } from "./destinationPolicy.js";
import { postOnce } from "./postOnce.js";
import { parseRetryAfter } from "./retryPolicy.js";
import { parseRateLimit, type RateLimitInfo } from "./rateLimitHeaders.js";
import { signatureHeader } from "./signature.js";

export interface DeliveryRequest {
  url: string;
  /** Sent as `webhook-id`: the stable delivery id, the same on every attempt. */
  webhookId: string;
  /** Unix seconds, sent as `webhook-timestamp` and signed. */
  timestamp: number;
  /** The exact bytes signed and sent. */
  body: string;
  /** Active `whsec_…` secrets; one signature per secret. */
  secrets: string[];
  /** The subscription's custom headers; the transport's own (content-type, user-agent, webhook-*) always win. */
  headers?: Record<string, string>;
  /** This attempt's deadline in ms, at most the transport's `timeoutMs`. Default: the transport's `timeoutMs`. */
  timeoutMs?: number;
  /** mTLS (shared/outbound/endpointAuth): the client certificate to present; its connections are pooled apart. */
  clientCertificate?: ClientCertificate;
}

/** A TLS client identity: certificate and key (PEM), optionally the CA to trust for the endpoint (alone: trust only). */
export interface ClientCertificate {
  /** Names the identity (its pool): a new certificate needs a new id. */
  id: string;
  cert?: string;
  key?: string;
  ca?: string | null;
}

/** One POST that is not a delivery (an OAuth 2.0 token request): same destination policy, no signature. */
export interface ExchangeRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs?: number;
}

export interface ExchangeResponse {
  status: number;
  /** The response body as UTF-8, at most 16 KiB of it. */
  body: string;
}

export interface DeliveryOutcome {
  result: "delivered" | "retryable" | "permanent" | "gone";
  /** HTTP status, or null when no response arrived. */
  status: number | null;
  latencyMs: number;
  /** Stable machine-readable cause; null on success. See `ErrorClass`. */
  errorClass: string | null;
  /** The first `responseExcerptBytes` of the response body as UTF-8, or null without a response. */
  responseExcerpt: string | null;
  /** The receiver's `Retry-After`, in seconds, when it sent a parseable one. */
  retryAfterSeconds: number | null;
  /** What the receiver said about its rate limit (RateLimit-*, X-RateLimit-* headers), when it said anything. */
  rateLimit?: RateLimitInfo | null;
  /**
   * The request headers sent, for the attempt log (headersForLog: the values of custom and
   * authentication headers replaced); absent when nothing was sent.
   */
  requestHeaders?: Record<string, string> | null;
}

/** Headers whose values the attempt log keeps: the transport's own, which carry no secret. */
const LOGGED_HEADER_VALUES = new Set(["content-type", "user-agent", "webhook-id", "webhook-timestamp", "webhook-signature", "traceparent", "tracestate"]);
export const REDACTED_HEADER_VALUE = "[redacted]";

/**
 * `headers` as the attempt log keeps them: every name, but the value only of the transport's own
 * headers. A subscription's custom header values are stored encrypted (docs/secrets.md) and an
 * Authorization header is a credential: neither is written in clear beside each attempt.
 */
export function headersForLog(headers: Record<string, string>): Record<string, string> {
  const logged: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) logged[name] = LOGGED_HEADER_VALUES.has(name.toLowerCase()) ? value : REDACTED_HEADER_VALUE;
  return logged;
}

export interface Transport {
  deliver(req: DeliveryRequest): Promise<DeliveryOutcome>;
  /**
   * Sends one POST under the same destination policy and deadline (token requests of
   * shared/outbound/endpointAuth/oauth2.ts). Rejects on network errors and timeouts (classify them
   * with `classifyError`). Optional: a transport without it cannot serve OAuth 2.0 subscriptions.
   */
  exchange?(req: ExchangeRequest): Promise<ExchangeResponse>;
  /** Closes pooled connections after in-flight requests finish. */
  close(): Promise<void>;
}

/** The values `DeliveryOutcome.errorClass` takes. */
export type ErrorClass =
  | "http_status" | "redirect_refused" | "timeout" | "connection_refused" | "connection_reset"
  | "dns_failure" | "tls_error" | "network_unreachable" | "network_error" | "destination_refused" | "invalid_request";

export interface TransportOptions {
  /** SSRF allow-list: hostnames, `*.suffix`, IPs, CIDRs. Default: none. */
  allowedDestinations?: string[];
  /** Deadline of one attempt (connect + headers + body), ms. Default: 10000. */
  timeoutMs?: number;
  /** Keep-alive connections per origin. Default: 64. */
  connectionsPerOrigin?: number;
  /** Response body bytes kept for the attempt log. Default: 1024. */
  responseExcerptBytes?: number;
  /** Name resolution; injectable so tests can simulate DNS (rebinding). Default: system resolver. */
  resolve?: Resolver;
  /** `user-agent` header. Default: `multicloud-webhooks/0.1 (+standard-webhooks)`. */
  userAgent?: string;
}

/**
 * After the excerpt, at most this many more response bytes are drained without being kept, so the
 * keep-alive connection can be reused; beyond it the connection is dropped (a receiver streaming
 * megabytes costs us one connection, never memory).
 */
const DRAIN_LIMIT_BYTES = 64 * 1024;
/** Most bytes of an exchange's answer read (a token response is a few hundred). */
const EXCHANGE_BODY_BYTES = 16 * 1024;
/** Most client-certificate pools kept open at once. */
const MAX_CLIENT_CERTIFICATE_POOLS = 256;

/** The `user-agent` of every attempt (a listener's forwarded requests carry it too: docs/listen.md). */
export const DEFAULT_USER_AGENT = "multicloud-webhooks/0.1 (+standard-webhooks)";

/** Builds a transport. Invalid allow-list entries throw here. */
export function createTransport(options: TransportOptions = {}): Transport {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const excerptBytes = options.responseExcerptBytes ?? 1024;
  const userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
  const policy = createDestinationPolicy({ allowed: options.allowedDestinations ?? [], resolve: options.resolve });

  // Every connection goes through the policy: names via `lookup` (each resolved address checked,
  // defeating DNS rebinding), IP literals before dialling (sockets skip lookup for them), and the
  // peer address once connected, so no path reaches a refused address with our request.
  const connectorWith = (tls: Partial<Pick<ClientCertificate, "cert" | "key" | "ca">> = {}): buildConnector.connector => {
    const dial = buildConnector({ timeout: timeoutMs, lookup: policy.lookup, ...tls } as buildConnector.BuildOptions);
    const connect: buildConnector.connector = (opts, callback) => {
      try {
        policy.checkHost(opts.hostname);
      } catch (err) {
        callback(err as Error, null);
        return;
      }
      dial(opts, (err, socket) => {
        if (err || !socket) return callback(err ?? new Error("no socket"), null);
        const peer = socket.remoteAddress;
        const reason = peer && !policy.isAllowedHost(opts.hostname) ? policy.refusalFor(peer) : null;
        if (reason) {
          socket.destroy();
          return callback(Object.assign(new Error(`Destination ${opts.hostname} (${peer}) refused: ${reason}`), { code: DESTINATION_REFUSED }), null);
        }
        callback(null, socket);
      });
    };
    return connect;
  };
  const agentWith = (tls?: Partial<Pick<ClientCertificate, "cert" | "key" | "ca">>) => new Agent({
    connect: connectorWith(tls),
    connections: options.connectionsPerOrigin ?? 64,
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 60_000,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    pipelining: 1,
  });
  const agent = agentWith();
  /**
   * One pool per client certificate (mTLS subscriptions): a connection made with one identity must
   * never carry another subscription's request. Bounded; the oldest is closed when full.
   */
  const identified = new Map<string, Agent>();
  const agentFor = (certificate: ClientCertificate | undefined): Agent => {
    if (!certificate) return agent;
    let found = identified.get(certificate.id);
    if (!found) {
      if (identified.size >= MAX_CLIENT_CERTIFICATE_POOLS) {
        const [oldest, pool] = identified.entries().next().value as [string, Agent];
        identified.delete(oldest);
        void pool.close().catch(() => {});
      }
      found = agentWith({
        ...(certificate.cert ? { cert: certificate.cert } : {}), ...(certificate.key ? { key: certificate.key } : {}), ...(certificate.ca ? { ca: certificate.ca } : {}),
      });
      identified.set(certificate.id, found);
    }
    return found;
  };

  async function deliver(req: DeliveryRequest): Promise<DeliveryOutcome> {
    const started = performance.now();
    const outcome = (o: Omit<DeliveryOutcome, "latencyMs">): DeliveryOutcome => ({ ...o, latencyMs: Math.round((performance.now() - started) * 10) / 10 });
    let url: URL;
    let signature: string;
    try {
      url = new URL(req.url);
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error(`unsupported scheme ${url.protocol}`);
      if (url.username || url.password) throw new Error("credentials in URL");
      signature = signatureHeader(req.secrets, req.webhookId, req.timestamp, req.body);
    } catch (err) {
      return outcome({ result: "permanent", status: null, errorClass: "invalid_request", responseExcerpt: (err as Error).message.slice(0, excerptBytes), retryAfterSeconds: null });
    }
    // A subscription's own deadline may be shorter, never longer than the transport's (its pool's timeouts).
    const deadline = Math.min(req.timeoutMs ?? timeoutMs, timeoutMs);
    const headers = {
      ...req.headers,
      "content-type": "application/json",
      "user-agent": userAgent,
      "webhook-id": req.webhookId,
      "webhook-timestamp": String(req.timestamp),
      "webhook-signature": signature,
    };
    const requestHeaders = headersForLog(headers);
    try {
      const res = await postOnce(agentFor(req.clientCertificate), {
        origin: url.origin,
        path: url.pathname + url.search,
        headers,
        body: req.body,
        deadlineMs: deadline,
        excerptBytes,
        drainBytes: DRAIN_LIMIT_BYTES,
      });
      const status = res.status;
      return outcome({
        result: classifyStatus(status),
        status,
        errorClass: errorClassOfStatus(status),
        responseExcerpt: decodeExcerpt(res.excerpt),
        retryAfterSeconds: parseRetryAfter(res.retryAfter),
        rateLimit: res.rateLimit ? parseRateLimit(res.rateLimit) : null,
        requestHeaders,
      });
    } catch (err) {
      const errorClass = classifyError(err);
      return outcome({ result: errorClass === "destination_refused" ? "permanent" : "retryable", status: null, errorClass, responseExcerpt: null, retryAfterSeconds: null, requestHeaders });
    }
  }

  async function exchange(req: ExchangeRequest): Promise<ExchangeResponse> {
    const url = new URL(req.url);
    const res = await postOnce(agent, {
      origin: url.origin,
      path: url.pathname + url.search,
      headers: { ...req.headers, "user-agent": userAgent },
      body: req.body,
      deadlineMs: Math.min(req.timeoutMs ?? timeoutMs, timeoutMs),
      excerptBytes: EXCHANGE_BODY_BYTES,
      drainBytes: DRAIN_LIMIT_BYTES,
    });
    return { status: res.status, body: decodeExcerpt(res.excerpt) };
  }

  return {
    deliver,
    exchange,
    close: async () => {
      await Promise.all([agent.close(), ...[...identified.values()].map((a) => a.close())]);
    },
  };
}

/** What a response status means for the delivery. */
export function classifyStatus(status: number): DeliveryOutcome["result"] {
  if (status >= 200 && status < 300) return "delivered";
  if (status === 410) return "gone";
  if (status === 408 || status === 425 || status === 429 || status >= 500) return "retryable";
  return "permanent";
}

function errorClassOfStatus(status: number): ErrorClass | null {
  if (status >= 200 && status < 300) return null;
  return status >= 300 && status < 400 ? "redirect_refused" : "http_status";
}

/** The stable class of a failure that produced no response. */
export function classifyError(err: unknown): ErrorClass {
  const e = err as { code?: string; cause?: { code?: string }; name?: string } | undefined;
  const code = e?.code ?? e?.cause?.code ?? "";
  if (code === DESTINATION_REFUSED) return "destination_refused";
  if (e?.name === "AttemptTimeout" || /TIMEOUT|ETIMEDOUT/.test(code)) return "timeout";
  if (code === "ECONNREFUSED") return "connection_refused";
  if (code === "ECONNRESET" || code === "EPIPE" || code === "UND_ERR_SOCKET" || code === "UND_ERR_CLOSED") return "connection_reset";
  if (code === "ENOTFOUND" || code.startsWith("EAI_") || code === "ENODATA") return "dns_failure";
  if (code.startsWith("ERR_TLS") || code.startsWith("ERR_SSL") || /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) return "tls_error";
  if (code === "EHOSTUNREACH" || code === "ENETUNREACH" || code === "EHOSTDOWN" || code === "ENETDOWN") return "network_unreachable";
  return "network_error";
}

const utf8 = new TextDecoder("utf-8", { fatal: false });

/** The excerpt as text; a multi-byte character cut by the byte cap is dropped, not mangled. */
function decodeExcerpt(bytes: Buffer): string {
  if (bytes.length === 0) return "";
  return utf8.decode(bytes).replace(/\uFFFD$/, "");
}
