/**
 * The API for your own inbound code: a handler module (named by `INBOUND_HANDLERS` locally, bundled
 * into each cloud's processor by `INBOUND_HANDLERS` at build time) exports handlers made with
 * `defineHandler`. Each says which partners and event types it takes; a reconciled one also names a
 * machine (`defineMachine`) and how to find the entity id in an event, and the platform keeps the
 * entity's state and transition log. A handler's `handle` runs in the processor's transaction,
 * with the state change and the inbox update: its writes through `ctx.tx` and its `ctx.enqueue`
 * of outbound events commit with them, or not at all.
 *
 * @example
 * // handlers.js (plain JavaScript works too: the platform validates what it loads)
 * export default [
 *   defineHandler({ name: "pushes", partners: ["github"], events: ["push"],
 *     handle: async (ctx) => { await ctx.tx.query("INSERT INTO pushes (id) VALUES ($1)", [ctx.event.id]); } }),
 *   defineHandler({ name: "invoices", partners: ["stripe"], machine: invoiceMachine,
 *     entityId: (e) => e.body.data?.object?.id }),
 * ];
 */
import type { Transaction } from "../db/port.js";
import type { OutboundEvent } from "../outbound/enqueue.js";
import { eventPatternProblem } from "../outbound/eventTypes.js";
import { defineMachine, type Machine, type MachineDefinition } from "./stateMachine.js";

export { defineMachine, type Machine, type MachineDefinition } from "./stateMachine.js";

/** A verified, de-duplicated inbound event as a handler sees it. */
export interface InboundEvent {
  /** The partner's name (the `<partner>` of `POST /webhooks/<partner>`). */
  partner: string;
  /** The partner's event id (Stripe `evt_…`, GitHub's delivery id, `webhook-id`, …). */
  id: string;
  /** The event type as the partner's scheme names it (`push`, `issues.opened`, `invoice.paid`), or null. */
  type: string | null;
  /** The body parsed as JSON (undefined when it is not JSON). */
  body: any;
  /** The exact bytes the partner signed. */
  raw: Buffer;
  /** The inbox entry that holds it: a stable id for anything derived from it. */
  inboxEntryId: string;
  receivedAt: Date;
}

/** An applied transition of a reconciled handler. */
export interface AppliedTransition {
  machine: string;
  entityId: string;
  from: string | null;
  to: string;
}

export interface HandlerContext {
  event: InboundEvent;
  /** The processor's transaction: the handler's own reads and writes. */
  tx: Transaction;
  now: Date;
  /** Enqueues an outbound event in this transaction (see shared/outbound/enqueue.ts). */
  enqueue(event: OutboundEvent): Promise<void>;
  /** Set for a reconciled handler: the transition just applied. */
  transition?: AppliedTransition;
}

export interface HandlerDefinition {
  /** Named in logs and in the entry's outcome detail. */
  name: string;
  /** Partners whose events it takes. Default: every partner. */
  partners?: readonly string[];
  /**
   * Event types it takes: exact (`push`), prefix (`invoice.*`) or `*`. Default: the machine's
   * events for a reconciled handler; required otherwise.
   */
  events?: readonly string[];
  /** A reconciled domain: the machine the events move entities through. */
  machine?: Machine<string, string> | MachineDefinition<string, string>;
  /** With `machine`: the entity an event is about; undefined/null/"" rejects (quarantines) the entry. */
  entityId?: (event: InboundEvent) => unknown;
  /**
   * The handler's own work, in the processor's transaction. For a reconciled handler it runs only
   * when a transition is applied (not for duplicates, stale events or deferrals). A throw rolls
   * everything back; the entry is retried on the schedule.
   */
  handle?: (ctx: HandlerContext) => Promise<void> | void;
}

/** A validated handler, as the platform runs it. */
export interface InboundHandler extends Omit<HandlerDefinition, "machine" | "events"> {
  readonly events: readonly string[];
  readonly machine?: Machine<string, string>;
}

export class HandlerDefinitionError extends Error {
  override name = "HandlerDefinitionError";
}

const isMachine = (m: unknown): m is Machine<string, string> => typeof (m as Machine<string, string>).reachable === "function";

/**
 * Validates a handler: a name, valid event patterns, a machine with `entityId`, or a `handle`.
 * @throws HandlerDefinitionError saying what to fix.
 */
export function defineHandler(def: HandlerDefinition): InboundHandler {
  const where = `inbound handler ${JSON.stringify(def?.name ?? "(unnamed)")}`;
  if (typeof def !== "object" || def === null) throw new HandlerDefinitionError("An inbound handler must be an object made with defineHandler({ name, events, handle }).");
  if (typeof def.name !== "string" || def.name.length === 0) throw new HandlerDefinitionError(`${where}: give it a name (a non-empty string).`);
  if (def.partners !== undefined && (!Array.isArray(def.partners) || def.partners.some((p) => typeof p !== "string"))) {
    throw new HandlerDefinitionError(`${where}: partners must be a list of partner names, e.g. ["stripe"].`);
  }
  const machine = def.machine === undefined ? undefined : isMachine(def.machine) ? def.machine : defineMachine(def.machine);
  if (machine && typeof def.entityId !== "function") throw new HandlerDefinitionError(`${where}: a machine needs entityId(event), which finds the entity an event is about.`);
  if (!machine && typeof def.handle !== "function") throw new HandlerDefinitionError(`${where}: give it a handle(ctx) function, or a machine and entityId.`);
  if (def.handle !== undefined && typeof def.handle !== "function") throw new HandlerDefinitionError(`${where}: handle must be a function.`);
  const events = def.events ?? (machine ? Object.keys(machine.events) : undefined);
  if (!Array.isArray(events) || events.length === 0) throw new HandlerDefinitionError(`${where}: list the event types it takes, e.g. events: ["push"] or ["invoice.*"].`);
  for (const e of events) {
    const problem = eventPatternProblem(e);
    if (problem) throw new HandlerDefinitionError(`${where}: event ${JSON.stringify(e)} ${problem}.`);
  }
  return { ...def, events, machine };
}

/**
 * The handlers a module exports: its default export or `handlers`, a handler or a list of them.
 * @throws HandlerDefinitionError when the module exports none.
 */
export function handlersOf(module: unknown, source = "the handler module"): InboundHandler[] {
  const m = module as { default?: unknown; handlers?: unknown } | null;
  const exported = m?.handlers ?? m?.default;
  if (exported === undefined) throw new HandlerDefinitionError(`${source} exports no handlers: export default [defineHandler({ … })] (or a named export "handlers").`);
  const list = Array.isArray(exported) ? exported : [exported];
  return list.map((h) => defineHandler(h as HandlerDefinition));
}
