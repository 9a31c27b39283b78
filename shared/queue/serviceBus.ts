/**
 * The Service Bus adapter: the queue port on an Azure Service Bus queue and its dead-letter
 * subqueue. The only module that imports `@azure/service-bus`, loaded on first use (dynamic
 * import) so the local platform never pays for it.
 *
 * Mapping:
 * - receive = peek-lock `receiveMessages`; the receipt is the lock token. The lock duration is a
 *   property of the queue (at most 5 min): a longer `visibilitySeconds` is held by the SDK's lock
 *   renewal, a shorter one is rounded up to the queue's lock duration (it cannot be shortened).
 * - ack = complete; deadLetter = dead-letter with `DeadLetterReason` = the reason.
 * - retryAfter(0) = abandon: Service Bus counts the delivery and dead-letters the message itself
 *   after the queue's MaxDeliveryCount (reason `MaxDeliveryCountExceeded`).
 * - retryAfter(n > 0) = schedule a copy for now + n (a scheduled message), then complete the
 *   original. The copy carries the delivery count and the original message id in application
 *   properties, so the count goes on and the id stays stable. Between the two steps the message
 *   exists twice: a crash there delivers it twice (at least once, never lost); consumers
 *   de-duplicate by event id anyway. Note that Service Bus's own MaxDeliveryCount restarts with
 *   each copy: the core's retry policy, which sees `deliveryCount`, decides when to give up.
 * - deliveryCount: the JS SDK reports the service's count of earlier failed deliveries (0 on the
 *   first); we add 1, plus the count carried by a retry copy.
 */
import { randomUUID } from "node:crypto";
import type { TokenCredential } from "@azure/core-auth";
import type {
  ServiceBusClient, ServiceBusMessage, ServiceBusReceivedMessage, ServiceBusReceiver, ServiceBusSender,
} from "@azure/service-bus";
import type {
  DeadLetteredMessage, MessageAttributes, OutgoingMessage, QueueAdapter, QueueLimits, ReceiveOptions, ReceivedMessage,
  RetryOutcome,
} from "./port.js";
import { checkDelay, checkOutgoing, definedAttributes, InvalidReceiptError, MessageRejectedError, tooLong } from "./validate.js";

export interface ServiceBusQueueOptions {
  /** A namespace connection string (`Endpoint=sb://…;SharedAccessKeyName=…;SharedAccessKey=…`). Or: */
  connectionString?: string;
  /**
   * `<namespace>.servicebus.windows.net`, to connect with an Entra ID identity instead of a
   * connection string: `credential` if given, else `DefaultAzureCredential` from `@azure/identity`
   * (managed identity in Azure, your `az login` locally), loaded only on this path.
   */
  fullyQualifiedNamespace?: string;
  /** The user-assigned managed identity's client id, for `DefaultAzureCredential`. */
  managedIdentityClientId?: string;
  /** Any `TokenCredential`; it needs the "Azure Service Bus Data Sender/Receiver" roles. */
  credential?: TokenCredential;
  /** The queue; its dead-letter subqueue is `<queueName>/$DeadLetterQueue`. */
  queueName: string;
  /** Sets the default message size limit: 256 KiB on standard, 100 MiB on premium. Default: "standard". */
  tier?: "standard" | "premium";
  /** Largest body + attributes accepted, in bytes. Default: from `tier`. */
  maxMessageBytes?: number;
  /**
   * Longest `delaySeconds` / `retryAfter` accepted. Scheduling has no service limit of its own, but a
   * scheduled message still expires with the queue's default time-to-live: keep this below it.
   * Default: 30 days.
   */
  maxDelaySeconds?: number;
}

/**
 * Application properties the adapter keeps for itself (also read by the Functions trigger
 * translation). `$` cannot start an attribute name, so they never collide with attributes.
 */
export const PRIOR_DELIVERIES = "$webhooks.priorDeliveries";
export const ORIGINAL_ID = "$webhooks.originalMessageId";
const INTERNAL_PREFIX = "$webhooks.";
/** Properties Service Bus adds to a dead-lettered message, as the SDK and as the Functions worker name them. */
const SERVICE_PROPERTIES = new Set(["DeadLetterReason", "DeadLetterErrorDescription"]);
const SERVICE_PROPERTIES_CAMEL = new Set(["deadLetterReason", "deadLetterErrorDescription"]);

/** Service Bus caps a lock at 5 minutes; longer visibility is held by renewal. */
const MAX_LOCK_SECONDS = 300;
/** Visibility can be held by renewal, but a lease that long is a stuck consumer: cap it like SQS. */
const MAX_VISIBILITY = 12 * 3600;

/**
 * The port's attributes from a message's application properties: ours and the service's left out.
 * `camelCased`: the keys come from the Functions worker, which lower-cases their first letter.
 */
export function attributesFromProperties(properties: Record<string, unknown> | undefined, camelCased = false): MessageAttributes {
  const service = camelCased ? SERVICE_PROPERTIES_CAMEL : SERVICE_PROPERTIES;
  const attributes: MessageAttributes = {};
  for (const [name, value] of Object.entries(properties ?? {})) {
    if (!name.startsWith(INTERNAL_PREFIX) && !service.has(name) && value != null) {
      attributes[name] = value instanceof Date ? value.toISOString() : String(value);
    }
  }
  return attributes;
}

/** The options cannot open a queue; the message says what to set. */
export class ServiceBusConfigError extends Error {
  override name = "ServiceBusConfigError";
}

/** Part of a batch may have been sent: the message says which messages to resend. */
export class ServiceBusSendError extends Error {
  override name = "ServiceBusSendError";
}

/**
 * Opens the adapter on one queue. Loads the SDK now (dynamic import); connects on first use.
 * @example
 * const queue = await createServiceBusQueue({ connectionString: process.env.SERVICEBUS_CONNECTION!, queueName: "inbound" });
 * const viaIdentity = await createServiceBusQueue({ fullyQualifiedNamespace: "my-ns.servicebus.windows.net", queueName: "inbound" });
 */
export async function createServiceBusQueue(options: ServiceBusQueueOptions): Promise<QueueAdapter> {
  const sdk = await import("@azure/service-bus");
  const client: ServiceBusClient = await openClient(sdk, options);
  const sender: ServiceBusSender = client.createSender(options.queueName);
  const label = `Service Bus queue ${options.queueName}`;
  const limits: QueueLimits = {
    maxMessageBytes: options.maxMessageBytes ?? (options.tier === "premium" ? 100 * 1024 * 1024 : 256 * 1024),
    maxDelaySeconds: options.maxDelaySeconds ?? 30 * 24 * 3600,
    maxVisibilitySeconds: MAX_VISIBILITY,
  };

  /** One receiver per (subqueue, visibility): lock renewal is a receiver setting. */
  const receivers = new Map<string, ServiceBusReceiver>();
  /** Messages received and not yet settled, by lock token: settling needs the SDK's message object. */
  const unsettled = new Map<string, { message: ServiceBusReceivedMessage; receiver: ServiceBusReceiver; until: number }>();

  function receiverFor(deadLetters: boolean, visibilitySeconds: number): ServiceBusReceiver {
    const key = `${deadLetters ? "dlq" : "main"}:${visibilitySeconds}`;
    let receiver = receivers.get(key);
    if (!receiver) {
      receiver = client.createReceiver(options.queueName, {
        receiveMode: "peekLock",
        subQueueType: deadLetters ? "deadLetter" : undefined,
        // Renewal stops once the lock reaches this far; 0 would switch it off, and the default is 5 min.
        maxAutoLockRenewalDurationInMs: visibilitySeconds * 1000,
        // Bodies are our UTF-8 text as raw bytes; do not let the SDK JSON-parse them.
        skipParsingBodyAsJson: true,
      });
      receivers.set(key, receiver);
    }
    return receiver;
  }

  function toServiceBus(message: OutgoingMessage, extra: Record<string, string | number> = {}): ServiceBusMessage {
    const attributes = definedAttributes(message.attributes);
    const delay = message.delaySeconds ?? 0;
    return {
      // Raw UTF-8 bytes (a data section), not a JSON-encoded string, so any consumer reads our text.
      body: Buffer.from(message.body, "utf8"),
      // The SDK does not assign ids; Service Bus duplicate detection (if enabled) keys on this one.
      messageId: randomUUID(),
      contentType: attributes.contentType,
      applicationProperties: { ...attributes, ...extra },
      scheduledEnqueueTimeUtc: delay > 0 ? new Date(Date.now() + delay * 1000) : undefined,
    };
  }

  function fromServiceBus(m: ServiceBusReceivedMessage, receiver: ServiceBusReceiver, visibilitySeconds: number): ReceivedMessage {
    const properties = m.applicationProperties ?? {};
    const attributes = attributesFromProperties(properties);
    const prior = Number(properties[PRIOR_DELIVERIES] ?? 0);
    const lockToken = m.lockToken!;
    const lockedUntil = m.lockedUntilUtc?.getTime() ?? Date.now();
    unsettled.set(lockToken, { message: m, receiver, until: Math.max(lockedUntil, Date.now() + visibilitySeconds * 1000) });
    return {
      id: String(properties[ORIGINAL_ID] ?? m.messageId ?? ""),
      body: bodyText(m.body),
      attributes,
      deliveryCount: (Number.isFinite(prior) ? prior : 0) + (m.deliveryCount ?? 0) + 1,
      receipt: lockToken,
    };
  }

  async function receiveFrom(deadLetters: boolean, receiveOptions: ReceiveOptions) {
    const visibility = receiveOptions.visibilitySeconds ?? 30;
    checkDelay(visibility, MAX_VISIBILITY, label, "visibilitySeconds");
    forgetExpired();
    const receiver = receiverFor(deadLetters, visibility);
    const messages = await receiver.receiveMessages(Math.max(receiveOptions.max ?? 10, 1), {
      // A zero wait still drains: Service Bus hands over what is available, then answers.
      maxWaitTimeInMs: Math.max((receiveOptions.waitSeconds ?? 0) * 1000, 100),
    });
    return messages.map((m) => ({ sdk: m, port: fromServiceBus(m, receiver, visibility) }));
  }

  /** Drops handles whose lock is long gone (never settled): the service has redelivered them. */
  function forgetExpired(): void {
    const horizon = Date.now() - MAX_LOCK_SECONDS * 1000;
    for (const [token, entry] of unsettled) if (entry.until < horizon) unsettled.delete(token);
  }

  function take(message: ReceivedMessage) {
    const entry = message?.receipt ? unsettled.get(message.receipt) : undefined;
    if (!entry) {
      throw new InvalidReceiptError(
        `${label}: no unsettled delivery with lock token ${JSON.stringify(message?.receipt)} in this adapter; ` +
        `a message must be settled by the adapter that received it, once (if its lock expired, it will be delivered again)`,
      );
    }
    return entry;
  }

  /** Settles, and forgets the handle only once the service has taken the settlement. */
  async function settle(message: ReceivedMessage, action: (e: ReturnType<typeof take>) => Promise<void>) {
    const entry = take(message);
    await action(entry);
    unsettled.delete(message.receipt);
  }

  async function sendBatch(messages: OutgoingMessage[]): Promise<{ ids: string[] }> {
    messages.forEach((m) => checkOutgoing(m, limits, label));
    if (messages.length === 0) return { ids: [] };
    const converted = messages.map((m) => toServiceBus(m));
    // As few AMQP batches as the link's maximum message size allows; each batch is all-or-nothing.
    let batch = await sender.createMessageBatch();
    let sent = 0;
    const flush = async (upTo: number) => {
      try {
        await sender.sendMessages(batch);
      } catch (error) {
        throw new ServiceBusSendError(`${label}: a batch failed after ${sent} of ${messages.length} messages were sent; resend messages ${sent}..${messages.length - 1}`, { cause: error });
      }
      sent = upTo;
    };
    for (const [i, m] of converted.entries()) {
      if (batch.tryAddMessage(m)) continue;
      if (batch.count > 0) await flush(i);
      batch = await sender.createMessageBatch();
      if (!batch.tryAddMessage(m)) {
        throw new MessageRejectedError(
          `${label}: message ${i} does not fit in an empty batch (${batch.maxSizeInBytes} bytes on this link); ` +
          `${sent} were sent: lower maxMessageBytes to the namespace's limit and resend from message ${sent}`,
        );
      }
    }
    if (batch.count > 0) await flush(converted.length);
    return { ids: converted.map((m) => String(m.messageId)) };
  }

  return {
    name: "servicebus",
    limits,
    async send(message) {
      checkOutgoing(message, limits, label);
      const converted = toServiceBus(message);
      await sender.sendMessages(converted);
      return { id: String(converted.messageId) };
    },
    sendBatch,
    async receive(receiveOptions = {}) {
      return (await receiveFrom(false, receiveOptions)).map((m) => m.port);
    },
    ack: (message) => settle(message, ({ message: m, receiver }) => receiver.completeMessage(m)),
    async retryAfter(message, delaySeconds): Promise<RetryOutcome> {
      if (delaySeconds > limits.maxDelaySeconds) return tooLong(delaySeconds, limits.maxDelaySeconds, "Service Bus (scheduled messages, bounded by the queue's message time-to-live)");
      checkDelay(delaySeconds, limits.maxDelaySeconds, label, "retryAfter delay");
      if (delaySeconds === 0) {
        await settle(message, ({ message: m, receiver }) => receiver.abandonMessage(m));
        return { scheduled: true, delaySeconds };
      }
      await settle(message, async ({ message: m, receiver }) => {
        const copy = toServiceBus({ body: message.body, attributes: message.attributes }, {
          [PRIOR_DELIVERIES]: message.deliveryCount,
          [ORIGINAL_ID]: message.id,
        });
        // Copy first, then complete: a failure in between duplicates the message, never loses it.
        await sender.scheduleMessages(copy, new Date(Date.now() + delaySeconds * 1000));
        await receiver.completeMessage(m);
      });
      return { scheduled: true, delaySeconds };
    },
    deadLetter: (message, reason) => settle(message, ({ message: m, receiver }) =>
      receiver.deadLetterMessage(m, {
        // Service Bus keeps at most 4096 characters of each.
        deadLetterReason: String(reason).slice(0, 4096),
        deadLetterErrorDescription: `dead-lettered by the platform after ${message.deliveryCount} deliveries`,
      })),
    async receiveDeadLetters(receiveOptions = {}): Promise<DeadLetteredMessage[]> {
      return (await receiveFrom(true, receiveOptions)).map(({ sdk: m, port }) => ({
        ...port,
        reason: m.deadLetterReason ?? "dead-lettered by Service Bus (no reason given)",
      }));
    },
    ackDeadLetter: (message) => settle(message, ({ message: m, receiver }) => receiver.completeMessage(m)),
    async close() {
      unsettled.clear();
      for (const receiver of receivers.values()) await receiver.close();
      await sender.close();
      await client.close();
    },
  };
}

async function openClient(sdk: typeof import("@azure/service-bus"), options: ServiceBusQueueOptions): Promise<ServiceBusClient> {
  if (!options.queueName) throw new ServiceBusConfigError("Service Bus: queueName is required (the queue the adapter sends to and receives from)");
  if (options.connectionString && options.fullyQualifiedNamespace) {
    throw new ServiceBusConfigError("Service Bus: set connectionString or fullyQualifiedNamespace, not both (one way to authenticate)");
  }
  if (options.connectionString) return new sdk.ServiceBusClient(options.connectionString);
  const namespace = options.fullyQualifiedNamespace;
  if (!namespace) {
    throw new ServiceBusConfigError("Service Bus: set connectionString (SAS), or fullyQualifiedNamespace (<namespace>.servicebus.windows.net) to use an Entra ID identity");
  }
  if (/^[a-z]+:\/\//i.test(namespace) || namespace.includes("/")) {
    throw new ServiceBusConfigError(`Service Bus: fullyQualifiedNamespace must be a host name such as my-ns.servicebus.windows.net; got ${JSON.stringify(namespace)}`);
  }
  let credential = options.credential;
  if (!credential) {
    const identity = await import("@azure/identity");
    credential = new identity.DefaultAzureCredential({ managedIdentityClientId: options.managedIdentityClientId });
  }
  return new sdk.ServiceBusClient(namespace, credential);
}

/** Our bodies arrive as bytes; another producer's may be a string or a structured AMQP value. */
export function bodyText(body: unknown): string {
  if (typeof body === "string") return body;
  if (body instanceof Uint8Array) return Buffer.from(body).toString("utf8");
  return JSON.stringify(body ?? null);
}
