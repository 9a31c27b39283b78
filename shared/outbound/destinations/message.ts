/**
 * What a queue destination is sent: the same signed envelope the HTTP transport POSTs, with the
 * Standard Webhooks headers as the message's attributes (properties, application properties), so
 * a consumer verifies it with any Standard Webhooks library exactly as an HTTP receiver does:
 * `new Webhook(secret).verify(body, {"webhook-id", "webhook-timestamp", "webhook-signature"})`.
 *
 * Each kind's client (sqs.ts, sns.ts, eventbridge.ts, serviceBus.ts, pubsub.ts, rabbitmq.ts) maps
 * this onto its service and says what failed as a `SendFailure` (classify.ts).
 */
import { createHash } from "node:crypto";

export interface DestinationMessage {
  /** The delivery id, the same on every attempt (`webhook-id`). */
  webhookId: string;
  /** The exact bytes signed. */
  body: string;
  /** webhook-id, webhook-timestamp, webhook-signature, content-type, then the subscription's and event's own. */
  attributes: Record<string, string>;
  /** An ordered subscription's ordering key (its deliveries of one key go one at a time, in order); null otherwise. */
  orderingKey: string | null;
}

/** One opened client for one destination configuration: pooled by the senders, closed when replaced or at the relay's stop. */
export interface DestinationClient {
  /** Resolves when the service has accepted the message (durably, where it says so); rejects otherwise. */
  send(message: DestinationMessage, signal: AbortSignal): Promise<void>;
  /**
   * Where the service takes several messages in one call (SQS SendMessageBatch, SNS PublishBatch,
   * EventBridge PutEvents, a Service Bus batch, RabbitMQ publishes written in one pass): sends
   * `messages` (at least 2, within `batch`'s limits) together and answers each one's outcome, in
   * order: null when the service took it, else its own failure (a refused entry). Rejects when the
   * call as a whole failed: that failure is every message's. The senders coalesce the attempts
   * that reach one client in the same turn of the event loop into such calls (coalesce.ts).
   */
  sendBatch?(messages: readonly DestinationMessage[], signal: AbortSignal): Promise<(SendFailure | null)[]>;
  /** What one `sendBatch` call may hold; required with it. */
  batch?: BatchLimits;
  close(): Promise<void>;
}

/** The service's limits on one batch call. */
export interface BatchLimits {
  /** Most messages in one call (10 for the AWS batch calls). */
  maxMessages: number;
  /** Most bytes in one call, as `sizeOf` counts them (256 KiB for the AWS batch calls). */
  maxBytes: number;
  /** A message's share of `maxBytes` (its body and attributes, as the service counts them). */
  sizeOf(message: DestinationMessage): number;
  /** False for a message that must go alone (a Service Bus session's: a batch is one partition). Default: every message may share a call. */
  shares?(message: DestinationMessage): boolean;
}

/** What a failed send means for the delivery, as the HTTP transport's outcomes do. */
export interface SendFailure {
  result: "retryable" | "permanent";
  /** throttled, service_unavailable, access_denied, not_found, invalid_message, unroutable, timeout, connection_refused… */
  errorClass: string;
  /** What the service said (kept as the attempt's response excerpt). */
  detail: string;
  /** When the service says how long to wait. */
  retryAfterSeconds?: number | null;
}

/** A send the client itself found failed (a PutEvents entry refused, a message returned unroutable). */
export class DestinationSendError extends Error {
  override name = "DestinationSendError";
  constructor(readonly failure: SendFailure) {
    super(failure.detail);
  }
}

/**
 * An id within a service's limit: SQS FIFO's MessageDeduplicationId and MessageGroupId and Service
 * Bus's MessageId and SessionId take at most 128 characters. A longer one (a long event id) is
 * replaced by its SHA-256, the same on every attempt, so de-duplication still holds.
 */
export function boundedId(id: string, max = 128): string {
  if (id.length <= max && /^[\x21-\x7e]+$/.test(id)) return id;
  return createHash("sha256").update(id).digest("hex");
}

/**
 * The envelope's `type`, or null when the body is not an envelope (a transformation's own body).
 * The relay's envelopes begin `{"id":<string>,"type":<string>,` (enqueue.ts), so the type is read
 * there without parsing the whole body (its data can be large: a full parse per attempt cost the
 * RabbitMQ relay ~5 % of its CPU); any other body is parsed.
 */
export function eventTypeOf(body: string): string | null {
  if (body.startsWith('{"id":"')) {
    const idEnd = endOfString(body, 6);
    if (idEnd > 0 && body.startsWith(',"type":"', idEnd)) {
      const typeEnd = endOfString(body, idEnd + 8);
      if (typeEnd > 0) {
        const raw = body.slice(idEnd + 8, typeEnd);
        return raw.includes("\\") ? (JSON.parse(raw) as string) : raw.slice(1, -1);
      }
    }
  }
  try {
    const parsed = JSON.parse(body) as { type?: unknown };
    return typeof parsed?.type === "string" ? parsed.type : null;
  } catch {
    return null;
  }
}

/** The index just past the JSON string opening at `start` (its `"`), or -1 when it does not close. */
function endOfString(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c) i += 1; // a backslash escapes the next character (\" included)
    else if (c === 0x22) return i + 1;
  }
  return -1;
}
