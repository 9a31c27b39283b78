/**
 * The Pub/Sub adapter: the queue port on Google Cloud Pub/Sub (topic + pull subscription with a
 * dead-letter policy + a subscription on the dead-letter topic), on `@google-cloud/pubsub`, loaded
 * on first use. Honours PUBSUB_EMULATOR_HOST like the SDK does. The functions, which only publish,
 * use pubsubPublisher.ts (the same SDK, one topic, `send` alone).
 *
 * Mapping: delivery count = `deliveryAttempt`, which Pub/Sub reports ONLY when the subscription has
 * a dead-letter policy (so one is required); visibility = the ack deadline (modifyAckDeadline, at
 * most 600 s); retryAfter = modifyAckDeadline to the delay (0 = nack); automatic dead-letter = the
 * subscription's policy (maxDeliveryAttempts, 5..100); explicit dead-letter = publish a copy to the
 * dead-letter topic with a `deadLetterReason` attribute, then ack. Pub/Sub has no per-message delay
 * on publish, so `send` refuses `delaySeconds` > 0.
 *
 * It uses the generated v1 clients (unary Pull), not the streaming `Subscription`: the port asks
 * for "up to N messages now", which is what Pull is; streaming pull suits long-running listeners.
 */
import type { ClientConfig, v1 } from "@google-cloud/pubsub";
import type {
  DeadLetteredMessage, OutgoingMessage, QueueAdapter, QueueLimits, ReceiveOptions, ReceivedMessage, RetryOutcome,
} from "./port.js";
import { checkPublishable } from "./pubsubPublisher.js";
import { checkDelay, definedAttributes, InvalidReceiptError, tooLong } from "./validate.js";

export interface PubSubQueueOptions {
  projectId: string;
  /** Topic id the queue publishes to. */
  topic: string;
  /** Pull subscription id on `topic`, with a dead-letter policy to `deadLetterTopic`. */
  subscription: string;
  /** Topic id of the dead-letter policy. */
  deadLetterTopic: string;
  /** Pull subscription id on `deadLetterTopic`, read by `receiveDeadLetters`. */
  deadLetterSubscription: string;
  /** The subscription's own ackDeadlineSeconds: when a receive asks for it, no extra call is made. Default: 10. */
  subscriptionAckDeadlineSeconds?: number;
  /** Extra client settings (apiEndpoint, credentials). */
  clientConfig?: ClientConfig;
}

export const REASON_ATTRIBUTE = "deadLetterReason";
/** Attribute Pub/Sub sets on a message its dead-letter policy forwarded. */
const SOURCE_DELIVERY_COUNT = "CloudPubSubDeadLetterSourceDeliveryCount";

const MAX_ACK_DEADLINE = 600;
/** Pub/Sub's limit on an attribute value (the dead-letter reason is cut to it). */
const MAX_ATTRIBUTE_VALUE_BYTES = 1024;
const DEADLINE_EXCEEDED = 4;

type ReceivedProto = { ackId?: string | null; deliveryAttempt?: number | null; message?: { messageId?: string | null; data?: Uint8Array | string | null; attributes?: Record<string, string> | null } | null };

/**
 * Opens the Pub/Sub queue. Loads the SDK now (dynamic import).
 * @example
 * const queue = await createPubSubQueue({ projectId, topic: "inbound", subscription: "inbound-worker",
 *   deadLetterTopic: "inbound-dlq", deadLetterSubscription: "inbound-dlq-reader" });
 */
export async function createPubSubQueue(options: PubSubQueueOptions): Promise<QueueAdapter> {
  const sdk = await import("@google-cloud/pubsub");
  // The high-level client resolves emulator / endpoint / credentials settings; its options feed the v1 clients.
  const pubsub = new sdk.PubSub({ projectId: options.projectId, ...options.clientConfig });
  // On the emulator there are no credentials to find: naming the universe spares google-auth its
  // probe of the GCE metadata server (seconds of DNS timeouts and a MetadataLookupWarning per client).
  if (pubsub.isEmulator) pubsub.options.universeDomain ??= "googleapis.com";
  // Same settings, typed as the generated clients take them (ClientConfig lacks their index signature).
  const clientOptions = pubsub.options as ConstructorParameters<typeof sdk.v1.PublisherClient>[0];
  const publisher: v1.PublisherClient = new sdk.v1.PublisherClient(clientOptions);
  const subscriber: v1.SubscriberClient = new sdk.v1.SubscriberClient(clientOptions);
  const path = (kind: "topics" | "subscriptions", id: string) => `projects/${options.projectId}/${kind}/${id}`;
  const topic = path("topics", options.topic);
  const subscription = path("subscriptions", options.subscription);
  const deadLetterTopic = path("topics", options.deadLetterTopic);
  const deadLetterSubscription = path("subscriptions", options.deadLetterSubscription);
  const defaultDeadline = options.subscriptionAckDeadlineSeconds ?? 10;
  const label = `Pub/Sub topic ${topic}`;
  const limits: QueueLimits = { maxMessageBytes: 10_000_000, maxDelaySeconds: MAX_ACK_DEADLINE, maxVisibilitySeconds: MAX_ACK_DEADLINE };

  const check = (message: OutgoingMessage) => checkPublishable(message, limits, label);

  async function publish(to: string, messages: OutgoingMessage[]): Promise<string[]> {
    if (messages.length === 0) return [];
    const ids: string[] = [];
    // One Publish call takes up to 1000 messages (and 10 MB): chunk by count, the size check above bounds each.
    for (let start = 0; start < messages.length; start += 1000) {
      const [response] = await publisher.publish({
        topic: to,
        messages: messages.slice(start, start + 1000).map((m) => ({ data: Buffer.from(m.body, "utf8"), attributes: definedAttributes(m.attributes) })),
      });
      ids.push(...(response.messageIds ?? []));
    }
    return ids;
  }

  function fromProto(r: ReceivedProto): ReceivedMessage {
    const data = r.message?.data;
    const attributes = { ...(r.message?.attributes ?? {}) };
    return {
      id: r.message?.messageId ?? "",
      body: typeof data === "string" ? Buffer.from(data, "base64").toString("utf8") : Buffer.from(data ?? []).toString("utf8"),
      attributes,
      // 0/absent: no dead-letter policy on this subscription; the source count is kept on forwarded messages.
      deliveryCount: r.deliveryAttempt || Number(attributes[SOURCE_DELIVERY_COUNT] ?? 1),
      receipt: r.ackId ?? "",
    };
  }

  async function pull(from: string, receiveOptions: ReceiveOptions): Promise<ReceivedMessage[]> {
    const visibility = receiveOptions.visibilitySeconds ?? 30;
    checkDelay(visibility, MAX_ACK_DEADLINE, label, "visibilitySeconds");
    const wait = receiveOptions.waitSeconds ?? 0;
    let received: ReceivedProto[];
    try {
      const [response] = await subscriber.pull(
        { subscription: from, maxMessages: Math.max(receiveOptions.max ?? 10, 1), returnImmediately: wait === 0 },
        wait === 0 ? {} : { timeout: wait * 1000 + 1000, retry: null },
      );
      received = response.receivedMessages ?? [];
    } catch (error) {
      if ((error as { code?: number }).code === DEADLINE_EXCEEDED) return [];
      throw error;
    }
    const ackIds = received.map((r) => r.ackId!).filter(Boolean);
    // The pull leased them for the subscription's deadline; set the one asked for (at most 600 s).
    if (ackIds.length > 0 && visibility !== defaultDeadline) {
      await subscriber.modifyAckDeadline({ subscription: from, ackIds, ackDeadlineSeconds: visibility });
    }
    return received.map(fromProto);
  }

  function ackIdOf(message: ReceivedMessage): string {
    if (!message?.receipt) throw new InvalidReceiptError(`${label}: the message has no ack id; settle it with the adapter that received it`);
    return message.receipt;
  }

  const ackOn = (from: string) => async (message: ReceivedMessage) => {
    await subscriber.acknowledge({ subscription: from, ackIds: [ackIdOf(message)] });
  };

  return {
    name: "pubsub",
    limits,
    async send(message) {
      check(message);
      const [id] = await publish(topic, [message]);
      return { id: id! };
    },
    async sendBatch(messages) {
      messages.forEach(check);
      return { ids: await publish(topic, messages) };
    },
    receive: (receiveOptions = {}) => pull(subscription, receiveOptions),
    ack: ackOn(subscription),
    async retryAfter(message, delaySeconds): Promise<RetryOutcome> {
      if (delaySeconds > MAX_ACK_DEADLINE) return tooLong(delaySeconds, MAX_ACK_DEADLINE, "Pub/Sub (ack deadline)");
      checkDelay(delaySeconds, MAX_ACK_DEADLINE, label, "retryAfter delay");
      await subscriber.modifyAckDeadline({ subscription, ackIds: [ackIdOf(message)], ackDeadlineSeconds: delaySeconds });
      return { scheduled: true, delaySeconds };
    },
    async deadLetter(message, reason) {
      const ackId = ackIdOf(message);
      const attributes = { ...message.attributes, originalMessageId: message.id, [REASON_ATTRIBUTE]: String(reason).slice(0, MAX_ATTRIBUTE_VALUE_BYTES) };
      await publish(deadLetterTopic, [{ body: message.body, attributes }]);
      await subscriber.acknowledge({ subscription, ackIds: [ackId] });
    },
    async receiveDeadLetters(receiveOptions = {}): Promise<DeadLetteredMessage[]> {
      return (await pull(deadLetterSubscription, receiveOptions)).map((m) => {
        const { [REASON_ATTRIBUTE]: reason, ...attributes } = m.attributes;
        return { ...m, attributes, reason: reason ?? `max delivery attempts (${attributes[SOURCE_DELIVERY_COUNT] ?? "?"}) exceeded (Pub/Sub dead-letter policy)` };
      });
    },
    ackDeadLetter: ackOn(deadLetterSubscription),
    async close() {
      await Promise.all([publisher.close(), subscriber.close(), pubsub.close()]);
    },
  };
}
