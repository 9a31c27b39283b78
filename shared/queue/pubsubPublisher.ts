/**
 * Publishing to a Pub/Sub topic through its REST API (`POST /v1/projects/P/topics/T:publish`,
 * data base64, attributes as they are), for the GCP ingest function: it only publishes, and
 * `@google-cloud/pubsub` (gRPC, protobuf, gax, google-auth-library) cost it ~2 s on its first
 * publish. On Google Cloud the request carries the service account's token from the metadata
 * server; with PUBSUB_EMULATOR_HOST it goes to the emulator over plain HTTP, unauthenticated (the
 * emulator serves the same REST paths). One attempt per send, no retry loop: a failure reaches
 * the ingest as an error, it answers 503, and the sender retries (as the SDK's retries would, but
 * with the sender's own schedule). Receiving, settling and dead-lettering stay with the SDK
 * adapter (`pubsub.ts`).
 */
import { metadataAccessToken, type AccessTokenProvider } from "../cloud/googleAccessToken.js";
import { googleErrorText, httpRequest } from "../cloud/httpRequest.js";
import type { OutgoingMessage, QueueAdapter, QueueLimits } from "./port.js";
import { checkOutgoing, definedAttributes, MessageRejectedError } from "./validate.js";

export interface PubSubPublisherOptions {
  projectId: string;
  /** Topic id. */
  topic: string;
  /** The emulator's host:port (plain HTTP, no token). Default: PUBSUB_EMULATOR_HOST; `""` ignores it. */
  emulatorHost?: string;
  /** Tokens for Google Cloud. Default: the metadata server's (`metadataAccessToken`). */
  accessToken?: AccessTokenProvider;
  /** API root off the emulator. Default: https://pubsub.googleapis.com. */
  endpoint?: string;
  /** Default: 10 000 ms; the ingest answers 503 after it, so the sender retries. */
  timeoutMs?: number;
}

export type PubSubPublisher = Pick<QueueAdapter, "name" | "limits" | "send">;

/** Pub/Sub refused or lost the publish (the message may not be on the topic). */
export class PubSubPublishError extends Error {
  override name = "PubSubPublishError";
  constructor(message: string, readonly status?: number, options?: { cause?: unknown }) {
    super(message, options);
  }
}

const MAX_ACK_DEADLINE = 600;
const MAX_ATTRIBUTE_VALUE_BYTES = 1024;
/**
 * Pub/Sub takes 10 MB of message data, but a JSON publish request is limited to 10 MiB as sent,
 * and the data travels base64 (4/3 larger): 7.5 MB of message is what fits, with room for the
 * attributes and the JSON around them. Anything larger goes by claim-check.
 */
export const REST_MAX_MESSAGE_BYTES = 7_500_000;

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
  const emulatorHost = options.emulatorHost ?? process.env.PUBSUB_EMULATOR_HOST;
  const root = emulatorHost ? `http://${emulatorHost}` : (options.endpoint ?? "https://pubsub.googleapis.com");
  const token = emulatorHost ? undefined : (options.accessToken ?? metadataAccessToken());
  const topicName = `projects/${options.projectId}/topics/${options.topic}`;
  const url = `${root}/v1/projects/${encodeURIComponent(options.projectId)}/topics/${encodeURIComponent(options.topic)}:publish`;
  const label = `Pub/Sub topic ${topicName}`;
  const limits: QueueLimits = { maxMessageBytes: REST_MAX_MESSAGE_BYTES, maxDelaySeconds: MAX_ACK_DEADLINE, maxVisibilitySeconds: MAX_ACK_DEADLINE };

  return {
    name: "pubsub",
    limits,
    async send(message) {
      checkPublishable(message, limits, label);
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (token) headers.authorization = `Bearer ${await token()}`;
      const body = JSON.stringify({ messages: [{ data: Buffer.from(message.body, "utf8").toString("base64"), attributes: definedAttributes(message.attributes) }] });
      let response;
      try {
        response = await httpRequest(url, { method: "POST", headers, body, timeoutMs: options.timeoutMs });
      } catch (error) {
        throw new PubSubPublishError(`${label}: publish got no answer (${(error as Error).message})`, undefined, { cause: error });
      }
      if (response.status !== 200) {
        const hint = response.status === 404 ? "; does the topic exist?" : response.status === 401 || response.status === 403 ? "; the function's service account needs roles/pubsub.publisher on the topic" : "";
        throw new PubSubPublishError(`${label}: publish answered ${response.status} (${googleErrorText(response)})${hint}`, response.status);
      }
      const id = (JSON.parse(response.body.toString("utf8")) as { messageIds?: string[] }).messageIds?.[0];
      if (!id) throw new PubSubPublishError(`${label}: publish answered 200 without a message id`, 200);
      return { id };
    },
  };
}
