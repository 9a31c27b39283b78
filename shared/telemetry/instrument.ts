/**
 * Decorators that put the stable spans and metrics of `telemetry.ts` on the platform's two
 * boundaries without touching their code: the HTTP routes and the outbound transport.
 *
 * @example
 * const routes = instrumentRoutes([...outboundRoutes(ctx), ...inboundRoutes(ctx)]);
 * const transport = instrumentTransport(createTransport({ ... }));
 *
 * What goes into spans: route templates (`/deliveries/:id`, never the concrete path, which can hold
 * ids typed by anyone), methods, status codes, partner names, delivery ids, outcomes, latencies.
 * Never bodies, headers, secrets or signatures.
 */
import type { Route } from "../server/router.js";
import { HttpError } from "../server/router.js";
import type { DeliveryOutcome as TransportOutcome, Transport } from "../outbound/transport.js";
import { activeTraceparent, recordDeliveryAttempt, recordInboxReceived, recordReplay, SPANS, setSpanAttributes, withSpan, type DeliveryOutcome } from "./telemetry.js";

/** Handlers produced by `instrumentRoutes`, so a second call leaves them as they are. */
const INSTRUMENTED = new WeakSet<Route["handler"]>();

/** Span name of every management and page request. */
export const HTTP_SPAN = SPANS.httpRequest;

const INGEST_PATH = "/webhooks/:partner";

/** Replay routes and the direction they replay. */
const REPLAY_ROUTES: Record<string, "outbound" | "inbound"> = {
  "/dead-letters/:id/replay": "outbound",
  "/dead-letters/replay": "outbound",
  "/inbox/:id/replay": "inbound",
  "/inbox/replay": "inbound",
};

/** How many entries a successful replay answer says were replayed (`{ replayed: [...] }`, or one). */
function replayedCount(body: unknown): number {
  const replayed = (body as { replayed?: unknown } | undefined)?.replayed;
  return Array.isArray(replayed) ? replayed.length : 1;
}

/** A caller's `traceparent` header, when it sent one (a header sent twice is not one). */
function traceparentOf(header: string | string[] | undefined): string | null {
  return typeof header === "string" ? header : null;
}

function statusOf(error: unknown): number {
  return error instanceof HttpError ? error.status : 500;
}

/**
 * Wraps each route's handler in a span: `webhooks.inbox.ingest` for `POST /webhooks/:partner`
 * (and the `webhooks.inbox.received{partner,outcome}` counter), `webhooks.replay` for the replay
 * routes (and the `webhooks.replays{kind}` counter), `webhooks.http.request` otherwise.
 */
export function instrumentRoutes(routes: Route[]): Route[] {
  return routes.map((route) => {
    // Wrapping twice (the platform and a host both instrumenting) would double every span and count.
    if (INSTRUMENTED.has(route.handler)) return route;
    const ingest = route.method === "POST" && route.path === INGEST_PATH;
    const replay = route.method === "POST" ? REPLAY_ROUTES[route.path] : undefined;
    const name = ingest ? SPANS.inboxIngest : replay ? SPANS.replay : HTTP_SPAN;
    const handler: Route["handler"] = (req) =>
      withSpan(name, { "http.request.method": route.method, "http.route": route.path }, async (span) => {
        // The ingest span's context is what the inbox entry carries on (inbound/ingest.ts).
        try {
          const response = await route.handler(req);
          setSpanAttributes(span, { "http.response.status_code": response.status });
          if (replay && response.status >= 200 && response.status < 300) {
            const count = replayedCount(response.body);
            setSpanAttributes(span, { "webhooks.replay.kind": replay, "webhooks.replay.count": count });
            recordReplay(replay, count);
          }
          if (ingest) {
            const partner = req.params.partner ?? "";
            const duplicate = (response.body as { duplicate?: unknown } | undefined)?.duplicate === true;
            const outcome = response.status >= 200 && response.status < 300 ? (duplicate ? "duplicate" : "accepted") : "rejected";
            setSpanAttributes(span, { "webhooks.partner": partner, "webhooks.outcome": outcome });
            recordInboxReceived(partner, outcome);
          }
          return response;
        } catch (error) {
          setSpanAttributes(span, { "http.response.status_code": statusOf(error) });
          if (ingest) recordInboxReceived(req.params.partner ?? "", "rejected");
          throw error;
        }
      }, traceparentOf(req.headers.traceparent));
    INSTRUMENTED.add(handler);
    return { ...route, handler };
  });
}

const OUTCOMES: Record<TransportOutcome["result"], DeliveryOutcome> = {
  delivered: "success",
  retryable: "retry",
  permanent: "failed",
  gone: "failed",
};

/**
 * The HTTP client conventions' attributes of an attempt to `url`: method, host, port, scheme.
 * Never the path or query (`url.full`): a receiver's URL may carry a token.
 */
export function clientAttributes(url: string): Record<string, string | number | undefined> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return { "http.request.method": "POST" };
  }
  const scheme = u.protocol.replace(/:$/, "");
  return {
    "http.request.method": "POST",
    "server.address": u.hostname.replace(/^\[|\]$/g, ""),
    "server.port": u.port ? Number(u.port) : scheme === "https" ? 443 : 80,
    "url.scheme": scheme,
  };
}

/**
 * Wraps `deliver` in a `webhooks.delivery.attempt` span (the child of the event's enqueue when the
 * claim brought its `traceparent`; the header sent is then this span's) and records
 * `webhooks.delivery.attempts{outcome}` and `webhooks.delivery.latency{outcome}`.
 */
export function instrumentTransport(transport: Transport): Transport {
  return {
    deliver: (req) =>
      withSpan(SPANS.deliveryAttempt, { "webhooks.delivery.id": req.webhookId }, async (span) => {
        // Parsing the URL allocates: only for a span an SDK records (never with telemetry off).
        if (span.isRecording()) {
          setSpanAttributes(span, clientAttributes(req.url));
          // The receiver continues the trace from this attempt (W3C: the client span's id), not
          // from the enqueue that the claim put in the headers (shared/outbound/sql/claimDeliveries.ts).
          if (req.headers?.traceparent !== undefined) req = { ...req, headers: { ...req.headers, traceparent: activeTraceparent() ?? req.headers.traceparent } };
        }
        const outcome = await transport.deliver(req);
        const mapped = OUTCOMES[outcome.result];
        setSpanAttributes(span, {
          "webhooks.outcome": mapped,
          "http.response.status_code": outcome.status,
          "webhooks.delivery.latency_ms": outcome.latencyMs,
          "error.type": outcome.errorClass,
        });
        recordDeliveryAttempt({ outcome: mapped, latencyMs: outcome.latencyMs });
        return outcome;
      }, req.headers?.traceparent),
    // Token requests (endpointAuth/oauth2.ts) pass through as they are: dropping the method here
    // would leave OAuth 2.0 subscriptions of an instrumented relay without a token.
    ...(transport.exchange ? { exchange: transport.exchange.bind(transport) } : {}),
    close: () => transport.close(),
  };
}
