import { describe, expect, it } from "vitest";
import { createSqsQueue, REDRIVE_REASON } from "../../shared/queue/sqs.js";
import { MessageRejectedError } from "../../shared/queue/validate.js";
import { createMotoQueuePair, MOTO_CLIENT_CONFIG, MOTO_URL, motoAvailable, skipUnlessAvailable } from "../support/emulators.js";
import { queueContract } from "./contract.js";

const skip = await skipUnlessAvailable("moto_server (SQS)", MOTO_URL, motoAvailable);
const MAX_RECEIVE_COUNT = 3;

async function open() {
  const pair = await createMotoQueuePair(MAX_RECEIVE_COUNT);
  const queue = await createSqsQueue({ ...pair, clientConfig: MOTO_CLIENT_CONFIG });
  return { queue, maxDeliveries: MAX_RECEIVE_COUNT, cleanup: async () => { await queue.close(); await pair.remove(); } };
}

queueContract("sqs on moto", open, { skip });

describe.skipIf(Boolean(skip))("SQS specifics (moto)", () => {
  it("names the redrive policy as the reason of an automatic dead-letter", async () => {
    const { queue, cleanup } = await open();
    try {
      await queue.send({ body: "p", attributes: { eventId: "p1" } });
      for (let i = 0; i < MAX_RECEIVE_COUNT; i++) {
        const [m] = await queue.receive({ visibilitySeconds: 30, waitSeconds: 1 });
        await queue.retryAfter(m!, 0);
      }
      expect(await queue.receive({ visibilitySeconds: 30 })).toEqual([]); // this receive triggers the redrive
      const [dead] = await queue.receiveDeadLetters({ waitSeconds: 1 });
      expect(dead).toMatchObject({ body: "p", reason: REDRIVE_REASON, attributes: { eventId: "p1" } });
    } finally {
      await cleanup();
    }
  });

  it("sends batches larger than SQS's 10 per call, in order", async () => {
    const { queue, cleanup } = await open();
    try {
      const { ids } = await queue.sendBatch(Array.from({ length: 23 }, (_, i) => ({ body: String(i) })));
      expect(ids).toHaveLength(23);
      expect(new Set(ids).size).toBe(23);
    } finally {
      await cleanup();
    }
  });

  it("refuses what SQS would refuse, before calling it", async () => {
    const { queue, cleanup } = await open();
    try {
      await expect(queue.send({ body: "x", delaySeconds: 901 })).rejects.toThrow(/900/);
      await expect(queue.send({ body: "x".repeat(256 * 1024 + 1) })).rejects.toBeInstanceOf(MessageRejectedError);
      const many = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`a${i}`, "v"]));
      await expect(queue.send({ body: "x", attributes: many })).rejects.toThrow(/at most 8 attributes/);
    } finally {
      await cleanup();
    }
  });
});
