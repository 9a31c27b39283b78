/**
 * Ordered delivery on the cloud relays (issue 15): the scheduled run the cloud functions make
 * (shared/cloud/relay.ts: runScheduledRelay, relay.runOnce passes) uses the same claim and
 * completion SQL, so two runs at once (on PostgreSQL, each on its own pool, as two function
 * instances would) still send one delivery of a key at a time, in order; a dead letter holds its
 * key (not the others) until skipped, and the next run goes on from there.
 */
import { afterEach, expect, it } from "vitest";
import { runScheduledRelay } from "../../shared/cloud/relay.js";
import { loadConfig } from "../../shared/config.js";
import { openDatabase } from "../../shared/db/open.js";
import type { Database } from "../../shared/db/port.js";
import { createSubscription, enqueueMany } from "../../shared/outbound/index.js";
import { listOrderingKeys, skipOrderingKey } from "../../shared/outbound/ordering.js";
import { createLogger } from "../../shared/telemetry/log.js";
import { describeEachBackend } from "../support/databases.js";
import { startReceiver, type Receiver } from "./support/receiver.js";
import { resetOrdering } from "./support/orderingDriver.js";

describeEachBackend("ordered delivery on the cloud relay", (ctx) => {
  let receiver: Receiver | undefined;
  const pools: Database[] = [];
  afterEach(async () => {
    await receiver?.close();
    await Promise.all(pools.splice(0).map((p) => p.close()));
    await resetOrdering(ctx.db);
  });
  const runDb = async () => {
    if (!ctx.url) return ctx.db;
    const db = await openDatabase({ databaseUrl: ctx.url, poolSize: 4 });
    pools.push(db);
    return db;
  };

  it("two scheduled runs at once: one delivery of a key at a time, in order; a dead letter blocks only its key until skipped", async () => {
    const keys = ["k0", "k1", "k2", "k3"];
    const keyOf = new Map<string, string>();
    const inFlight = new Map<string, number>();
    let most = 0;
    receiver = await startReceiver((r) => {
      const key = keyOf.get(r.webhookId)!;
      const n = (inFlight.get(key) ?? 0) + 1;
      inFlight.set(key, n);
      most = Math.max(most, n);
      // The first event of k3 is refused for good: a dead letter that blocks k3.
      const status = r.webhookId.startsWith("c-k3-0:") ? 400 : 200;
      return { status, delay: new Promise((ok) => setTimeout(ok, 10)).then(() => inFlight.set(key, inFlight.get(key)! - 1)) };
    });
    const sub = await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"], ordered: true, maxAttempts: 1 });
    const events = Array.from({ length: 60 }, (_, i) => ({ id: `c-${keys[i % 4]}-${Math.floor(i / 4)}`, type: "c.x", data: i, orderingKey: keys[i % 4]! }));
    for (const e of events) keyOf.set(`${e.id}:${sub.id}`, e.orderingKey);
    await enqueueMany(ctx.db, events);
    const config = loadConfig({ ADMIN_TOKEN: "cloud-relay-test-token", ALLOWED_DESTINATIONS: "127.0.0.1", OUTBOUND_TIMEOUT_MS: "3000" });
    const logger = createLogger({ level: "silent" });
    const run = async () => runScheduledRelay(await runDb(), config, logger, () => 60_000);
    await Promise.all([run(), run()]);

    const order = (key: string) => receiver!.received.filter((r) => keyOf.get(r.webhookId) === key).map((r) => r.webhookId);
    const expected = (key: string, n = 15) => events.filter((e) => e.orderingKey === key).slice(0, n).map((e) => `${e.id}:${sub.id}`);
    for (const key of ["k0", "k1", "k2"]) expect(order(key), key).toEqual(expected(key));
    expect(order("k3")).toEqual(expected("k3", 1));
    expect((await listOrderingKeys(ctx.db, sub.id)).map((k) => [k.orderingKey, k.blocked, k.waiting])).toEqual([["k3", true, 14]]);

    await skipOrderingKey(ctx.db, sub.id, "k3");
    await Promise.all([run(), run()]);
    expect(order("k3")).toEqual(expected("k3"));
    expect(most).toBe(1);
    expect(await listOrderingKeys(ctx.db, sub.id)).toEqual([]);
  }, 120_000);
});
