/**
 * A STAND-IN for the Azure Functions host's Service Bus trigger (cardinality "one"), so a v4
 * handler can be driven against the Service Bus AMQP test peer through the real
 * `@azure/service-bus` client. No Functions host runs on this machine; this plays its documented
 * part and nothing more:
 * - receive one message in peek-lock mode;
 * - hand the handler the decoded body (JSON text arrives parsed, other text as a string) and a
 *   real `InvocationContext` whose `triggerMetadata` holds the message's properties with the
 *   Node worker's key rule (first letter lower-cased, recursively) and the host's delivery count
 *   (the .NET SDK's, which counts from 1);
 * - complete the message when the handler returns, abandon it when the handler throws (Service Bus
 *   then counts the delivery and, after the queue's MaxDeliveryCount, dead-letters it).
 */
import { randomUUID } from "node:crypto";
import { InvocationContext, trigger } from "@azure/functions";
import type { ServiceBusReceivedMessage, ServiceBusReceiver } from "@azure/service-bus";

export type ServiceBusHandler = (message: unknown, context: InvocationContext) => Promise<void>;
export type HostOutcome = "none" | "completed" | "abandoned";

/** The Node worker's key rule: lower-case the first letter, recursively through objects and arrays. */
function camelCased(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(camelCased);
  if (value === null || typeof value !== "object" || value instanceof Date) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k.charAt(0).toLowerCase() + k.slice(1), camelCased(v)]));
}

/** What the host passes a handler for one received message. */
export function hostInvocation(m: ServiceBusReceivedMessage, functionName: string, queueName: string): { body: unknown; context: InvocationContext } {
  const text = Buffer.isBuffer(m.body) ? m.body.toString("utf8") : typeof m.body === "string" ? m.body : JSON.stringify(m.body);
  let body: unknown = text;
  try { body = JSON.parse(text); } catch { /* not JSON: the host passes the string */ }
  const bindingData = {
    DeliveryCount: (m.deliveryCount ?? 0) + 1,
    MessageId: m.messageId,
    ContentType: m.contentType,
    EnqueuedTimeUtc: m.enqueuedTimeUtc?.toISOString(),
    ExpiresAtUtc: m.expiresAtUtc?.toISOString(),
    LockToken: m.lockToken,
    SequenceNumber: m.sequenceNumber?.toNumber(),
    DeadLetterSource: m.deadLetterSource,
    ApplicationProperties: m.applicationProperties ?? {},
  };
  const context = new InvocationContext({
    invocationId: randomUUID(),
    functionName,
    triggerMetadata: camelCased(bindingData) as Record<string, unknown>,
    options: { trigger: trigger.serviceBusQueue({ connection: "ServiceBusConnection", queueName }) },
    logHandler: () => {},
  });
  return { body, context };
}

/**
 * One host invocation: receive (waiting up to `maxWaitTimeInMs`), run the handler, settle.
 * `receiver` must be a peek-lock receiver created with `skipParsingBodyAsJson: true`.
 */
export async function invokeOnce(receiver: ServiceBusReceiver, handler: ServiceBusHandler, options: { functionName?: string; maxWaitTimeInMs?: number } = {}): Promise<HostOutcome> {
  const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: options.maxWaitTimeInMs ?? 500 });
  if (!m) return "none";
  const { body, context } = hostInvocation(m, options.functionName ?? "processor", receiver.entityPath);
  try {
    await handler(body, context);
  } catch {
    await receiver.abandonMessage(m);
    return "abandoned";
  }
  await receiver.completeMessage(m);
  return "completed";
}
