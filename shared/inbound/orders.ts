/**
 * The sample domain: orders moved by partner events through a state machine defined as data.
 *
 *   (absent) ─order.created→ created ─order.paid→ paid ─order.shipped→ shipped ─order.delivered→ delivered
 *                            created, paid ─order.cancelled→ cancelled
 *
 * A partner event is a JSON object `{ "type": "order.paid", "data": { "order_id": "o-1",
 * "amount_cents": 1200, "currency": "EUR" } }` (amount and currency optional). The handler locks
 * the order, asks the reconciler what the event means, and writes the order and its transition
 * log in the processor's transaction; `onApplied` runs in that same transaction (e.g. to enqueue
 * outbound `order.<state>` events through the outbox).
 */
import type { Queryable, Transaction } from "../db/port.js";
import type { HandlerOutcome, InboxHandler } from "./processor.js";
import { decide, defineMachine } from "./stateMachine.js";

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
export type OrderEvent = keyof typeof orderMachine.events;

/** An applied transition, as `onApplied` receives it. */
export interface OrderTransition {
  orderId: string;
  eventType: OrderEvent;
  from: OrderState | null;
  to: OrderState;
  /** The inbox entry that carried the event: a stable id for anything derived from it. */
  inboxEntryId: string;
  partnerName: string;
  at: Date;
}

export interface OrderHandlerOptions {
  /** Runs in the processor's transaction after a transition is applied. A throw rolls it all back. */
  onApplied?: (tx: Transaction, transition: OrderTransition) => Promise<void>;
}

interface ParsedOrderEvent {
  orderId: string;
  type: string;
  amountCents: number | null;
  currency: string | null;
}

/** Reads the fields the order domain needs; a string says what is wrong (the entry is rejected). */
export function parseOrderEvent(payload: Buffer, fallbackType: string | null): ParsedOrderEvent | string {
  let body: unknown;
  try {
    body = JSON.parse(payload.toString("utf8"));
  } catch {
    return "the payload is not JSON";
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) return "the payload is not a JSON object";
  const b = body as { type?: unknown; data?: unknown };
  const type = typeof b.type === "string" ? b.type : fallbackType;
  if (!type) return 'the payload has no "type" (e.g. "order.paid")';
  const data = (typeof b.data === "object" && b.data !== null ? b.data : {}) as Record<string, unknown>;
  const orderId = data.order_id;
  if (typeof orderId !== "string" || orderId.length === 0 || orderId.length > 128) {
    return 'the payload has no "data.order_id" (a string of 1 to 128 characters)';
  }
  const amount = data.amount_cents;
  const currency = data.currency;
  return {
    orderId,
    type,
    // Validated by the table's CHECK constraints: a bad value fails the transaction (and is retried).
    amountCents: typeof amount === "number" ? amount : null,
    currency: typeof currency === "string" ? currency : null,
  };
}

/** The inbox handler of the order domain. */
export function createOrderHandler(options: OrderHandlerOptions = {}): InboxHandler {
  return async (tx, entry, { now }): Promise<HandlerOutcome> => {
    const parsed = parseOrderEvent(entry.payload, entry.eventType);
    if (typeof parsed === "string") return { kind: "rejected", reason: `not an order event: ${parsed}` };
    const entityKey = `order:${parsed.orderId}`;

    // Serialise every event of one order (also its creation, when no row exists to lock yet).
    await tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [entityKey]);
    const current = await tx.query<{ state: OrderState }>("SELECT state FROM orders WHERE id = $1", [parsed.orderId]);
    const state = current.rows[0]?.state ?? null;
    const decision = decide(orderMachine, state, parsed.type);
    const at = now.toISOString();

    switch (decision.kind) {
      case "apply": {
        if (decision.from === null) {
          await tx.query(
            `INSERT INTO orders (id, state, amount_cents, currency, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5::timestamptz, $5::timestamptz)`,
            [parsed.orderId, decision.to, parsed.amountCents, parsed.currency, at],
          );
        } else {
          await tx.query(
            `UPDATE orders SET state = $2, amount_cents = COALESCE($3, amount_cents), currency = COALESCE($4, currency),
               updated_at = $5::timestamptz, version = version + 1
             WHERE id = $1`,
            [parsed.orderId, decision.to, parsed.amountCents, parsed.currency, at],
          );
        }
        await logTransition(tx, parsed, entry.id, "applied", decision.from, decision.to, at);
        await options.onApplied?.(tx, {
          orderId: parsed.orderId,
          eventType: parsed.type as OrderEvent,
          from: decision.from,
          to: decision.to,
          inboxEntryId: entry.id,
          partnerName: entry.partnerName,
          at: now,
        });
        return { kind: "applied", entityKey, detail: `${decision.from ?? "absent"} → ${decision.to}` };
      }
      case "duplicate":
      case "stale":
        await logTransition(tx, parsed, entry.id, decision.kind, decision.state, decision.state, at);
        return { kind: decision.kind, entityKey, detail: decision.reason };
      case "defer":
        return { kind: "deferred", entityKey, reason: decision.reason };
      case "reject":
        return { kind: "rejected", entityKey, reason: decision.reason };
    }
  };
}

async function logTransition(tx: Queryable, e: ParsedOrderEvent, entryId: string, outcome: string, from: string | null, to: string, at: string) {
  await tx.query(
    `INSERT INTO order_transitions (order_id, inbox_entry_id, event_type, outcome, from_state, to_state, at)
     VALUES ($1, $2, $3, $4, $5, $6, $7::timestamptz)`,
    [e.orderId, entryId, e.type, outcome, from, to, at],
  );
}

export interface OrderView {
  id: string;
  state: OrderState;
  amountCents: number | null;
  currency: string | null;
  createdAt: string;
  updatedAt: string;
  version: number;
  transitions: { eventType: string; outcome: string; from: string | null; to: string | null; at: string; inboxEntryId: string | null }[];
}

/** An order with its transition log (oldest first), or undefined. */
export async function getOrder(db: Queryable, id: string): Promise<OrderView | undefined> {
  const r = await db.query<Record<string, unknown>>("SELECT * FROM orders WHERE id = $1", [id]);
  const o = r.rows[0];
  if (!o) return undefined;
  const t = await db.query<Record<string, unknown>>(
    "SELECT event_type, outcome, from_state, to_state, at, inbox_entry_id FROM order_transitions WHERE order_id = $1 ORDER BY id",
    [id],
  );
  return {
    id: String(o.id),
    state: o.state as OrderState,
    amountCents: o.amount_cents == null ? null : Number(o.amount_cents),
    currency: (o.currency as string | null) ?? null,
    createdAt: new Date(o.created_at as string).toISOString(),
    updatedAt: new Date(o.updated_at as string).toISOString(),
    version: Number(o.version),
    transitions: t.rows.map((x) => ({
      eventType: String(x.event_type),
      outcome: String(x.outcome),
      from: (x.from_state as string | null) ?? null,
      to: (x.to_state as string | null) ?? null,
      at: new Date(x.at as string).toISOString(),
      inboxEntryId: (x.inbox_entry_id as string | null) ?? null,
    })),
  };
}
