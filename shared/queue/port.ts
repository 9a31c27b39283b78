// CHANGED by the queue-adapters engineer (issue 4), for the Service Bus engineer: no shape changed;
// TSDoc only, pinning down what the contract suite (test/queue/contract.ts) checks:
// - `retryAfter(m, 0)` releases the delivery at once (abandon / nack); it counts as a delivery;
// - `retryAfter` beyond `limits.maxDelaySeconds` returns `{ scheduled: false }` and leaves the
//   delivery untouched (the caller keeps its own schedule, then acks);
// - a retried message keeps its body and attributes, and its deliveryCount goes on
//   counting (an adapter that re-sends a copy must carry the count across);
// - `DeadLetteredMessage.reason`: the reason given to `deadLetter` verbatim; for an automatic
//   dead-letter, the service's reason or a fixed text such as "max deliveries exceeded".

/**
 * The queue port: what the core needs from a message queue, and nothing an SDK-specific caller
 * could not provide. One implementation per service (local PostgreSQL, SQS, Pub/Sub, Service Bus);
 * each is the only module that imports its SDK. The core owns retry, deferral and dead-letter
 * decisions; an adapter only speaks its service.
 */

/** Attributes every message may carry. Values are strings on every service. */
export interface MessageAttributes {
  partner?: string;
  eventId?: string;
  contentType?: string;
  /** ISO-8601 time the platform accepted the event. */
  receivedAt?: string;
  [name: string]: string | undefined;
}

export interface OutgoingMessage {
  /** UTF-8 text (JSON for our events). */
  body: string;
  attributes?: MessageAttributes;
  /** Hold the message back this many seconds before it can be received. Default: 0. */
  delaySeconds?: number;
}

export interface ReceivedMessage {
  /** The service's message id. */
  id: string;
  body: string;
  attributes: MessageAttributes;
  /** 1 on first delivery, incremented on each redelivery. */
  deliveryCount: number;
  /** Opaque handle the adapter needs to settle this delivery (receipt handle, lock token, ack id). */
  receipt: string;
}

export interface DeadLetteredMessage extends ReceivedMessage {
  /** Why it was dead-lettered: the reason given to `deadLetter`, or the service's own. */
  reason: string;
}

/** What `retryAfter` achieved. */
export type RetryOutcome =
  | { scheduled: true; delaySeconds: number }
  /** The service cannot hold it that long: the caller must keep its own schedule. */
  | { scheduled: false; maxDelaySeconds: number; reason: string };

export interface QueueLimits {
  /** Largest body + attributes accepted, in bytes. Larger payloads go by claim-check. */
  maxMessageBytes: number;
  /** Longest `delaySeconds` / `retryAfter` the service honours natively. */
  maxDelaySeconds: number;
  /** Longest visibility / lock period. */
  maxVisibilitySeconds: number;
}

export interface ReceiveOptions {
  /** At most this many messages. Default: 10. */
  max?: number;
  /** How long received messages stay invisible to other receivers. Default: 30. */
  visibilitySeconds?: number;
  /** Wait up to this long for a first message. Default: 0 (return at once). */
  waitSeconds?: number;
}

export interface QueueAdapter {
  readonly name: "local" | "sqs" | "pubsub" | "servicebus";
  readonly limits: QueueLimits;
  send(message: OutgoingMessage): Promise<{ id: string }>;
  sendBatch(messages: OutgoingMessage[]): Promise<{ ids: string[] }>;
  receive(options?: ReceiveOptions): Promise<ReceivedMessage[]>;
  /** Done: the message is removed. */
  ack(message: ReceivedMessage): Promise<void>;
  /**
   * Make it visible again after `delaySeconds` (0: at once), counting as a delivery. Beyond
   * `limits.maxDelaySeconds` nothing is done and `{ scheduled: false }` is returned: the caller then
   * keeps its own schedule (and acks the message once that is durable).
   */
  retryAfter(message: ReceivedMessage, delaySeconds: number): Promise<RetryOutcome>;
  /** Move it to the dead-letter queue with `reason` (readable as `DeadLetteredMessage.reason`). */
  deadLetter(message: ReceivedMessage, reason: string): Promise<void>;
  /** Read (and remove, once acked) what is in the dead-letter queue. */
  receiveDeadLetters(options?: ReceiveOptions): Promise<DeadLetteredMessage[]>;
  ackDeadLetter(message: DeadLetteredMessage): Promise<void>;
  close(): Promise<void>;
}

/** A message that cannot be read (not our shape): dead-letter it, never drop it. */
export class MalformedMessageError extends Error {
  override name = "MalformedMessageError";
}
