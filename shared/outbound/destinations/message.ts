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
  /** The event's type (order.paid), when the envelope says it: EventBridge's default detail-type. */
  eventType: string | null;
}

/** One opened client for one destination configuration: pooled by the senders, closed when replaced or at the relay's stop. */
export interface DestinationClient {
  /** Resolves when the service has accepted the message (durably, where it says so); rejects otherwise. */
  send(message: DestinationMessage, signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
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

/** The envelope's `type`, or null when the body is not an envelope (a transformation's own body). */
export function eventTypeOf(body: string): string | null {
  try {
    const parsed = JSON.parse(body) as { type?: unknown };
    return typeof parsed?.type === "string" ? parsed.type : null;
  } catch {
    return null;
  }
}
