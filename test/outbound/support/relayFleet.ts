/**
 * Several relays on one test database, as separate processes would run them: on PostgreSQL each
 * gets a pool of its own (so their claims race for real), on PGlite they share its one connection.
 * `stopAll` stops the relays and closes their pools; `reset` empties the outbox and the relays' holds.
 */
import { openDatabase } from "../../../shared/db/open.js";
import type { Database } from "../../../shared/db/port.js";
import type { Relay } from "../../../shared/outbound/index.js";
import { resetOutbound } from "./receiver.js";

export function relayFleet(ctx: { db: Database; url?: string }) {
  const relays: Relay[] = [];
  const pools: Database[] = [];
  return {
    relays,
    /** A relay's own database handle. */
    async dbForRelay(): Promise<Database> {
      if (!ctx.url) return ctx.db;
      const db = await openDatabase({ databaseUrl: ctx.url, poolSize: 4 });
      pools.push(db);
      return db;
    },
    async stopAll(): Promise<void> {
      await Promise.all(relays.splice(0).map((r) => r.stop()));
      await Promise.all(pools.splice(0).map((p) => p.close()));
    },
    async reset(): Promise<void> {
      await resetOutbound(ctx.db);
      await ctx.db.query("DELETE FROM outbound_relay_holds");
    },
  };
}
