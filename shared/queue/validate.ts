/**
 * Checks shared by every queue adapter, so each rejects a bad message the same way, before the
 * service does it with a less helpful error.
 */
import type { MessageAttributes, OutgoingMessage, QueueLimits } from "./port.js";

/** A message (or a request about one) the queue will not take as given. Nothing was sent. */
export class MessageRejectedError extends Error {
  override name = "MessageRejectedError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The settle handle does not belong to this adapter or queue (a receipt from elsewhere). */
export class InvalidReceiptError extends Error {
  override name = "InvalidReceiptError";
}

const ATTRIBUTE_NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,79}$/;

/** Bytes a message takes on the wire as the services count them: body plus attribute names and values. */
export function messageBytes(message: OutgoingMessage): number {
  let total = Buffer.byteLength(message.body, "utf8");
  for (const [name, value] of Object.entries(message.attributes ?? {})) {
    if (value !== undefined) total += Buffer.byteLength(name, "utf8") + Buffer.byteLength(value, "utf8");
  }
  return total;
}

/** Attributes without `undefined` values (the services cannot carry them). */
export function definedAttributes(attributes: MessageAttributes | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(attributes ?? {})) if (value !== undefined) out[name] = value;
  return out;
}

/** Throws MessageRejectedError naming what is wrong with `message` for a queue with `limits`. */
export function checkOutgoing(message: OutgoingMessage, limits: QueueLimits, queue: string): void {
  if (typeof message?.body !== "string") {
    throw new MessageRejectedError(`${queue}: message body must be a string (JSON text); got ${typeof message?.body}`);
  }
  for (const [name, value] of Object.entries(message.attributes ?? {})) {
    if (!ATTRIBUTE_NAME.test(name)) {
      throw new MessageRejectedError(`${queue}: attribute name ${JSON.stringify(name)} is not allowed; use letters, digits, '_', '.', '-' (max 80), starting with a letter`);
    }
    if (value !== undefined && typeof value !== "string") {
      throw new MessageRejectedError(`${queue}: attribute ${name} must be a string; got ${typeof value}`);
    }
  }
  const bytes = messageBytes(message);
  if (bytes > limits.maxMessageBytes) {
    throw new MessageRejectedError(`${queue}: message is ${bytes} bytes, over the ${limits.maxMessageBytes}-byte limit; store the payload by claim-check and send its reference`);
  }
  checkDelay(message.delaySeconds ?? 0, limits.maxDelaySeconds, queue, "delaySeconds");
}

/** Throws unless `seconds` is a whole number in 0..max. */
export function checkDelay(seconds: number, max: number, queue: string, what: string): void {
  if (!Number.isInteger(seconds) || seconds < 0) {
    throw new MessageRejectedError(`${queue}: ${what} must be a whole number of seconds >= 0; got ${seconds}`);
  }
  if (seconds > max) {
    throw new MessageRejectedError(`${queue}: ${what} ${seconds} is over the service's ${max} s maximum; keep the schedule in the database instead`);
  }
}

/** The outcome `retryAfter` returns when the service cannot hold a message that long. */
export function tooLong(delaySeconds: number, max: number, service: string) {
  return {
    scheduled: false as const,
    maxDelaySeconds: max,
    reason: `${service} can delay a message at most ${max} s; ${delaySeconds} s asked. The message was left as it is: keep your own schedule, then ack it.`,
  };
}
