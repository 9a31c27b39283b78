/**
 * Send coalescing (shared/outbound/destinations/coalesce.ts), added to the SQS and EventBridge
 * contracts (contract.test.ts): attempts that reach one destination client in the same turn go
 * out in one batch call, and each keeps its own outcome. The senders are driven directly, so the
 * attempts are known to arrive together. The faulty proxy TEST PEER (test/support/
 * faultyProxyTestPeer.ts) stands in front of moto and records each call; to have moto itself
 * refuse one entry of a batch, it rewrites that entry before forwarding (an SQS DelaySeconds of
 * 1800, an EventBridge detail that is not JSON): the refusal and the answer are moto's.
 */
import { expect, it } from "vitest";
import type { Database } from "../../../shared/db/port.js";
import { createDestinationSenders } from "../../../shared/outbound/destinations/senders.js";
import { createSubscription } from "../../../shared/outbound/index.js";
import type { DeliveryOutcome } from "../../../shared/outbound/transport.js";
import { MOTO_URL } from "../../support/emulators.js";
import { startFaultyProxyTestPeer } from "../../support/faultyProxyTestPeer.js";
import { consume } from "./contract.js";
import { eventBridgeService, sqsService, type Service } from "./services.js";

/** A subscription on `service`'s fresh target, reached through a recording proxy; `send` starts the given attempts in one turn. */
async function throughProxy(db: Database, service: Service, ordered: boolean) {
  const target = await service.target({ ordered });
  const proxy = await startFaultyProxyTestPeer(MOTO_URL);
  const sub = await createSubscription(db, { destination: { ...target.destination, endpoint: proxy.url }, eventTypes: ["*"], ordered });
  const senders = createDestinationSenders({ db });
  const send = (attempts: { n: number; key?: string }[]): Promise<DeliveryOutcome[]> => Promise.all(attempts.map(({ n, key }) => {
    const id = `evt-batch-${n}:${sub.id}`;
    return senders.deliver(sub.id, {
      url: sub.url, webhookId: id, timestamp: Math.floor(Date.now() / 1000), secrets: sub.secrets!, headers: {},
      body: `{"id":"evt-batch-${n}","type":"order.paid","timestamp":"2026-01-01T00:00:00.000Z","data":{"n":${n}}}`,
    }, { orderingKey: key ?? null });
  }));
  // The first attempt reads the subscription's destination and opens the client (a lone send);
  // the attempts after it find both ready, as a running relay's do.
  const warm = async () => {
    const [first] = await send([{ n: 99 }]);
    expect(first!.result).toBe("delivered");
    await target.read();
    proxy.requests.length = 0;
  };
  const cleanup = async () => {
    await senders.close();
    await proxy.close();
    await target.cleanup();
  };
  await warm();
  return { target, proxy, sub, send, cleanup };
}

const resultsOf = (outcomes: DeliveryOutcome[]) => outcomes.map((o) => [o.result, o.errorClass]);

export function sqsBatching(ctx: { db: () => Database }): void {
  it("SQS: attempts that arrive together go in one SendMessageBatch; an entry the queue refuses fails alone, classified, the others are delivered", async () => {
    const { target, proxy, sub, send, cleanup } = await throughProxy(ctx.db(), sqsService, false);
    try {
      proxy.rewriteNext((body) => {
        const request = JSON.parse(body) as { Entries: { DelaySeconds?: number }[] };
        request.Entries[1]!.DelaySeconds = 1800; // refused by the queue: at most 900
        return JSON.stringify(request);
      });
      const outcomes = await send([{ n: 0 }, { n: 1 }, { n: 2 }]);
      expect(proxy.requests.map((r) => r.target)).toEqual(["AmazonSQS.SendMessageBatch"]);
      expect(resultsOf(outcomes)).toEqual([["delivered", null], ["permanent", "invalid_message"], ["delivered", null]]);
      expect(outcomes[1]!.responseExcerpt).toMatch(/DelaySeconds/);
      const got = await consume(target, (g) => g.length >= 2);
      expect(got.map((m) => m.attributes["webhook-id"]).sort()).toEqual([`evt-batch-0:${sub.id}`, `evt-batch-2:${sub.id}`]);
      // A lone attempt goes by the one-message call, as before.
      await send([{ n: 3 }]);
      expect(proxy.requests.at(-1)!.target).toBe("AmazonSQS.SendMessage");
      await target.read();
    } finally {
      await cleanup();
    }
  });

  it("SQS FIFO: an ordered subscription's attempts arriving together keep each key's order; a key never has two in one batch", async () => {
    const { target, proxy, send, cleanup } = await throughProxy(ctx.db(), sqsService, true);
    try {
      const attempts = Array.from({ length: 12 }, (_, n) => ({ n, key: `cart-${n % 3}` }));
      const outcomes = await send(attempts);
      expect(outcomes.every((o) => o.result === "delivered")).toBe(true);
      // Three keys at once: batches of three, one message of each key, in turn.
      expect(proxy.requests.map((r) => r.target)).toEqual(Array(4).fill("AmazonSQS.SendMessageBatch"));
      const got = await consume(target, (g) => g.length >= 12);
      for (const key of ["cart-0", "cart-1", "cart-2"]) {
        const ns = got.filter((m) => m.group === key).map((m) => (JSON.parse(m.body) as { data: { n: number } }).data.n);
        expect(ns).toEqual(attempts.filter((a) => a.key === key).map((a) => a.n));
      }
    } finally {
      await cleanup();
    }
  });
}

export function eventBridgeBatching(ctx: { db: () => Database }): void {
  it("EventBridge: attempts that arrive together go in one PutEvents; an entry refused (its ErrorCode) fails alone, the others are delivered", async () => {
    const { target, proxy, sub, send, cleanup } = await throughProxy(ctx.db(), eventBridgeService, false);
    try {
      proxy.rewriteNext((body) => {
        const request = JSON.parse(body) as { Entries: { Detail: string }[] };
        request.Entries[0]!.Detail = "not json"; // refused by PutEvents: MalformedDetail
        return JSON.stringify(request);
      });
      const outcomes = await send([{ n: 0 }, { n: 1 }, { n: 2 }]);
      expect(proxy.requests.map((r) => r.target)).toEqual(["AWSEvents.PutEvents"]);
      expect(resultsOf(outcomes)).toEqual([["permanent", "invalid_message"], ["delivered", null], ["delivered", null]]);
      expect(outcomes[0]!.responseExcerpt).toMatch(/MalformedDetail/);
      const got = await consume(target, (g) => g.length >= 2);
      expect(got.map((m) => m.attributes["webhook-id"]).sort()).toEqual([`evt-batch-1:${sub.id}`, `evt-batch-2:${sub.id}`]);
    } finally {
      await cleanup();
    }
  });
}
