/**
 * The Pub/Sub push trigger, translated. Pub/Sub (a push subscription, or Eventarc for a Cloud Run
 * function) POSTs each message; a 2xx answer acks it, anything else nacks it and Pub/Sub retries
 * under the subscription's retry policy until its dead-letter policy forwards it.
 *
 * Two shapes arrive:
 * - the push envelope: `{ message: { data (base64), attributes, messageId, publishTime }, subscription, deliveryAttempt? }`;
 * - a CloudEvent `google.cloud.pubsub.topic.v1.messagePublished` whose `data` is that envelope
 *   (structured mode, or the CloudEvent object a functions framework hands over).
 * No SDK is needed for either: this module only reads JSON.
 */
import { MalformedMessageError, type ReceivedMessage } from "../port.js";

/** The push body does not have Pub/Sub's shape. `problems` lists each, with its path. */
export class PushEnvelopeError extends MalformedMessageError {
  override name = "PushEnvelopeError";
  constructor(readonly problems: string[]) {
    super(`Not a Pub/Sub push message: ${problems.join("; ")}`);
  }
}

export const MESSAGE_PUBLISHED = "google.cloud.pubsub.topic.v1.messagePublished";

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Translates a push body (parsed JSON) into a message. Throws PushEnvelopeError naming every
 * problem. The receipt is `<subscription>/<messageId>`: a push delivery is settled by the HTTP answer.
 */
export function fromPubSubPush(body: unknown): ReceivedMessage & { subscription: string; publishTime?: string } {
  let envelope = body;
  let where = "";
  if (isObject(body) && "specversion" in body) {
    if (body.type !== MESSAGE_PUBLISHED) throw new PushEnvelopeError([`CloudEvent type is ${JSON.stringify(body.type)}, expected ${MESSAGE_PUBLISHED}`]);
    envelope = body.data;
    where = "data.";
  }
  if (!isObject(envelope)) throw new PushEnvelopeError([`${where || "body"} must be a JSON object with a \`message\``]);
  const problems: string[] = [];
  const message = envelope.message;
  if (!isObject(message)) {
    throw new PushEnvelopeError([`${where}message must be an object`]);
  }
  const messageId = message.messageId ?? message.message_id;
  if (typeof messageId !== "string" || messageId === "") problems.push(`${where}message.messageId must be a non-empty string`);
  const data = message.data ?? "";
  if (typeof data !== "string" || !BASE64.test(data) || data.length % 4 !== 0) problems.push(`${where}message.data must be base64 text`);
  const attributes: Record<string, string> = {};
  if (message.attributes !== undefined && message.attributes !== null) {
    if (!isObject(message.attributes)) problems.push(`${where}message.attributes must be an object of strings`);
    else for (const [name, value] of Object.entries(message.attributes)) {
      if (typeof value === "string") attributes[name] = value;
      else problems.push(`${where}message.attributes.${name} must be a string`);
    }
  }
  const subscription = envelope.subscription;
  if (typeof subscription !== "string" || subscription === "") problems.push(`${where}subscription must be a non-empty string`);
  // Present only when the subscription has a dead-letter policy; at the top level, or (some senders) in message.
  const attempt = envelope.deliveryAttempt ?? message.deliveryAttempt;
  if (attempt !== undefined && attempt !== null && !(Number.isInteger(attempt) && (attempt as number) >= 1)) {
    problems.push(`${where}deliveryAttempt must be a whole number >= 1`);
  }
  if (problems.length > 0) throw new PushEnvelopeError(problems);
  const publishTime = message.publishTime ?? message.publish_time;
  return {
    id: messageId as string,
    body: Buffer.from(data as string, "base64").toString("utf8"),
    attributes,
    deliveryCount: (attempt as number | undefined) ?? 1,
    receipt: `${subscription as string}/${messageId as string}`,
    subscription: subscription as string,
    publishTime: typeof publishTime === "string" ? publishTime : undefined,
  };
}

/** What to answer Pub/Sub: 204 acks; 400 and 500 nack (it retries, then dead-letters). */
export interface PushResponse {
  status: 204 | 400 | 500;
  body: string;
}

/**
 * Translates the push, runs `handler`, and says what to answer. A body that is not a push message
 * answers 400 with the problems (and is retried, then dead-lettered by the subscription: nothing is
 * acked unread); a handler failure answers 500 with a short text, never a stack trace.
 * @example
 * const { status, body } = await handlePubSubPush(JSON.parse(raw), (m) => inbox.process(m));
 */
export async function handlePubSubPush(
  body: unknown,
  handler: (message: ReceivedMessage) => Promise<void>,
  options: { onError?: (error: unknown, message: ReceivedMessage) => void } = {},
): Promise<PushResponse> {
  let message: ReceivedMessage;
  try {
    message = fromPubSubPush(body);
  } catch (error) {
    if (error instanceof PushEnvelopeError) return { status: 400, body: error.message };
    throw error;
  }
  try {
    await handler(message);
    return { status: 204, body: "" };
  } catch (error) {
    options.onError?.(error, message); // the caller logs it; the sender gets no internals
    const name = error instanceof Error ? error.name : "Error";
    return { status: 500, body: `message ${message.id} not processed (${name}); Pub/Sub will redeliver it` };
  }
}
