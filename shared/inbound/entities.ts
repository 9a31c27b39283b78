/**
 * Entity state and transition log, kept by the platform for every machine (tables
 * `inbound_entities` and `inbound_transitions`, migration 012), so a user's machine needs no table
 * of its own. `reconcile` is the reconciler's one step inside the processor's transaction: lock the
 * entity, decide the event against its state, write the change and the log.
 */
import type { Queryable, Transaction } from "../db/port.js";
import { decide, type Decision, type Machine } from "./stateMachine.js";

/** The key an inbox entry records for its entity, e.g. `order:o-1` (wakes entries deferred on it). */
export const entityKey = (machine: string, entityId: string): string => `${machine}:${entityId}`;

/** Locks the entity (also before it exists), decides, and records the decision; returns it. */
export async function reconcile(
  tx: Transaction,
  machine: Machine<string, string>,
  entityId: string,
  eventType: string,
  inboxEntryId: string,
  now: Date,
): Promise<Decision<string>> {
  // Serialise every event of one entity, its creation included (no row to lock yet).
  await tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [entityKey(machine.name, entityId)]);
  const current = await tx.query<{ state: string }>("SELECT state FROM inbound_entities WHERE machine = $1 AND entity_id = $2", [machine.name, entityId]);
  const state = current.rows[0]?.state ?? null;
  const decision = decide(machine, state, eventType);
  const at = now.toISOString();
  if (decision.kind === "apply") {
    await tx.query(
      `INSERT INTO inbound_entities (machine, entity_id, state, created_at, updated_at) VALUES ($1, $2, $3, $4::timestamptz, $4::timestamptz)
       ON CONFLICT (machine, entity_id) DO UPDATE SET state = EXCLUDED.state, updated_at = EXCLUDED.updated_at, version = inbound_entities.version + 1`,
      [machine.name, entityId, decision.to, at],
    );
    await logTransition(tx, machine.name, entityId, inboxEntryId, eventType, "applied", decision.from, decision.to, at);
  } else if (decision.kind === "duplicate" || decision.kind === "stale") {
    await logTransition(tx, machine.name, entityId, inboxEntryId, eventType, decision.kind, decision.state, decision.state, at);
  }
  return decision;
}

async function logTransition(tx: Queryable, machine: string, entityId: string, entryId: string, type: string, outcome: string, from: string | null, to: string, at: string) {
  await tx.query(
    `INSERT INTO inbound_transitions (machine, entity_id, inbox_entry_id, event_type, outcome, from_state, to_state, at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::timestamptz)`,
    [machine, entityId, entryId, type, outcome, from, to, at],
  );
}

export interface EntityView {
  machine: string;
  id: string;
  state: string;
  version: number;
  createdAt: string;
  updatedAt: string;
  transitions: { eventType: string; outcome: string; from: string | null; to: string | null; at: string; inboxEntryId: string | null }[];
}

/** An entity with its transition log (oldest first), or undefined. */
export async function getEntity(db: Queryable, machine: string, id: string): Promise<EntityView | undefined> {
  const r = await db.query<Record<string, unknown>>("SELECT * FROM inbound_entities WHERE machine = $1 AND entity_id = $2", [machine, id]);
  const e = r.rows[0];
  if (!e) return undefined;
  const t = await db.query<Record<string, unknown>>(
    "SELECT event_type, outcome, from_state, to_state, at, inbox_entry_id FROM inbound_transitions WHERE machine = $1 AND entity_id = $2 ORDER BY id",
    [machine, id],
  );
  return {
    machine,
    id,
    state: String(e.state),
    version: Number(e.version),
    createdAt: new Date(e.created_at as string).toISOString(),
    updatedAt: new Date(e.updated_at as string).toISOString(),
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

/** The entity's state, or null when it does not exist. */
export async function entityState(db: Queryable, machine: string, id: string): Promise<string | null> {
  const r = await db.query<{ state: string }>("SELECT state FROM inbound_entities WHERE machine = $1 AND entity_id = $2", [machine, id]);
  return r.rows[0]?.state ?? null;
}
