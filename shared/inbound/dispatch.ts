/**
 * The inbox handler the platform runs: picks the first of the user's handlers that takes the
 * entry's partner and event type, and runs it in the processor's transaction. A reconciled handler
 * goes through the generic reconciler (entities.ts); its `handle` runs only on an applied
 * transition. An event no handler takes is `ignored` (settled, visible, replayable), or
 * quarantined when its partner's configuration says `"unhandled": "quarantine"`.
 */
import { enqueue, type EnqueueOptions } from "../outbound/enqueue.js";
import { matchesEventType } from "../outbound/eventTypes.js";
import { entityKey, reconcile } from "./entities.js";
import type { HandlerContext, InboundEvent, InboundHandler } from "./handlers.js";
import type { ClaimedEntry, HandlerOutcome, InboxHandler } from "./processor.js";

export interface DispatchOptions {
  /** Partners whose events no handler takes are quarantined instead of ignored. */
  quarantineUnhandled?: ReadonlySet<string>;
  /** For `ctx.enqueue`. */
  enqueue?: EnqueueOptions;
}

/** The handler that takes this partner's event type, if any (first match in module order). */
export function handlerFor(handlers: readonly InboundHandler[], partner: string, type: string | null): InboundHandler | undefined {
  return handlers.find((h) => (!h.partners || h.partners.includes(partner)) && type !== null && h.events.some((p) => matchesEventType(p, type)));
}

function eventOf(entry: ClaimedEntry): InboundEvent {
  let body: unknown;
  try {
    body = JSON.parse(entry.payload.toString("utf8"));
  } catch {
    body = undefined;
  }
  return { partner: entry.partnerName, id: entry.partnerEventId, type: entry.eventType, body, raw: entry.payload, inboxEntryId: entry.id, receivedAt: entry.receivedAt };
}

export function createDispatchHandler(handlers: readonly InboundHandler[], options: DispatchOptions = {}): InboxHandler {
  return async (tx, entry, { now }): Promise<HandlerOutcome> => {
    const handler = handlerFor(handlers, entry.partnerName, entry.eventType);
    if (!handler) {
      const reason = `no handler takes ${entry.partnerName} events of type ${entry.eventType ?? "(none)"}`;
      return options.quarantineUnhandled?.has(entry.partnerName) ? { kind: "rejected", reason } : { kind: "ignored", reason };
    }
    const event = eventOf(entry);
    const ctx: HandlerContext = { event, tx, now, enqueue: async (e) => { await enqueue(tx, e, options.enqueue); } };
    if (!handler.machine) {
      await handler.handle!(ctx);
      return { kind: "applied", entityKey: `handler:${handler.name}`, detail: handler.name };
    }
    const machine = handler.machine;
    const id = handler.entityId!(event);
    if ((typeof id !== "string" && typeof id !== "number") || String(id).length === 0 || String(id).length > 255) {
      return { kind: "rejected", reason: `${handler.name}: no ${machine.name} id in this event (entityId gave ${JSON.stringify(id) ?? "undefined"}; a string of 1 to 255 characters is needed)` };
    }
    const entityId = String(id);
    const key = entityKey(machine.name, entityId);
    const decision = await reconcile(tx, machine, entityId, entry.eventType!, entry.id, now);
    switch (decision.kind) {
      case "apply":
        await handler.handle?.({ ...ctx, transition: { machine: machine.name, entityId, from: decision.from, to: decision.to } });
        return { kind: "applied", entityKey: key, detail: `${decision.from ?? "absent"} → ${decision.to}` };
      case "duplicate":
      case "stale":
        return { kind: decision.kind, entityKey: key, detail: decision.reason };
      case "defer":
        return { kind: "deferred", entityKey: key, reason: decision.reason };
      case "reject":
        return { kind: "rejected", entityKey: key, reason: decision.reason };
    }
  };
}
