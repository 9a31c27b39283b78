/**
 * Delivery to queue and broker destinations (issue 31, docs/destinations.md): the relay hands an
 * attempt whose subscription's `url` is not http(s) here instead of to the HTTP transport, and gets
 * the same `DeliveryOutcome` back, so retries, backoff, the breaker, dead letters, replay, the
 * attempt log, in-flight limits and adaptive concurrency apply unchanged.
 *
 * - Configuration: read per subscription (its `destination` column) and kept CONFIG_TTL_MS, as
 *   endpoint auth is, read again at once when the claim's url describes another destination or a
 *   send failed (sent again when it changed meanwhile: a correction or rotation loses nothing to
 *   the old one); its credentials decrypted only here. One that does not decrypt here (a key
 *   missing from ENCRYPTION_KEYS) makes the attempt retryable, as an unreadable signing secret
 *   does: not the destination's fault.
 * - Clients: one per destination configuration (subscription + version), opened on first use and
 *   reused by every attempt (the SDKs pool their connections), replaced when the configuration
 *   changes, at most MAX_CLIENTS open (the least recently used is closed), all closed by `close`.
 *   Each kind's SDK is loaded when its first client opens (dynamic import): a relay without queue
 *   destinations never loads one.
 * - Each attempt has the subscription's deadline (at most `timeoutMs`): past it the attempt is
 *   retryable (`timeout`; the service may have taken it: at least once) and its send aborted.
 * - The attempts that reach one client in the same turn of the event loop go out together, in the
 *   service's batch calls where it has them, each keeping its own outcome (coalesce.ts).
 */
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import type { Queryable } from "../../db/port.js";
import { isUnreadableSecretError } from "../../crypto/subscriptionSecrets.js";
import { signatureHeader } from "../signature.js";
import { headersForLog, type DeliveryOutcome, type DeliveryRequest } from "../transport.js";
import { classifyAmqpError, classifyAwsError, classifyGrpcError, classifyServiceBusError } from "./classify.js";
import { describeDestination, openDestination, type OpenDestination, type QueueDestinationKind, type StoredDestination } from "./config.js";
import { createCoalescer, type Coalescer } from "./coalesce.js";
import type { DestinationClient, DestinationMessage, SendFailure } from "./message.js";

/** How long a relay uses a subscription's destination configuration before reading it again. */
export const CONFIG_TTL_MS = 5_000;
/** Most destination clients open at once in one relay. */
const MAX_CLIENTS = 256;
/** The `content-type` attribute of every message: the envelope is JSON. */
const CONTENT_TYPE = "application/json";

export interface DestinationSenders {
  /**
   * Sends one attempt to `subscriptionId`'s queue destination; never throws for the service's
   * failures. `orderingKey`: an ordered subscription's key (SQS FIFO group, Service Bus session,
   * Pub/Sub ordering key). `subscriptionUrl`: the subscription's own `url` when `req.url` is
   * another (a transformation's): refused, a transformation cannot redirect a queue destination.
   */
  deliver(subscriptionId: string, req: DeliveryRequest, options?: { orderingKey?: string | null; subscriptionUrl?: string }): Promise<DeliveryOutcome>;
  /** Closes every client; call it once no attempt is in flight (the relay's stop). Reusable after. */
  close(): Promise<void>;
}

export interface DestinationSendersOptions {
  db: Queryable;
  logger?: Logger;
  /** Longest attempt, ms (a subscription's attemptTimeoutMs is bounded by it). Default: 10 000. */
  timeoutMs?: number;
  /** Opens a client for a configuration; default: the kind's module (loaded lazily). Tests inject a failing one. */
  openClient?: (destination: OpenDestination) => Promise<DestinationClient & { classify(error: unknown): SendFailure }>;
}

/** The kind's client, its module loaded on first use (each loads its SDK the same way). */
export async function openDestinationClient(destination: OpenDestination): Promise<DestinationClient & { classify(error: unknown): SendFailure }> {
  switch (destination.kind) {
    case "sqs": return (await import("./sqs.js")).openSqs(destination);
    case "sns": return (await import("./sns.js")).openSns(destination);
    case "eventbridge": return (await import("./eventbridge.js")).openEventBridge(destination);
    case "servicebus": return (await import("./serviceBus.js")).openServiceBus(destination);
    case "pubsub": return (await import("./pubsub.js")).openPubSub(destination);
    case "rabbitmq": return (await import("./rabbitmq.js")).openRabbitMq(destination);
  }
}

type Opened = DestinationClient & { classify(error: unknown): SendFailure };

/** Each kind's classification, also of a failure to open its client (RabbitMQ connects then). */
const CLASSIFY: Record<QueueDestinationKind, (error: unknown) => SendFailure> = {
  sqs: classifyAwsError, sns: classifyAwsError, eventbridge: classifyAwsError, servicebus: classifyServiceBusError, pubsub: classifyGrpcError, rabbitmq: classifyAmqpError,
};

export function createDestinationSenders(options: DestinationSendersOptions): DestinationSenders {
  const { db } = options;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const openClient = options.openClient ?? openDestinationClient;
  const configs = new Map<string, { destination: StoredDestination | null; readAt: number }>();
  /** `<subscription>:<version>` → its client (being opened: the promise). Map order = least recently used first. */
  const clients = new Map<string, Promise<Opened>>();
  /** Each open client's coalescer: its attempts of one turn go out together (coalesce.ts). */
  const coalescers = new WeakMap<Opened, Coalescer>();

  /** Reads under way, per subscription: the attempts of one turn that find no fresh configuration share one. */
  const reading = new Map<string, Promise<StoredDestination | null>>();

  /** The subscription's stored destination, cached CONFIG_TTL_MS unless `fresh`. */
  const configOf = async (id: string, fresh = false): Promise<StoredDestination | null> => {
    const cached = configs.get(id);
    if (!fresh && cached && performance.now() - cached.readAt < CONFIG_TTL_MS) return cached.destination;
    // One read for the burst: each attempt reading on its own came back in its own turn, which
    // split a burst's sends apart (coalesce.ts) at a relay's start and at each expiry.
    const under = reading.get(id);
    if (under && !fresh) return under;
    const read = db.query<{ destination: StoredDestination | null }>("SELECT destination FROM outbound_subscriptions WHERE id = $1", [id]).then((result) => {
      const destination = result.rows[0]?.destination ?? null;
      if (configs.size > 10_000) configs.clear();
      configs.set(id, { destination, readAt: performance.now() });
      return destination;
    }).finally(() => { if (reading.get(id) === read) reading.delete(id); });
    reading.set(id, read);
    return read;
  };

  const retire = (key: string, client: Promise<Opened>) => {
    clients.delete(key);
    void client.then((c) => c.close()).catch((error) => options.logger?.warn({ err: error, destination: key }, "closing a destination client failed"));
  };

  const clientFor = (id: string, stored: StoredDestination): Promise<Opened> => {
    const key = `${id}:${stored.version}`;
    const found = clients.get(key);
    if (found) {
      clients.delete(key); // most recently used last
      clients.set(key, found);
      return found;
    }
    // A new version of this subscription's destination: the old client goes.
    for (const [other, client] of clients) if (other.startsWith(`${id}:`)) retire(other, client);
    if (clients.size >= MAX_CLIENTS) {
      const [oldest, client] = clients.entries().next().value as [string, Promise<Opened>];
      retire(oldest, client);
    }
    const opening = Promise.resolve().then(() => openClient(openDestination(id, stored)));
    clients.set(key, opening);
    // A client that failed to open is not kept: the next attempt tries again.
    opening.catch(() => { if (clients.get(key) === opening) clients.delete(key); });
    return opening;
  };

  const outcome = (started: number, failure: SendFailure | null): DeliveryOutcome => ({
    result: failure ? failure.result : "delivered",
    status: null,
    latencyMs: Math.round((performance.now() - started) * 10) / 10,
    errorClass: failure ? failure.errorClass : null,
    responseExcerpt: failure ? failure.detail : null,
    retryAfterSeconds: failure?.retryAfterSeconds ?? null,
  });

  /**
   * One send of `req` with the configuration `stored`: `failure` null when the service took it,
   * else why not; `sent` the attributes given to the service (null when nothing was sent).
   */
  const sendWith = async (id: string, stored: StoredDestination, req: DeliveryRequest, orderingKey: string | null): Promise<{ failure: SendFailure | null; sent: Record<string, string> | null }> => {
    let signature: string;
    try {
      signature = signatureHeader(req.secrets, req.webhookId, req.timestamp, req.body);
    } catch (error) {
      return { failure: { result: "permanent", errorClass: "invalid_request", detail: (error as Error).message }, sent: null };
    }
    const message: DestinationMessage = {
      webhookId: req.webhookId,
      body: req.body,
      // Ours win over custom ones, as on HTTP.
      attributes: { ...req.headers, "content-type": CONTENT_TYPE, "webhook-id": req.webhookId, "webhook-timestamp": String(req.timestamp), "webhook-signature": signature },
      // The event's type is read from the body by the clients that need it (EventBridge, RabbitMQ: eventTypeOf).
      orderingKey,
    };
    let client: Opened;
    try {
      client = await clientFor(id, stored);
    } catch (error) {
      if (isUnreadableSecretError(error)) return { failure: { result: "retryable", errorClass: "destination_secret_unreadable", detail: (error as Error).message }, sent: null };
      // The SDK refused the settings, or could not connect (RabbitMQ connects on open).
      return { failure: CLASSIFY[stored.kind](error), sent: null };
    }
    let coalescer = coalescers.get(client);
    if (!coalescer) coalescers.set(client, coalescer = createCoalescer(client, stored.kind));
    const failure = await coalescer.send(message, Math.min(req.timeoutMs ?? timeoutMs, timeoutMs));
    return { failure, sent: message.attributes };
  };

  return {
    async deliver(id, req, { orderingKey = null, subscriptionUrl } = {}) {
      const started = performance.now();
      let stored = await configOf(id);
      // The claim read the subscription's url just now: a cached configuration describing another is stale.
      if (stored && subscriptionUrl === undefined && describeDestination(stored) !== req.url) stored = await configOf(id, true);
      if (!stored) {
        // The subscription went back to http (or was deleted) since the claim read its url.
        return outcome(started, { result: "retryable", errorClass: "destination_changed", detail: "the subscription's destination changed during the attempt; sent again with the new one" });
      }
      if (subscriptionUrl !== undefined && req.url !== subscriptionUrl) {
        // Only a transformation gives another url; a queue destination is not redirected.
        return outcome(started, { result: "permanent", errorClass: "transformation_failed", detail: `returned a url (${req.url.slice(0, 200)}); the subscription delivers to its ${stored.kind} destination, which a transformation cannot change (return body and headers only)` });
      }
      let sent = await sendWith(id, stored, req, orderingKey);
      if (sent.failure) {
        // Corrected or rotated since it was read (a replay right after fixing the queue's name or a
        // key): sent again with the new configuration, as endpoint auth does with new credentials.
        const current = await configOf(id, true).catch(() => stored);
        if (current && current.version !== stored.version) sent = await sendWith(id, current, req, orderingKey);
      }
      // The attempt log keeps the attributes as it keeps an HTTP attempt's headers (custom values redacted).
      return { ...outcome(started, sent.failure), ...(sent.sent ? { requestHeaders: headersForLog(sent.sent) } : {}) };
    },
    async close() {
      // The relay calls it after its attempts finished; a later attempt (a restarted relay) opens new clients.
      const all = [...clients.values()];
      clients.clear();
      await Promise.all(all.map((c) => c.then((client) => client.close()).catch(() => {})));
    },
  };
}
