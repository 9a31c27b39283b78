/**
 * What the Azure processor does with a message it could not process, given that the Functions
 * host, not our code, holds the message's lock (the Node v4 model's plain Service Bus trigger
 * completes on return and abandons on a throw; it offers no dead-letter call):
 *
 * - Retry with backoff. A failure before the inbox has the entry (database down, migrate not run
 *   yet, claim-check unreadable; once the entry is stored, the inbox's own schedule retries it)
 *   schedules a copy of the message `delay(n)` seconds ahead, with
 *   the failed-attempt count `n` as an application property, and completes the original. An
 *   abandon would be redelivered at once, and all of the queue's deliveries would be spent in
 *   seconds. After `maxAttempts` failures the message is dead-lettered.
 * - Dead-letter with the reason. We cannot settle the host's message as dead-lettered, so we
 *   send a copy carrying the reason (`webhooksDeadLetterReason`) and the time (`webhooksDeadLetterAt`),
 *   and complete the original. Each delivery of that copy is abandoned at once, without touching
 *   the database, so Service Bus moves it to `<queue>/$DeadLetterQueue` after the queue's
 *   MaxDeliveryCount (its own reason is then MaxDeliveryCountExceeded; ours is in the properties,
 *   which the dead-letter subqueue keeps). The one dead-letter alert covers both routes.
 *   Only a recent mark is honoured (`DEAD_LETTER_MARK_TTL_MS`): an operator who resubmits the
 *   message from the dead-letter subqueue an hour later gets it processed, properties and all.
 *
 * A crash between the send and the completion leaves the message twice (at least once, never
 * lost); the inbox de-duplicates by event id.
 */
import type { MessageAttributes, OutgoingMessage } from "../../shared/queue/port.js";

/** Failed attempts so far (an application property of our retry copies). */
export const RETRY_ATTEMPT = "webhooksRetryAttempt";
/** Why the platform dead-letters the message (an application property, kept in the dead-letter subqueue). */
export const DEAD_LETTER_REASON = "webhooksDeadLetterReason";
/** When the platform decided so (ISO 8601). */
export const DEAD_LETTER_AT = "webhooksDeadLetterAt";
/** How long a dead-letter mark is acted on; a copy resubmitted later is processed normally. */
export const DEAD_LETTER_MARK_TTL_MS = 60 * 60 * 1000;
/** Longest delay between two retries. */
export const MAX_RETRY_DELAY_SECONDS = 15 * 60;
/** Service Bus keeps at most 4096 characters of its own reason; we keep the property shorter still. */
const MAX_REASON_CHARS = 1024;

/** `base`, `2·base`, `4·base`… seconds, at most 15 minutes. */
export function retryDelaySeconds(failedAttempts: number, baseSeconds: number): number {
  return Math.min(MAX_RETRY_DELAY_SECONDS, baseSeconds * 2 ** Math.max(0, failedAttempts - 1));
}

/** Failed attempts including this one: those carried by the copy, plus this copy's deliveries. */
export function failedAttempts(attributes: MessageAttributes, deliveryCount: number): number {
  const carried = Number(attributes[RETRY_ATTEMPT] ?? 0);
  return (Number.isInteger(carried) && carried >= 0 ? carried : 0) + Math.max(1, deliveryCount);
}

/** The copy that waits out the next retry. */
export function retryCopy(message: { body: string; attributes: MessageAttributes }, failed: number, baseSeconds: number): OutgoingMessage {
  return { body: message.body, attributes: { ...message.attributes, [RETRY_ATTEMPT]: String(failed) }, delaySeconds: retryDelaySeconds(failed, baseSeconds) };
}

/** The copy that carries the reason into the dead-letter subqueue. */
export function deadLetterCopy(message: { body: string; attributes: MessageAttributes }, reason: string, now = new Date()): OutgoingMessage {
  return {
    body: message.body,
    attributes: { ...message.attributes, [DEAD_LETTER_REASON]: reason.slice(0, MAX_REASON_CHARS), [DEAD_LETTER_AT]: now.toISOString() },
  };
}

/** The reason, when this message is a recent dead-letter copy that must be abandoned until Service Bus dead-letters it. */
export function pendingDeadLetter(attributes: MessageAttributes, now = Date.now()): string | undefined {
  const reason = attributes[DEAD_LETTER_REASON];
  const at = Date.parse(attributes[DEAD_LETTER_AT] ?? "");
  if (reason === undefined || !Number.isFinite(at)) return undefined;
  return now - at < DEAD_LETTER_MARK_TTL_MS ? reason : undefined;
}
