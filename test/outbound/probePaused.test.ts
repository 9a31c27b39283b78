/**
 * A paused subscription is not probed: an operator's pause holds every delivery of it, the
 * circuit breaker's half-open probe included (a probe would attempt a delivery the operator
 * asked to hold). Once resumed, its due probe is claimed as before.
 */
import { randomUUID } from "node:crypto";
import { afterEach, expect, it } from "vitest";
import { createSubscription, enqueue } from "../../shared/outbound/index.js";
import { claimProbeDeliveries } from "../../shared/outbound/sql/claimDeliveries.js";
import { describeEachBackend } from "../support/databases.js";
import { resetOutbound } from "./support/receiver.js";

describeEachBackend("circuit-breaker probes of a paused subscription", (ctx) => {
  afterEach(() => resetOutbound(ctx.db));

  it("claims no probe while paused, and claims it once resumed", async () => {
    const sub = await createSubscription(ctx.db, { url: "https://receiver.example/hooks", eventTypes: ["*"] });
    await enqueue(ctx.db, { id: "probe-paused-1", type: "a.b", data: {} });
    // Disabled by the breaker, its probe due, and paused by an operator.
    await ctx.db.query("UPDATE outbound_subscriptions SET status = 'disabled', next_probe_at = now() - interval '1 second', paused_at = now() WHERE id = $1", [sub.id]);
    const claim = () => claimProbeDeliveries(ctx.db, { limit: 10, leaseSeconds: 30, leaseToken: randomUUID(), probeIntervalSeconds: 60 });
    expect(await claim()).toEqual([]);

    await ctx.db.query("UPDATE outbound_subscriptions SET paused_at = NULL WHERE id = $1", [sub.id]);
    const probes = await claim();
    expect(probes.map((p) => [p.eventId, p.probe])).toEqual([["probe-paused-1", true]]);
  });
});
