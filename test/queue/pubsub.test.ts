import { describe, expect, it } from "vitest";
import { createPubSubQueue } from "../../shared/queue/pubsub.js";
import { createEmulatorTopics, PUBSUB_EMULATOR_HOST, pubsubEmulatorAvailable, skipUnlessAvailable } from "../support/emulators.js";
import { queueContract } from "./contract.js";

const skip = await skipUnlessAvailable("the Pub/Sub emulator", PUBSUB_EMULATOR_HOST, pubsubEmulatorAvailable);
/** Google Cloud's minimum for a dead-letter policy; the emulator enforces the policy. */
const MAX_DELIVERY_ATTEMPTS = 5;

async function open() {
  const topics = await createEmulatorTopics(MAX_DELIVERY_ATTEMPTS);
  const queue = await createPubSubQueue(topics);
  return { queue, maxDeliveries: MAX_DELIVERY_ATTEMPTS, cleanup: async () => { await queue.close(); await topics.remove(); } };
}

queueContract("pubsub on the emulator", open, { skip });

describe.skipIf(Boolean(skip))("Pub/Sub specifics (emulator)", () => {
  it("refuses a publish delay it cannot honour, saying what to do instead", async () => {
    const { queue, cleanup } = await open();
    try {
      await expect(queue.send({ body: "x", delaySeconds: 5 })).rejects.toThrow(/cannot delay a publish.*retryAfter/);
      await expect(queue.send({ body: "x", attributes: { googThing: "v" } })).rejects.toThrow(/reserved/);
    } finally {
      await cleanup();
    }
  });

  it("reports the policy's delivery count on an automatically dead-lettered message", async () => {
    const { queue, cleanup } = await open();
    try {
      await queue.send({ body: "p", attributes: { eventId: "p1" } });
      for (let attempt = 1; attempt <= MAX_DELIVERY_ATTEMPTS; attempt++) {
        const [m] = await queue.receive({ visibilitySeconds: 30, waitSeconds: 2 });
        expect(m?.deliveryCount).toBe(attempt);
        await queue.retryAfter(m!, 0);
      }
      let dead: Awaited<ReturnType<typeof queue.receiveDeadLetters>> = [];
      for (let i = 0; i < 20 && dead.length === 0; i++) {
        await queue.receive({ visibilitySeconds: 30 });
        dead = await queue.receiveDeadLetters({ waitSeconds: 1 });
      }
      expect(dead[0]).toMatchObject({ body: "p", deliveryCount: MAX_DELIVERY_ATTEMPTS, reason: expect.stringMatching(/max delivery attempts \(5\)/) });
    } finally {
      await cleanup();
    }
  });
});
