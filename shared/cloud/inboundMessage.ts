/**
 * The queue message that carries one verified inbound webhook from a cloud ingest function to the
 * processor. The raw bytes travel exactly (base64), or, above the queue's message limit, as a
 * claim-check reference to object storage. A message that is not this shape is malformed: the
 * processor dead-letters it with the reason, it never drops it.
 */
import * as z from "zod/mini";
import { safeParse } from "../safeParse.js";
import { MalformedMessageError, type MessageAttributes, type OutgoingMessage, type ReceivedMessage } from "../queue/port.js";

export const INBOUND_MESSAGE_VERSION = 1;

const schema = z.object({
  v: z.literal(INBOUND_MESSAGE_VERSION),
  partner: z.string().check(z.minLength(1), z.maxLength(64)),
  eventId: z.string().check(z.minLength(1), z.maxLength(255)),
  eventType: z.nullable(z.string().check(z.maxLength(255))),
  receivedAt: z.iso.datetime({ offset: true }),
  payloadBase64: z.optional(z.string()),
  claimCheck: z.optional(z.string().check(z.minLength(1))),
}).check(z.refine((m) => (m.payloadBase64 === undefined) !== (m.claimCheck === undefined), {
  message: "exactly one of payloadBase64 and claimCheck is required",
}));

export type InboundMessage = z.infer<typeof schema>;

export interface InboundEvent {
  partner: string;
  eventId: string;
  eventType: string | null;
  receivedAt: Date;
  /**
   * W3C trace context to continue in the processor (docs/operations.md#one-trace-per-webhook):
   * carried as the message attribute `traceparent` (an SQS message attribute, a Service Bus
   * application property, a Pub/Sub attribute), not in the body, so any consumer can read it.
   */
  traceparent?: string | null;
}

/** Encodes an event with its bytes inline. */
export function inlineMessage(event: InboundEvent, payload: Buffer): OutgoingMessage {
  return toOutgoing({ ...header(event), payloadBase64: payload.toString("base64") }, event);
}

/** Encodes an event whose bytes are in object storage under `reference`. */
export function claimCheckMessage(event: InboundEvent, reference: string): OutgoingMessage {
  return toOutgoing({ ...header(event), claimCheck: reference }, event);
}

function header(event: InboundEvent) {
  return {
    v: INBOUND_MESSAGE_VERSION,
    partner: event.partner,
    eventId: event.eventId,
    eventType: event.eventType,
    receivedAt: event.receivedAt.toISOString(),
  } as const;
}

function toOutgoing(body: InboundMessage, event: InboundEvent): OutgoingMessage {
  const attributes: MessageAttributes = {
    partner: event.partner,
    eventId: event.eventId,
    contentType: "application/json",
    receivedAt: event.receivedAt.toISOString(),
    ...(event.traceparent ? { traceparent: event.traceparent } : {}),
  };
  return { body: JSON.stringify(body), attributes };
}

/** Reads a received message; throws MalformedMessageError saying what is wrong. */
export function decodeInboundMessage(message: Pick<ReceivedMessage, "id" | "body">): InboundMessage {
  let parsed: unknown;
  try {
    parsed = JSON.parse(message.body);
  } catch {
    throw new MalformedMessageError(`Message ${message.id} is not JSON; it cannot be an inbound webhook.`);
  }
  const result = safeParse(schema, parsed);
  if (!result.success) {
    const detail = result.error.issues.map((i) => `${i.path.join(".") || "(message)"}: ${i.message}`).join("; ");
    throw new MalformedMessageError(`Message ${message.id} is not an inbound webhook message: ${detail}`);
  }
  return result.data;
}
