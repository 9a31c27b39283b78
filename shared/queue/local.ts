/**
 * The local queue adapter: the queue port on PostgreSQL (a server or the embedded PGlite), the
 * embedded default. Table `queue_messages` (migration 003). Each receive is one statement that
 * claims due rows with `FOR UPDATE SKIP LOCKED`, so any number of consumers share a queue without
 * handing the same delivery to two of them while its visibility period lasts.
 */
import { randomUUID } from "node:crypto";
import type { Queryable } from "../db/port.js";
import type {
  DeadLetteredMessage, MessageAttributes, OutgoingMessage, QueueAdapter, QueueLimits, ReceiveOptions, ReceivedMessage, RetryOutcome,
} from "./port.js";
import { checkDelay, checkOutgoing, definedAttributes, InvalidReceiptError, MessageRejectedError, tooLong } from "./validate.js";

export interface LocalQueueOptions {
  /** Where the table lives: a pool, or the platform's database. */
  db: Queryable;
  /** Queue name (letters, digits, `_.-`). Several queues share the table. */
  queue: string;
  /** Deliveries after which a message is dead-lettered instead of delivered again. Default: 5. */
  maxDeliveries?: number;
  /** How often an empty `receive` with `waitSeconds` looks again. Default: 100 ms. */
  pollIntervalMs?: number;
}

/** Limits of the local queue: generous, but bounded so it behaves like the cloud ones. */
export const LOCAL_LIMITS: QueueLimits = {
  maxMessageBytes: 1024 * 1024,
  maxDelaySeconds: 30 * 24 * 3600,
  maxVisibilitySeconds: 12 * 3600,
};

const QUEUE_NAME = /^[A-Za-z0-9_.-]{1,120}$/;

interface Row {
  id: string;
  message_id: string;
  body: string;
  attributes: MessageAttributes;
  receive_count: number;
  receipt: string;
  dead: boolean;
  dead_letter_reason: string | null;
}

// Claims up to $2 due rows of queue $1. Live rows already delivered $5 times are dead-lettered by
// this same statement instead (as SQS redrive does), so a poison message never blocks the others.
const RECEIVE_LIVE = `
  WITH due AS (
    SELECT id FROM queue_messages
    WHERE queue = $1 AND dead_lettered_at IS NULL AND visible_at <= now()
    ORDER BY visible_at, id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
  )
  UPDATE queue_messages m SET
    receive_count      = CASE WHEN m.receive_count >= $5 THEN m.receive_count ELSE m.receive_count + 1 END,
    visible_at         = CASE WHEN m.receive_count >= $5 THEN now() ELSE now() + make_interval(secs => $3) END,
    receipt            = CASE WHEN m.receive_count >= $5 THEN NULL ELSE $4::uuid END,
    dead_lettered_at   = CASE WHEN m.receive_count >= $5 THEN now() END,
    dead_letter_reason = CASE WHEN m.receive_count >= $5 THEN 'max deliveries (' || $5 || ') exceeded' END
  FROM due WHERE m.id = due.id
  RETURNING m.id::text, m.message_id::text, m.body, m.attributes, m.receive_count, m.receipt::text,
            m.dead_lettered_at IS NOT NULL AS dead, m.dead_letter_reason`;

const RECEIVE_DEAD = `
  WITH due AS (
    SELECT id FROM queue_messages
    WHERE queue = $1 AND dead_lettered_at IS NOT NULL AND visible_at <= now()
    ORDER BY visible_at, id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
  )
  UPDATE queue_messages m SET visible_at = now() + make_interval(secs => $3), receipt = $4::uuid
  FROM due WHERE m.id = due.id
  RETURNING m.id::text, m.message_id::text, m.body, m.attributes, m.receive_count, m.receipt::text,
            true AS dead, m.dead_letter_reason`;

const INSERT = `
  INSERT INTO queue_messages (queue, body, attributes, visible_at)
  SELECT $1, b.body, b.attributes, now() + make_interval(secs => b.delay)
  FROM unnest($2::text[], $3::jsonb[], $4::int[]) WITH ORDINALITY AS b(body, attributes, delay, n)
  ORDER BY b.n
  RETURNING message_id::text`;

/**
 * Opens the local queue `options.queue` on `options.db` (migrated).
 * @example
 * const queue = createLocalQueue({ db, queue: "inbound", maxDeliveries: 5 });
 * await queue.send({ body: JSON.stringify(event), attributes: { partner: "stripe", eventId: event.id } });
 */
export function createLocalQueue(options: LocalQueueOptions): QueueAdapter {
  const { db, queue } = options;
  if (!QUEUE_NAME.test(queue)) throw new MessageRejectedError(`local queue name ${JSON.stringify(queue)} is invalid: use 1-120 letters, digits, '_', '.', '-'`);
  const maxDeliveries = options.maxDeliveries ?? 5;
  if (!Number.isInteger(maxDeliveries) || maxDeliveries < 1) throw new MessageRejectedError(`maxDeliveries must be a whole number >= 1; got ${maxDeliveries}`);
  const pollIntervalMs = options.pollIntervalMs ?? 100;
  const label = `local queue ${queue}`;

  async function sendBatch(messages: OutgoingMessage[]): Promise<{ ids: string[] }> {
    if (messages.length === 0) return { ids: [] };
    for (const m of messages) checkOutgoing(m, LOCAL_LIMITS, label);
    const { rows } = await db.query<{ message_id: string }>(INSERT, [
      queue,
      messages.map((m) => m.body),
      messages.map((m) => JSON.stringify(definedAttributes(m.attributes))),
      messages.map((m) => m.delaySeconds ?? 0),
    ]);
    return { ids: rows.map((r) => r.message_id) };
  }

  /** One claim attempt; waits and retries while empty, up to `waitSeconds`. */
  async function claim(sql: string, receiveOptions: ReceiveOptions, extra: unknown[]): Promise<Row[]> {
    const max = receiveOptions.max ?? 10;
    const visibility = receiveOptions.visibilitySeconds ?? 30;
    if (!Number.isInteger(max) || max < 1) throw new MessageRejectedError(`${label}: receive max must be a whole number >= 1; got ${max}`);
    checkDelay(visibility, LOCAL_LIMITS.maxVisibilitySeconds, label, "visibilitySeconds");
    const deadline = Date.now() + (receiveOptions.waitSeconds ?? 0) * 1000;
    for (;;) {
      const { rows } = await db.query<Row>(sql, [queue, max, visibility, randomUUID(), ...extra]);
      const delivered = rows.filter((r) => r.receipt !== null);
      if (delivered.length > 0 || Date.now() + pollIntervalMs > deadline) return delivered;
      await new Promise((resolve) => setTimeout(resolve, pollIntervalMs));
    }
  }

  /** Splits `<row id>.<token>`; refuses anything else, so a foreign receipt cannot touch a row. */
  function parseReceipt(message: ReceivedMessage): [string, string] {
    const match = /^(\d+)\.([0-9a-f-]{36})$/.exec(message?.receipt ?? "");
    if (!match) throw new InvalidReceiptError(`${label}: ${JSON.stringify(message?.receipt)} is not a local queue receipt; settle a message with the adapter that received it`);
    return [match[1]!, match[2]!];
  }

  const toMessage = (r: Row): ReceivedMessage => ({
    id: r.message_id,
    body: r.body,
    attributes: r.attributes,
    deliveryCount: r.receive_count,
    receipt: `${r.id}.${r.receipt}`,
  });

  async function settleDelete(message: ReceivedMessage): Promise<void> {
    // A stale receipt (the visibility lapsed and someone else holds it now) deletes nothing, as in SQS
    // after a redelivery; the inbox de-duplicates the second processing.
    await db.query("DELETE FROM queue_messages WHERE id = $1 AND receipt = $2::uuid", parseReceipt(message));
  }

  return {
    name: "local",
    limits: LOCAL_LIMITS,
    async send(message) {
      const { ids } = await sendBatch([message]);
      return { id: ids[0]! };
    },
    sendBatch,
    async receive(receiveOptions = {}) {
      return (await claim(RECEIVE_LIVE, receiveOptions, [maxDeliveries])).map(toMessage);
    },
    ack: settleDelete,
    async retryAfter(message, delaySeconds): Promise<RetryOutcome> {
      const [id, token] = parseReceipt(message);
      if (delaySeconds > LOCAL_LIMITS.maxDelaySeconds) return tooLong(delaySeconds, LOCAL_LIMITS.maxDelaySeconds, "The local queue");
      checkDelay(delaySeconds, LOCAL_LIMITS.maxDelaySeconds, label, "retryAfter delay");
      await db.query(
        "UPDATE queue_messages SET visible_at = now() + make_interval(secs => $3), receipt = NULL WHERE id = $1 AND receipt = $2::uuid",
        [id, token, delaySeconds],
      );
      return { scheduled: true, delaySeconds };
    },
    async deadLetter(message, reason) {
      const [id, token] = parseReceipt(message);
      await db.query(
        `UPDATE queue_messages SET dead_lettered_at = now(), dead_letter_reason = $3, visible_at = now(), receipt = NULL
         WHERE id = $1 AND receipt = $2::uuid AND dead_lettered_at IS NULL`,
        [id, token, String(reason)],
      );
    },
    async receiveDeadLetters(receiveOptions = {}): Promise<DeadLetteredMessage[]> {
      const rows = await claim(RECEIVE_DEAD, receiveOptions, []);
      return rows.map((r) => ({ ...toMessage(r), reason: r.dead_letter_reason ?? "unknown" }));
    },
    ackDeadLetter: settleDelete,
    async close() {
      // The database belongs to the caller: nothing to release here.
    },
  };
}
