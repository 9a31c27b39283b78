import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createLocalQueue } from "../../shared/queue/local.js";
import { MessageRejectedError, InvalidReceiptError } from "../../shared/queue/validate.js";
import { describeEachBackend } from "../support/databases.js";
import { queueContract } from "./contract.js";

describeEachBackend("local queue", (ctx) => {
  const fresh = (maxDeliveries = 3) => createLocalQueue({ db: ctx.db, queue: `q_${randomBytes(5).toString("hex")}`, maxDeliveries, pollIntervalMs: 50 });

  queueContract(`local/${ctx.backend}`, async () => ({ queue: fresh(), maxDeliveries: 3, cleanup: async () => {} }));

  describe("local specifics", () => {
    it("hands a delivery to one consumer only while it is invisible (SKIP LOCKED)", async () => {
      const queue = fresh();
      await queue.sendBatch(Array.from({ length: 20 }, (_, i) => ({ body: String(i) })));
      const consumers = await Promise.all(Array.from({ length: 4 }, () => queue.receive({ max: 10, visibilitySeconds: 60 })));
      const bodies = consumers.flat().map((m) => m.body);
      expect(bodies.length).toBe(20);
      expect(new Set(bodies).size).toBe(20);
    });

    it("keeps queues apart", async () => {
      const a = fresh();
      const b = fresh();
      await a.send({ body: "for a" });
      expect(await b.receive({ visibilitySeconds: 1 })).toEqual([]);
      expect((await a.receive({ visibilitySeconds: 1 })).map((m) => m.body)).toEqual(["for a"]);
    });

    it("does not deliver before a send delay, and records the delay", async () => {
      const queue = fresh();
      const { id } = await queue.send({ body: "later", delaySeconds: 3600 });
      expect(await queue.receive()).toEqual([]);
      const { rows } = await ctx.db.query<{ s: number }>(
        "SELECT extract(epoch FROM visible_at - enqueued_at)::int AS s FROM queue_messages WHERE message_id = $1", [id],
      );
      expect(rows).toEqual([{ s: 3600 }]);
    });

    it("settling with a stale receipt does nothing", async () => {
      const queue = fresh();
      await queue.send({ body: "x" });
      const [first] = await queue.receive({ visibilitySeconds: 1 });
      await queue.retryAfter(first!, 0);
      const [second] = await queue.receive({ visibilitySeconds: 60 });
      expect(second!.deliveryCount).toBe(2);
      await queue.ack(first!); // stale: must not remove the delivery someone else holds
      await queue.retryAfter(second!, 0);
      const [third] = await queue.receive({ visibilitySeconds: 60 });
      expect(third?.body).toBe("x");
    });

    it("rejects bad input with a message that says what to do", async () => {
      const queue = fresh();
      await expect(queue.send({ body: "x".repeat(1024 * 1024 + 1) })).rejects.toThrow(/claim-check/);
      await expect(queue.send({ body: "x", delaySeconds: -1 })).rejects.toBeInstanceOf(MessageRejectedError);
      await expect(queue.send({ body: "x", attributes: { "bad name": "v" } })).rejects.toThrow(/attribute name/);
      await expect(queue.ack({ id: "1", body: "", attributes: {}, deliveryCount: 1, receipt: "sqs-handle" })).rejects.toBeInstanceOf(InvalidReceiptError);
      expect(() => createLocalQueue({ db: ctx.db, queue: "bad name; DROP" })).toThrow(/queue name/);
    });
  });
});
