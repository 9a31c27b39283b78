/**
 * Publishing to one Pub/Sub topic with the official client, `@google-cloud/pubsub`, for the GCP
 * functions: ingest publishes every verified webhook, the processor its dead letters. Only `send`:
 * receiving, settling and dead-lettering belong to the pull adapter (`pubsub.ts`). The SDK loads on
 * the first send (dynamic import), so a forged request on a cold instance never loads it.
 *
 * The SDK finds its credentials itself (google-auth-library's application default credentials: on
 * Cloud Run, the service account's token from the metadata server) and honours
 * PUBSUB_EMULATOR_HOST (plain HTTP to the emulator, unauthenticated). Each message is published at
 * once (no batching delay: ingest answers only after Pub/Sub took the message), and a publish,
 * with the SDK's own retries of transient failures, gives up after `timeoutMs`: the ingest then
 * answers 503 and the sender retries.
 */
import type { ClientConfig, Topic } from "@google-cloud/pubsub";
import type { OutgoingMessage, QueueAdapter, QueueLimits } from "./port.js";
import { checkOutgoing, definedAttributes, MessageRejectedError } from "./validate.js";

export interface PubSubPublisherOptions {
  projectId: string;
  /** Topic id. */
  topic: string;
  /** The emulator's host:port (plain HTTP, no token). Default: PUBSUB_EMULATOR_HOST, read by the SDK. */
  emulatorHost?: string;
  /** How long one send may take, the SDK's retries included. Default: 10 000 ms; the ingest answers 503 after it. */
  timeoutMs?: number;
  /** Extra client settings (apiEndpoint, credentials). */
  clientConfig?: ClientConfig;
}

export type PubSubPublisher = Pick<QueueAdapter, "name" | "limits" | "send"> & { close(): Promise<void> };

/** Pub/Sub refused or lost the publish (the message may not be on the topic). */
export class PubSubPublishError extends Error {
  override name = "PubSubPublishError";
  /** The gRPC status code, when Pub/Sub answered (5 NOT_FOUND, 7 PERMISSION_DENIED, 4 DEADLINE_EXCEEDED, …). */
  constructor(message: string, readonly code?: number, options?: { cause?: unknown }) {
    super(message, options);
  }
}

const MAX_ACK_DEADLINE = 600;
const MAX_ATTRIBUTE_VALUE_BYTES = 1024;
/**
 * Largest message published; anything larger goes by claim-check. Pub/Sub takes 10 MB per publish
 * request, data and attributes together; 7.5 MB leaves room for the attributes and the request's
 * framing, and it is the figure the GCP stack's capacity checks use (stacks/gcp/capacity.ts). (It
 * was REST's limit: a JSON publish carries the data base64-encoded within 10 MiB.)
 */
export const REST_MAX_MESSAGE_BYTES = 7_500_000;

/** gRPC status codes a publish failure is explained by. */
const NOT_FOUND = 5;
const PERMISSION_DENIED = 7;
const UNAUTHENTICATED = 16;

/** Pub/Sub's own rules on top of the port's checks; throws MessageRejectedError. */
export function checkPublishable(message: OutgoingMessage, limits: QueueLimits, label: string): void {
  checkOutgoing(message, limits, label);
  if ((message.delaySeconds ?? 0) > 0) {
    throw new MessageRejectedError(`${label}: Pub/Sub cannot delay a publish (delaySeconds ${message.delaySeconds}); send it now and call retryAfter when it is received, or keep the schedule in the database`);
  }
  for (const [name, value] of Object.entries(definedAttributes(message.attributes))) {
    if (Buffer.byteLength(value) > MAX_ATTRIBUTE_VALUE_BYTES) throw new MessageRejectedError(`${label}: attribute ${name} is over Pub/Sub's ${MAX_ATTRIBUTE_VALUE_BYTES}-byte value limit`);
    if (name.toLowerCase().startsWith("goog")) throw new MessageRejectedError(`${label}: attribute names starting with "goog" are reserved by Pub/Sub (${name})`);
  }
}

/**
 * @example
 * const topic = createPubSubPublisher({ projectId: "acme", topic: "inbound" });
 * const { id } = await topic.send({ body: JSON.stringify(event), attributes: { partner: "shop" } });
 */
export function createPubSubPublisher(options: PubSubPublisherOptions): PubSubPublisher {
  const topicName = `projects/${options.projectId}/topics/${options.topic}`;
  const label = `Pub/Sub topic ${topicName}`;
  const limits: QueueLimits = { maxMessageBytes: REST_MAX_MESSAGE_BYTES, maxDelaySeconds: MAX_ACK_DEADLINE, maxVisibilitySeconds: MAX_ACK_DEADLINE };
  const timeout = options.timeoutMs ?? 10_000;
  let opened: Promise<{ topic: Topic; close(): Promise<void> }> | undefined;

  async function open() {
    const sdk = await import("@google-cloud/pubsub");
    // The package is CommonJS: imported dynamically from a bundle chunk, its exports arrive as `default` alone.
    const { PubSub } = "PubSub" in sdk ? sdk : (sdk as unknown as { default: typeof sdk }).default;
    const emulator = options.emulatorHost ? { apiEndpoint: options.emulatorHost, emulatorMode: true } : {};
    const pubsub = new PubSub({ projectId: options.projectId, ...emulator, ...options.clientConfig });
    // On the emulator there are no credentials to find: naming the universe spares google-auth its
    // probe of the GCE metadata server (seconds of DNS timeouts and a MetadataLookupWarning).
    if (pubsub.isEmulator) pubsub.options.universeDomain ??= "googleapis.com";
    // One message per publish request, sent at once; `timeout` bounds the call with its retries (google-gax).
    const topic = pubsub.topic(options.topic, { batching: { maxMessages: 1, maxMilliseconds: 0 }, gaxOpts: { timeout } });
    return { topic, close: () => pubsub.close() };
  }

  return {
    name: "pubsub",
    limits,
    async send(message) {
      checkPublishable(message, limits, label);
      const attempt = (opened ??= open().catch((error: unknown) => { opened = undefined; throw error; }));
      const { topic } = await attempt;
      try {
        return { id: await topic.publishMessage({ data: Buffer.from(message.body, "utf8"), attributes: definedAttributes(message.attributes) }) };
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        const hint = code === NOT_FOUND ? "; does the topic exist?"
          : code === PERMISSION_DENIED || code === UNAUTHENTICATED ? "; the function's service account needs roles/pubsub.publisher on the topic"
          : "";
        throw new PubSubPublishError(`${label}: publish failed (${(error as Error).message})${hint}`, typeof code === "number" ? code : undefined, { cause: error });
      }
    },
    async close() {
      const current = opened;
      opened = undefined;
      if (current) await (await current).close();
    },
  };
}
