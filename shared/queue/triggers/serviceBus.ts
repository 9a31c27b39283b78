/**
 * The Azure Functions (Node.js v4 programming model) Service Bus trigger, translated into the
 * queue port's message shape, and back.
 *
 * What the host hands a `app.serviceBusQueue` handler (cardinality "one"): the message body, already
 * decoded (JSON text arrives parsed, other text as a string, binary as a Buffer), and an
 * `InvocationContext` whose `triggerMetadata` holds the message's properties. The Node worker
 * camel-cases those keys by lower-casing their first letter, recursively, so the host's
 * `DeliveryCount`, `MessageId`, `ApplicationProperties`… arrive as `deliveryCount`, `messageId`,
 * `applicationProperties`, and so do the keys inside `applicationProperties` (our attribute
 * names already start in lower case, so they come through unchanged).
 *
 * And back: the host settles the message itself. A handler that returns completes it; a handler
 * that throws abandons it, Service Bus counts the delivery, and after the queue's MaxDeliveryCount
 * it dead-letters the message (reason `MaxDeliveryCountExceeded`). Nothing is ever dropped.
 *
 * Only `import type` from `@azure/functions`: this module loads no SDK.
 */
import type { InvocationContext } from "@azure/functions";
import { MalformedMessageError, type ReceivedMessage } from "../port.js";
import { attributesFromProperties, ORIGINAL_ID, PRIOR_DELIVERIES } from "../serviceBus.js";

const WHERE = "Service Bus trigger";

/**
 * One trigger invocation as a `ReceivedMessage`. `deliveryCount` is the host's (1 on the first
 * delivery) plus any count carried by a scheduled retry copy; `id` is the original message id
 * across such copies; `receipt` is the lock token (informational: the host settles).
 *
 * @throws MalformedMessageError when the invocation is not a single Service Bus message with the
 * metadata the host always sends; the message says which field is wrong.
 * @example
 * app.serviceBusQueue("inbound", { connection: "ServiceBus", queueName: "inbound",
 *   handler: async (message, context) => processor(fromServiceBusTrigger(message, context)) });
 */
export function fromServiceBusTrigger(message: unknown, context: Pick<InvocationContext, "triggerMetadata">): ReceivedMessage {
  if (Array.isArray(message)) {
    throw new MalformedMessageError(`${WHERE}: got a batch of ${message.length} messages; register the function with cardinality "one" (the default), since a throw abandons every message of a batch`);
  }
  const metadata = context?.triggerMetadata;
  if (!metadata || typeof metadata !== "object") {
    throw new MalformedMessageError(`${WHERE}: the invocation context has no triggerMetadata; is this function bound to a Service Bus trigger?`);
  }
  const messageId = metadata.messageId;
  if (typeof messageId !== "string" || messageId === "") {
    throw new MalformedMessageError(`${WHERE}: triggerMetadata.messageId must be a non-empty string; got ${describe(messageId)}`);
  }
  const hostCount = wholeNumber(metadata.deliveryCount);
  if (hostCount === undefined || hostCount < 1) {
    throw new MalformedMessageError(`${WHERE}: triggerMetadata.deliveryCount must be a whole number >= 1 (the host counts from 1); got ${describe(metadata.deliveryCount)}`);
  }
  const properties = metadata.applicationProperties ?? {};
  if (typeof properties !== "object" || Array.isArray(properties)) {
    throw new MalformedMessageError(`${WHERE}: triggerMetadata.applicationProperties must be an object; got ${describe(properties)}`);
  }
  const props = properties as Record<string, unknown>;
  const prior = props[PRIOR_DELIVERIES] === undefined ? 0 : wholeNumber(props[PRIOR_DELIVERIES]);
  if (prior === undefined) {
    throw new MalformedMessageError(`${WHERE}: application property ${PRIOR_DELIVERIES} must be a whole number >= 0; got ${describe(props[PRIOR_DELIVERIES])}`);
  }
  const attributes = attributesFromProperties(props, true);
  if (attributes.contentType === undefined && typeof metadata.contentType === "string") attributes.contentType = metadata.contentType;
  return {
    id: typeof props[ORIGINAL_ID] === "string" ? (props[ORIGINAL_ID] as string) : messageId,
    body: triggerBody(message),
    attributes,
    deliveryCount: prior + hostCount,
    receipt: typeof metadata.lockToken === "string" ? metadata.lockToken : messageId,
  };
}

/**
 * Wraps a processor as a v4 Service Bus queue handler. Returning completes the message; any error
 * (including MalformedMessageError) is rethrown so the host abandons it and, after MaxDeliveryCount,
 * dead-letters it: the DLQ is where a malformed message is kept.
 */
export function serviceBusQueueHandler(
  process: (message: ReceivedMessage, context: InvocationContext) => Promise<void>,
): (message: unknown, context: InvocationContext) => Promise<void> {
  return async (message, context) => {
    await process(fromServiceBusTrigger(message, context), context);
  };
}

/** The body as our UTF-8 text. JSON arrives parsed by the host: it is serialised again. */
function triggerBody(message: unknown): string {
  if (typeof message === "string") return message;
  if (message instanceof Uint8Array) return Buffer.from(message).toString("utf8");
  if (message === undefined || message === null) {
    throw new MalformedMessageError(`${WHERE}: the message has no body (got ${describe(message)}); a webhook event is JSON text`);
  }
  return JSON.stringify(message);
}

/** A whole number >= 0 given as a number or as decimal digits, else undefined. */
function wholeNumber(value: unknown): number | undefined {
  const n = typeof value === "number" ? value : typeof value === "string" && /^\d{1,15}$/.test(value) ? Number(value) : NaN;
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  const text = typeof value === "string" ? JSON.stringify(value) : `${typeof value} ${JSON.stringify(value)}`;
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
