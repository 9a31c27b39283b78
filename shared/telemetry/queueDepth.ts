/**
 * The `webhooks.queue.depth` gauge for the local platform: rows waiting in the outbox and the
 * inbox, and rows parked as dead letters or quarantined, counted at each metrics collection.
 */
import type { Queryable } from "../db/port.js";
import { observeQueueDepth, type QueueName } from "./telemetry.js";

/** Current depths: `outbox` (pending deliveries), `inbox` (pending, deferred, failed), `dead_letters`, `quarantine`. */
export async function readQueueDepths(q: Queryable): Promise<Record<QueueName, number>> {
  const { rows } = await q.query<{ outbox: number; dead_letters: number; inbox: number; quarantine: number }>(
    `SELECT
       (SELECT count(*) FROM outbound_deliveries WHERE status = 'pending')::int AS outbox,
       (SELECT count(*) FROM outbound_deliveries WHERE status = 'dead')::int AS dead_letters,
       (SELECT count(*) FROM inbox_entries WHERE status IN ('pending', 'deferred', 'failed'))::int AS inbox,
       (SELECT count(*) FROM inbox_entries WHERE status = 'quarantined')::int AS quarantine`,
  );
  const r = rows[0]!;
  return { outbox: r.outbox, inbox: r.inbox, dead_letters: r.dead_letters, quarantine: r.quarantine };
}

/** Registers the gauge for this database; returns the function that unregisters it. */
export function observePlatformQueues(q: Queryable): () => void {
  return observeQueueDepth(() => readQueueDepths(q));
}
