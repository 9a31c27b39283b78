/**
 * Wires the order domain to the outbox: every applied transition enqueues an outbound
 * `order.<state>` event in the processor's transaction, so the event exists exactly when the
 * order change commits. Its id derives from the inbox entry, so a retried transaction can never
 * enqueue it twice.
 */
import { enqueue, type EnqueueOptions } from "../outbound/enqueue.js";
import type { OrderHandlerOptions } from "./orders.js";

/** The outbound event id for the transition applied by inbox entry `inboxEntryId`. */
export const orderEventId = (inboxEntryId: string): string => `order-${inboxEntryId}`;

export function enqueueOrderEvents(options: EnqueueOptions = {}): NonNullable<OrderHandlerOptions["onApplied"]> {
  return async (tx, t) => {
    await enqueue(
      tx,
      {
        id: orderEventId(t.inboxEntryId),
        type: `order.${t.to}`,
        data: { order_id: t.orderId, state: t.to, previous_state: t.from, cause: { partner: t.partnerName, inbox_entry_id: t.inboxEntryId } },
        occurredAt: t.at,
      },
      options,
    );
  };
}
