/**
 * A completion the database does not apply is one of two things, and the relay says which: the
 * lease passed to another relay (a relay stalled past it: a warning), or the delivery was
 * cancelled because its subscription was deleted while the attempt was in flight (expected: no
 * "lease lost" warning for it). Both backends.
 */
import { afterEach, expect, it } from "vitest";
import { createSubscription, deleteSubscription, enqueue } from "../../shared/outbound/index.js";
import { describeEachBackend } from "../support/databases.js";
import { claim, complete, completion, expireLeases, resetOrdering } from "./support/orderingDriver.js";

describeEachBackend("completions not applied", (ctx) => {
  afterEach(() => resetOrdering(ctx.db));

  it("tells a delivery cancelled mid-attempt (its subscription deleted) from a lease lost to another relay", async () => {
    const kept = await createSubscription(ctx.db, { url: "https://example.com/kept", eventTypes: ["a.*"] });
    const doomed = await createSubscription(ctx.db, { url: "https://example.com/doomed", eventTypes: ["a.*"] });
    await enqueue(ctx.db, { id: "e1", type: "a.b", data: 1 });
    const held = await claim(ctx.db);
    expect(held.map((d) => d.id).sort()).toEqual([`e1:${kept.id}`, `e1:${doomed.id}`].sort());
    // Meanwhile: the doomed subscription is deleted, and the kept one's lease is taken over.
    await deleteSubscription(ctx.db, doomed.id);
    const keptDelivery = held.find((d) => d.subscriptionId === kept.id)!;
    await expireLeases(ctx.db, [keptDelivery]);
    expect((await claim(ctx.db)).map((d) => d.id)).toEqual([keptDelivery.id]);
    const result = await complete(ctx.db, held.map((d) => completion(d, "ok")));
    expect(result.stale.sort()).toEqual(held.map((d) => d.id).sort());
    expect(result.cancelled).toEqual([`e1:${doomed.id}`]);
  });
});
