/**
 * Migration 014 on a database that already holds work (PostgreSQL and PGlite): the subscriptions,
 * events and deliveries made before it belong to the default application afterwards, keep being
 * delivered to the same subscriptions, and single-tenant calls work as before.
 */
import { afterAll, describe, expect, it } from "vitest";
import { migrate } from "../../shared/db/migrate.js";
import type { Database } from "../../shared/db/port.js";
import { enqueue } from "../../shared/outbound/enqueue.js";
import { listDeliveries } from "../../shared/outbound/deliveries.js";
import { ownerOf } from "../../shared/tenancy/access.js";
import { DEFAULT_APPLICATION_ID } from "../../shared/tenancy/applications.js";
import { postgresAvailable } from "../support/databases.js";
import { emptyDatabases, migrateBefore } from "../support/migrateBefore.js";

const backends = emptyDatabases(2);

const serverUp = await postgresAvailable();

for (const backend of backends) {
  describe.skipIf(backend.name === "postgres" && !serverUp)(`migration 014 on existing rows [${backend.name}]`, () => {
    let opened: { db: Database; close: () => Promise<void> } | undefined;
    afterAll(async () => { await opened?.close(); });

    it("moves existing subscriptions, events and deliveries to the default application", async () => {
      opened = await backend.open();
      const { db } = opened;
      await migrateBefore(db, "014");
      // Rows written by the release before, with the columns it knew.
      await db.query("INSERT INTO outbound_subscriptions (id, url, event_types, secrets) VALUES ('sub_old', 'https://example.com/h', ARRAY['old.*'], ARRAY['whsec_x'])");
      await db.query("INSERT INTO outbound_events (id, type, body) VALUES ('evt_old', 'old.x', '{}')");
      await db.query("INSERT INTO outbound_deliveries (id, event_id, subscription_id) VALUES ('evt_old:sub_old', 'evt_old', 'sub_old')");

      expect(await migrate(db)).toContain("014_applications.sql");
      const subs = await db.query<{ application_id: string }>("SELECT application_id FROM outbound_subscriptions WHERE id = 'sub_old'");
      const events = await db.query<{ application_id: string }>("SELECT application_id FROM outbound_events WHERE id = 'evt_old'");
      expect(subs.rows[0]!.application_id).toBe(DEFAULT_APPLICATION_ID);
      expect(events.rows[0]!.application_id).toBe(DEFAULT_APPLICATION_ID);
      expect(await ownerOf(db, "delivery", "evt_old:sub_old")).toBe(DEFAULT_APPLICATION_ID);
      expect((await listDeliveries(db, { applicationId: DEFAULT_APPLICATION_ID })).map((d) => d.id)).toEqual(["evt_old:sub_old"]);

      // A new event naming no application reaches the old subscription, as before.
      const sent = await enqueue(db, { id: "evt_new", type: "old.y", data: null });
      expect(sent.deliveries.map((d) => d.subscriptionId)).toEqual(["sub_old"]);
    }, 120_000);
  });
}
