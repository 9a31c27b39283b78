/**
 * The reconciler: a state machine defined as data, and the one pure function that decides what an
 * incoming event means for an entity in a given state. No database, no clock: the processor turns
 * a decision into inbox statuses and times, the domain module (e.g. orders.ts) into rows.
 *
 * An event is a *proposed* transition, never a command:
 * - its source states include the current one → `apply`;
 * - the entity is already in the event's target state → `duplicate` (no-op, recorded);
 * - the entity is already past the target (reachable from it) → `stale` (no-op, recorded);
 * - a source state can still be reached from the current one → `defer` (the prerequisite has
 *   not arrived yet; the processor retries until a deadline);
 * - otherwise the event can never apply (e.g. `shipped` after `cancelled`) → `reject`.
 *
 * Because the machine is acyclic, "past" is well defined, and any arrival order of one valid
 * history converges to the state the in-order history reaches (see test/inbound/reconciler.test.ts).
 */

/** The state of an entity that does not exist yet. */
export const ABSENT = null;

export interface EventRule<S extends string> {
  /** States the event applies from; `null` means "the entity does not exist yet" (a creation). */
  readonly from: readonly (S | null)[];
  readonly to: S;
}

export interface MachineDefinition<S extends string, E extends string> {
  readonly name: string;
  readonly states: readonly S[];
  readonly events: Readonly<Record<E, EventRule<S>>>;
}

export interface Machine<S extends string, E extends string> extends MachineDefinition<S, E> {
  /** Whether `to` can be reached from `from` by zero or more events (`from === to` counts). */
  reachable(from: S | null, to: S): boolean;
  isEvent(type: string): type is E;
}

export type Decision<S extends string> =
  | { kind: "apply"; from: S | null; to: S }
  | { kind: "duplicate"; state: S; reason: string }
  | { kind: "stale"; state: S; reason: string }
  | { kind: "defer"; reason: string }
  | { kind: "reject"; reason: string };

/** A state with no events out of it leads nowhere. */
const NONE: ReadonlySet<never> = new Set();

export class MachineDefinitionError extends Error {
  override name = "MachineDefinitionError";
}

/**
 * Validates a machine (known states, no cycles) and precomputes reachability.
 * @example
 * const m = defineMachine({ name: "door", states: ["open", "closed"],
 *   events: { "door.built": { from: [null], to: "closed" }, "door.opened": { from: ["closed"], to: "open" } } });
 * decide(m, "closed", "door.opened"); // { kind: "apply", from: "closed", to: "open" }
 */
export function defineMachine<S extends string, E extends string>(def: MachineDefinition<S, E>): Machine<S, E> {
  const known = new Set<S>(def.states);
  const next = new Map<S | null, Set<S>>();
  for (const [event, rule] of Object.entries(def.events) as [E, EventRule<S>][]) {
    if (!known.has(rule.to)) throw new MachineDefinitionError(`${def.name}: event ${event} goes to unknown state "${rule.to}"; add it to states.`);
    if (rule.from.length === 0) throw new MachineDefinitionError(`${def.name}: event ${event} has no source state; list at least one (null for a creation).`);
    for (const from of rule.from) {
      if (from !== null && !known.has(from)) throw new MachineDefinitionError(`${def.name}: event ${event} comes from unknown state "${from}".`);
      if (!next.has(from)) next.set(from, new Set());
      next.get(from)!.add(rule.to);
    }
  }
  const closure = new Map<S | null, Set<S>>();
  for (const start of [null, ...def.states] as (S | null)[]) {
    const seen = new Set<S>();
    const stack = [...(next.get(start) ?? NONE)];
    while (stack.length > 0) {
      const s = stack.pop()!;
      if (s === start) throw new MachineDefinitionError(`${def.name}: state "${s}" can reach itself; a reconciler machine must be acyclic so that "stale" is defined.`);
      if (seen.has(s)) continue;
      seen.add(s);
      stack.push(...(next.get(s) ?? NONE));
    }
    closure.set(start, seen);
  }
  return {
    ...def,
    reachable: (from, to) => from === to || (closure.get(from)?.has(to) ?? false),
    isEvent: (type): type is E => Object.prototype.hasOwnProperty.call(def.events, type),
  };
}

/** What `eventType` means for an entity currently in `current` (`null`: it does not exist yet). */
export function decide<S extends string, E extends string>(machine: Machine<S, E>, current: S | null, eventType: string): Decision<S> {
  if (!machine.isEvent(eventType)) {
    return { kind: "reject", reason: `${machine.name} has no event "${eventType}"; known: ${Object.keys(machine.events).join(", ")}.` };
  }
  const rule = machine.events[eventType];
  if (rule.from.includes(current)) return { kind: "apply", from: current, to: rule.to };
  if (current === rule.to) {
    return { kind: "duplicate", state: current, reason: `already ${current}` };
  }
  // `current !== null` is for the type checker: nothing reaches absence (made `true`, an equivalent survivor).
  if (current !== null && machine.reachable(rule.to, current)) {
    return { kind: "stale", state: current, reason: `${eventType} leads to ${rule.to}, but the entity is already ${current}, past it` };
  }
  const wanted = rule.from.map((s) => s ?? "(absent)").join(" or ");
  // `s !== null` is for the type checker: absence is reachable from nothing but itself, and
  // `current` is not absent when a creation gets here (made `true`, an equivalent survivor).
  if (rule.from.some((s) => s !== null && machine.reachable(current, s))) {
    return { kind: "defer", reason: `${eventType} needs state ${wanted}; the entity is ${current ?? "absent"} (a prerequisite event has not arrived yet)` };
  }
  return { kind: "reject", reason: `${eventType} needs state ${wanted}, which can no longer be reached from ${current ?? "absent"}` };
}

/** Applies `events` one by one, without retries: the state an in-order history reaches. */
export function replayInOrder<S extends string, E extends string>(machine: Machine<S, E>, events: readonly string[]): S | null {
  let state: S | null = null;
  for (const e of events) {
    const d: Decision<S> = decide(machine, state, e);
    if (d.kind === "apply") state = d.to;
  }
  return state;
}
