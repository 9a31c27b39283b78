/**
 * Typed errors of outbound delivery. Each carries what a caller needs to act; HTTP routes map
 * them to 4xx answers with the same message.
 */

/** One problem with an input, located by a JSON path such as `data.items[2]`. */
export interface Issue {
  path: string;
  message: string;
}

/** The input (an event, a subscription, a filter) is not acceptable; `issues` says where and why. */
export class OutboundValidationError extends Error {
  override name = "OutboundValidationError";
  constructor(message: string, readonly issues: Issue[] = [], options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The event payload is larger than the configured limit. */
export class PayloadTooLargeError extends OutboundValidationError {
  override name = "PayloadTooLargeError";
  constructor(readonly sizeBytes: number, readonly limitBytes: number) {
    super(`The event body is ${sizeBytes} bytes, over the limit of ${limitBytes} bytes; send a smaller payload or a reference to it.`);
  }
}

/** An event with this id exists with a different type or payload: ids must name one event only. */
export class EventConflictError extends Error {
  override name = "EventConflictError";
  constructor(readonly eventId: string, message?: string) {
    super(message ?? `Event ${eventId} was already enqueued with a different type or payload; use a new event id for a different event.`);
  }
}

/** No row with this id. `entity` is "subscription", "delivery" or "dead letter". */
export class NotFoundError extends Error {
  override name = "NotFoundError";
  constructor(readonly entity: string, readonly id: string) {
    super(`No ${entity} with id ${JSON.stringify(id)}.`);
  }
}

/** A replay was asked for a delivery that is not dead (pending or delivered). */
export class NotADeadLetterError extends Error {
  override name = "NotADeadLetterError";
  constructor(readonly deliveryId: string, readonly status: string) {
    super(`Delivery ${deliveryId} is ${status}, not a dead letter; only dead letters can be replayed.`);
  }
}

/** A skip was asked for an ordering key that no dead letter blocks (its head is pending, or it is idle). */
export class KeyNotBlockedError extends Error {
  override name = "KeyNotBlockedError";
  constructor(readonly orderingKey: string, readonly headStatus: string, message?: string) {
    super(message ?? (headStatus === "idle"
      ? `Ordering key ${orderingKey} has nothing waiting; only a key blocked by a dead letter can be skipped.`
      : `Ordering key ${orderingKey} is not blocked: its current delivery is ${headStatus} (due, in flight or retrying); only a dead letter can be skipped.`));
  }
}
