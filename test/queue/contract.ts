/**
 * The queue contract: ONE suite, written once, run against every `QueueAdapter`.
 *
 * For the Service Bus engineer (and anyone adding an adapter): in `test/queue/<name>.test.ts`
 *
 *   import { queueContract } from "./contract.js";
 *   queueContract("servicebus", async () => {
 *     const peer = ...;                        // a fresh queue per test (setup runs in beforeEach)
 *     const queue = await createServiceBusQueue({ ... });
 *     return { queue, maxDeliveries: 3, cleanup: async () => { await queue.close(); await peer.close(); } };
 *   }, { skip: peerMissing ? "why it cannot run here" : undefined });
 *
 * What the suite expects from `setup`:
 * - a queue with nothing in it (main and dead-letter), created for this test alone;
 * - `maxDeliveries`: the queue's configured dead-letter threshold (SQS maxReceiveCount, Service Bus
 *   MaxDeliveryCount, Pub/Sub maxDeliveryAttempts, local maxDeliveries). Keep it small (3..5);
 * - visibility/lock periods short enough to expire in a few seconds: the suite receives with
 *   `visibilitySeconds: 1`; an adapter whose lock is a queue property (Service Bus) should create the
 *   queue with a short lock duration.
 * The suite never asserts a duration: it polls with a timeout (`pollTimeoutMs`, default 25 s) and
 * fails with a message saying what it was waiting for.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DeadLetteredMessage, MessageAttributes, QueueAdapter, ReceivedMessage } from "../../shared/queue/port.js";

export interface ContractSubject {
  queue: QueueAdapter;
  /** Releases what setup created (queues, clients, servers). */
  cleanup(): Promise<void>;
  /** The dead-letter threshold the queue was configured with. */
  maxDeliveries: number;
}

export interface ContractOptions {
  /** When set, the whole suite is skipped and this reason printed loudly. */
  skip?: string;
  /** How long to poll for an expected message before failing. Default: 25000. */
  pollTimeoutMs?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every test gets a unique event id, so a leftover from another test can never satisfy it. */
let counter = 0;
const uniqueId = (label: string) => `${label}-${process.pid}-${Date.now().toString(36)}-${++counter}`;

function attributesFor(eventId: string): MessageAttributes {
  return { partner: "stripe", eventId, contentType: "application/json", receivedAt: new Date().toISOString() };
}

export function queueContract(name: string, setup: () => Promise<ContractSubject>, options: ContractOptions = {}): void {
  if (options.skip) {
    console.warn(`\n!!! queue contract [${name}] SKIPPED: ${options.skip}\n`);
    describe.skip(`queue contract [${name}]`, () => { it("skipped", () => {}); });
    return;
  }
  const pollTimeoutMs = options.pollTimeoutMs ?? 25_000;
  // Room for the slowest test: maxDeliveries redeliveries, each one poll.
  const testTimeout = pollTimeoutMs * 4;

  describe(`queue contract [${name}]`, () => {
    let subject: ContractSubject | undefined;
    const q = (): QueueAdapter => {
      if (!subject) throw new Error("setup did not run");
      return subject.queue;
    };

    beforeEach(async () => { subject = await setup(); }, 60_000);
    afterEach(async () => { await subject?.cleanup(); subject = undefined; }, 60_000);

    /** Polls `receive` until `match` is among the messages; messages that do not match are left to expire. */
    async function receiveMatching(what: string, match: (m: ReceivedMessage) => boolean, visibilitySeconds = 1): Promise<ReceivedMessage> {
      const deadline = Date.now() + pollTimeoutMs;
      while (Date.now() < deadline) {
        const batch = await q().receive({ max: 10, visibilitySeconds, waitSeconds: 1 });
        const found = batch.find(match);
        if (found) return found;
        if (batch.length === 0) await sleep(50);
      }
      throw new Error(`[${name}] timed out after ${pollTimeoutMs} ms waiting for ${what}`);
    }

    const byEventId = (eventId: string) => (m: { attributes: MessageAttributes }) => m.attributes.eventId === eventId;

    async function deadLetterMatching(what: string, eventId: string, alsoPollMain: boolean): Promise<DeadLetteredMessage> {
      const deadline = Date.now() + pollTimeoutMs;
      while (Date.now() < deadline) {
        if (alsoPollMain) {
          // Some services (SQS redrive, Pub/Sub) move a message only when a receive finds it over the limit.
          const main = await q().receive({ max: 10, visibilitySeconds: 1 });
          const leaked = main.find(byEventId(eventId));
          if (leaked) throw new Error(`[${name}] message delivered again (deliveryCount ${leaked.deliveryCount}) after reaching the maximum`);
        }
        const dead = await q().receiveDeadLetters({ max: 10, visibilitySeconds: 5, waitSeconds: 1 });
        const found = dead.find(byEventId(eventId));
        if (found) return found;
        await sleep(100);
      }
      throw new Error(`[${name}] timed out after ${pollTimeoutMs} ms waiting for ${what} in the dead-letter queue`);
    }

    it("round-trips body and attributes, first delivery counts 1", async () => {
      const eventId = uniqueId("round");
      const attributes = { ...attributesFor(eventId), traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" };
      const body = JSON.stringify({ id: eventId, type: "order.paid", note: "ünïcødé ✓" });
      const { id } = await q().send({ body, attributes });
      expect(id).toBeTruthy();

      const got = await receiveMatching("the sent message", byEventId(eventId), 30);
      expect(got.id).toBe(id);
      expect(got.body).toBe(body);
      expect(got.attributes).toMatchObject(attributes);
      expect(got.deliveryCount).toBe(1);
      expect(got.receipt).toBeTruthy();
      await q().ack(got);
    }, testTimeout);

    it("sends a batch: every message arrives once, with its own attributes", async () => {
      const eventIds = Array.from({ length: 5 }, () => uniqueId("batch"));
      const { ids } = await q().sendBatch(eventIds.map((e) => ({ body: JSON.stringify({ e }), attributes: attributesFor(e) })));
      expect(ids).toHaveLength(5);
      expect(new Set(ids).size).toBe(5);
      expect((await q().sendBatch([])).ids).toEqual([]);

      const seen = new Map<string, ReceivedMessage>();
      const deadline = Date.now() + pollTimeoutMs;
      while (seen.size < eventIds.length && Date.now() < deadline) {
        for (const m of await q().receive({ max: 10, visibilitySeconds: 30, waitSeconds: 1 })) {
          expect(seen.has(m.attributes.eventId!), `duplicate delivery of ${m.attributes.eventId}`).toBe(false);
          seen.set(m.attributes.eventId!, m);
          await q().ack(m);
        }
      }
      expect([...seen.keys()].sort()).toEqual([...eventIds].sort());
      for (const [e, m] of seen) expect(JSON.parse(m.body)).toEqual({ e });
      expect(ids.slice().sort()).toEqual([...seen.values()].map((m) => m.id).sort());
    }, testTimeout);

    it("honours max on receive", async () => {
      const eventIds = Array.from({ length: 3 }, () => uniqueId("max"));
      await q().sendBatch(eventIds.map((e) => ({ body: e, attributes: attributesFor(e) })));
      const first = await receiveMatching("any of three messages", (m) => eventIds.includes(m.attributes.eventId!), 30);
      expect(first).toBeDefined();
      const one = await q().receive({ max: 1, visibilitySeconds: 30, waitSeconds: 1 });
      expect(one.length).toBeLessThanOrEqual(1);
    }, testTimeout);

    it("redelivers when the visibility period expires, with the delivery count incremented", async () => {
      const eventId = uniqueId("visibility");
      await q().send({ body: "v", attributes: attributesFor(eventId) });
      const first = await receiveMatching("the first delivery", byEventId(eventId), 1);
      expect(first.deliveryCount).toBe(1);
      // Not settled: the visibility period lapses and the service hands it out again.
      const second = await receiveMatching("the redelivery after the visibility period", byEventId(eventId), 30);
      expect(second.id).toBe(first.id);
      expect(second.body).toBe("v");
      expect(second.deliveryCount).toBe(2);
      await q().ack(second);
    }, testTimeout);

    it("retryAfter hides the message for the delay, then redelivers it", async () => {
      const eventId = uniqueId("retry");
      await q().send({ body: "r", attributes: attributesFor(eventId) });
      const first = await receiveMatching("the first delivery", byEventId(eventId), 30);
      const outcome = await q().retryAfter(first, 4);
      expect(outcome).toEqual({ scheduled: true, delaySeconds: 4 });

      const early = await q().receive({ max: 10, visibilitySeconds: 30 });
      expect(early.filter(byEventId(eventId)), "visible before its delay").toEqual([]);

      const again = await receiveMatching("the message after its retry delay", byEventId(eventId), 30);
      expect(again.body).toBe("r");
      expect(again.deliveryCount).toBe(2);
      await q().ack(again);
    }, testTimeout);

    it("retryAfter beyond the service's limit says so and leaves the message to the caller", async () => {
      const max = q().limits.maxDelaySeconds;
      if (!Number.isFinite(max)) return;
      const eventId = uniqueId("toolong");
      await q().send({ body: "l", attributes: attributesFor(eventId) });
      const got = await receiveMatching("the message", byEventId(eventId), 30);
      const outcome = await q().retryAfter(got, max + 1);
      expect(outcome).toMatchObject({ scheduled: false, maxDelaySeconds: max });
      if (outcome.scheduled) throw new Error("unreachable");
      expect(outcome.reason.length).toBeGreaterThan(10);
      // The caller keeps its own schedule and settles the message itself.
      await q().ack(got);
    }, testTimeout);

    it("deadLetter moves the message to the DLQ with the reason readable there", async () => {
      const eventId = uniqueId("explicit");
      const body = JSON.stringify({ id: eventId });
      await q().send({ body, attributes: attributesFor(eventId) });
      const got = await receiveMatching("the message", byEventId(eventId), 30);
      const reason = "schema: field 'id' missing (test)";
      await q().deadLetter(got, reason);

      const dead = await deadLetterMatching("the explicitly dead-lettered message", eventId, false);
      expect(dead.reason).toBe(reason);
      expect(dead.body).toBe(body);
      expect(dead.attributes).toMatchObject({ partner: "stripe", eventId, contentType: "application/json" });
      await q().ackDeadLetter(dead);
      const after = await q().receiveDeadLetters({ max: 10, visibilitySeconds: 1, waitSeconds: 1 });
      expect(after.filter(byEventId(eventId))).toEqual([]);
    }, testTimeout);

    it("dead-letters automatically after the maximum number of deliveries", async () => {
      const maxDeliveries = subject!.maxDeliveries;
      const eventId = uniqueId("poison");
      await q().send({ body: "poison", attributes: attributesFor(eventId) });
      for (let attempt = 1; attempt <= maxDeliveries; attempt++) {
        const m = await receiveMatching(`delivery ${attempt} of ${maxDeliveries}`, byEventId(eventId), 30);
        expect(m.deliveryCount).toBe(attempt);
        await q().retryAfter(m, 0);
      }
      const dead = await deadLetterMatching(`the message after ${maxDeliveries} deliveries`, eventId, true);
      expect(dead.body).toBe("poison");
      expect(dead.reason).toMatch(/\S/);
      await q().ackDeadLetter(dead);
    }, testTimeout);

    it("ack removes the message for good", async () => {
      const gone = uniqueId("acked");
      const marker = uniqueId("marker");
      await q().send({ body: "acked", attributes: attributesFor(gone) });
      const got = await receiveMatching("the message to ack", byEventId(gone), 1);
      await q().ack(got);
      // A marker received after the ack, with the same visibility period, coming back proves that
      // the acked message's period has lapsed too: had the ack not removed it, it would be back.
      await q().send({ body: "marker", attributes: attributesFor(marker) });
      await receiveMatching("the marker", byEventId(marker), 1);
      const seen: ReceivedMessage[] = [];
      await receiveMatching("the marker's redelivery", (m) => { seen.push(m); return byEventId(marker)(m) && m.deliveryCount >= 2; }, 30);
      seen.push(...(await q().receive({ max: 10, visibilitySeconds: 30 })));
      expect(seen.filter(byEventId(gone)), "the acked message came back").toEqual([]);
    }, testTimeout);
  });
}
