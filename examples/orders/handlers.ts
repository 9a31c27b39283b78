/**
 * The sample order domain, as a user's handler module: orders moved by partner events through a
 * machine defined as data, their state and transition log kept by the platform (no table of
 * their own). The demo runs it with `INBOUND_HANDLERS=examples/orders/handlers.ts`.
 *
 *   (absent) ─order.created→ created ─order.paid→ paid ─order.shipped→ shipped ─order.delivered→ delivered
 *                            created, paid ─order.cancelled→ cancelled
 *
 * A partner event is `{ "type": "order.paid", "data": { "order_id": "o-1" } }`. Every applied
 * transition enqueues an outbound `order.<state>` event in the same transaction; its id derives
 * from the inbox entry, so a retried transaction can never enqueue it twice.
 */
import { defineHandler, defineMachine } from "../../shared/inbound/handlers.js";

export const ORDER_STATES = ["created", "paid", "shipped", "delivered", "cancelled"] as const;
export type OrderState = (typeof ORDER_STATES)[number];

export const orderMachine = defineMachine({
  name: "order",
  states: ORDER_STATES,
  events: {
    "order.created": { from: [null], to: "created" },
    "order.paid": { from: ["created"], to: "paid" },
    "order.shipped": { from: ["paid"], to: "shipped" },
    "order.delivered": { from: ["shipped"], to: "delivered" },
    "order.cancelled": { from: ["created", "paid"], to: "cancelled" },
  },
});

/** The outbound event id for the transition applied by inbox entry `inboxEntryId`. */
export const orderEventId = (inboxEntryId: string): string => `order-${inboxEntryId}`;

/** `data.order_id`: a string of 1 to 128 characters, or nothing (the entry is then rejected). */
export function orderIdOf(body: unknown): string | undefined {
  const id = (body as { data?: { order_id?: unknown } } | undefined)?.data?.order_id;
  return typeof id === "string" && id.length > 0 && id.length <= 128 ? id : undefined;
}

export const orders = defineHandler({
  name: "orders",
  machine: orderMachine,
  entityId: (event) => orderIdOf(event.body),
  handle: async ({ event, transition, enqueue, now }) => {
    await enqueue({
      id: orderEventId(event.inboxEntryId),
      type: `order.${transition!.to}`,
      data: { order_id: transition!.entityId, state: transition!.to, previous_state: transition!.from, cause: { partner: event.partner, inbox_entry_id: event.inboxEntryId } },
      occurredAt: now,
    });
  },
});

export default [orders];
