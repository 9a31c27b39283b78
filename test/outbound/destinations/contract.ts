/**
 * The destination contract (issue 31, must show 1): what every queue or broker destination
 * guarantees, run through the relay against each kind's service (services.ts):
 *
 * 1. the message is the signed envelope, and verifies with the `standardwebhooks` library from the
 *    message's attributes alone;
 * 2. a delivery sent twice (the relay lost its completion: at least once) carries one id both
 *    times, and a service that de-duplicates (SQS FIFO, SNS FIFO) keeps one copy;
 * 3. an ordered subscription keeps each key's order, under the service's ordering key (FIFO group,
 *    session, Pub/Sub ordering key);
 * 4. a refused send (the entity does not exist) is dead-lettered at once as `not_found`, and a
 *    replay after the destination is corrected delivers it;
 * 5. a send without an answer is retried with backoff, then dead-lettered when the attempts run out.
 */
import { createServer, type Server } from "node:net";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  createRelay, createSubscription, enqueue, getDelivery, listAttempts, replayDeadLetter, updateSubscription, type Relay,
} from "../../../shared/outbound/index.js";
import type { RetryPolicy } from "../../../shared/outbound/retryPolicy.js";
import { createTransport, type Transport } from "../../../shared/outbound/transport.js";
import { describeEachBackend } from "../../support/databases.js";
import { waitFor } from "../support/receiver.js";
import type { Consumed, Service, Target } from "./services.js";

export const FAST: RetryPolicy = { baseSeconds: 0.05, capSeconds: 0.2, maxAttempts: 3, retryAfterCapSeconds: 2 };

/** Collects what a target's consumer got until `until` holds (or the time runs out). */
export async function consume(target: Target, until: (got: Consumed[]) => boolean, timeoutMs = 15_000): Promise<Consumed[]> {
  const got: Consumed[] = [];
  await waitFor("the messages at the destination", async () => {
    got.push(...(await target.read()));
    return until(got);
  }, timeoutMs, 100);
  return got;
}

/** A port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export function destinationContract(service: Service, options: { skip?: string; ordered: "kept" | "refused"; extra?: (ctx: { db: () => import("../../../shared/db/port.js").Database }) => void } ) {
  const run = options.skip ? describe.skip : describe;
  run(`${service.kind} destination contract`, () => {
    describeEachBackend(`${service.kind} destination`, (ctx) => {
      let transport: Transport;
      let relay: Relay | undefined;
      const targets: Target[] = [];
      const target = async (ordered = false) => {
        const t = await service.target({ ordered });
        targets.push(t);
        return t;
      };
      const startRelay = async () => {
        relay = createRelay({ db: ctx.db, transport, retryPolicy: FAST, pollIntervalMs: 20 });
        await relay.start();
      };
      const settled = async (id: string) => (await waitFor(`delivery ${id} settled`, async () => {
        const d = await getDelivery(ctx.db, id);
        return d.status !== "pending" && !d.leased ? d : null;
      }, 20_000))!;

      beforeAll(() => { transport = createTransport({ timeoutMs: 5000 }); });
      afterAll(() => transport?.close());
      afterEach(async () => {
        await relay?.stop();
        relay = undefined;
        for (const t of targets.splice(0)) await t.cleanup().catch(() => {});
        await ctx.db.query("TRUNCATE outbound_attempt_rows, outbound_replays, outbound_deliveries, outbound_events, outbound_subscriptions CASCADE");
      });

      it("delivers the signed envelope: it verifies with the standardwebhooks library from the message's attributes", async () => {
        const t = await target();
        const sub = await createSubscription(ctx.db, { destination: t.destination, eventTypes: ["order.*"] });
        expect(sub.destination.kind).toBe(service.kind);
        const events = ["a", "b", "c"].map((n) => ({ id: `evt-${service.kind}-${n}`, type: "order.paid", data: { n, amount: 42 } }));
        for (const e of events) await enqueue(ctx.db, e);
        await startRelay();
        for (const e of events) expect((await settled(`${e.id}:${sub.id}`)).status).toBe("delivered");
        const got = await consume(t, (g) => g.length >= 3);
        expect(got).toHaveLength(3);
        const verifier = new Webhook(sub.secrets![0]!);
        for (const m of got) {
          const payload = verifier.verify(m.body, m.attributes) as unknown as { id: string; type: string; data: unknown }; // throws unless it verifies
          const event = events.find((e) => e.id === payload.id)!;
          expect(payload).toMatchObject({ type: "order.paid", data: event.data });
          expect(m.attributes["webhook-id"]).toBe(`${event.id}:${sub.id}`);
          expect(m.attributes["content-type"]).toBe("application/json");
          if (service.kind === "eventbridge") expect(m.attributes["x-detail-type"]).toBe("order.paid");
          // A tampered body does not verify: the attributes are what a consumer checks against.
          expect(() => verifier.verify(m.body.replace("42", "43"), m.attributes)).toThrow();
        }
        const [attempt] = await listAttempts(ctx.db, `${events[0]!.id}:${sub.id}`);
        expect(attempt).toMatchObject({ result: "delivered", errorClass: null, status: null });
        // The attempt log keeps the attributes sent, as it keeps an HTTP attempt's headers.
        expect(attempt!.requestHeaders).toMatchObject({ "webhook-id": `${events[0]!.id}:${sub.id}`, "content-type": "application/json" });
      });

      it("a delivery sent again carries the same id; a service that de-duplicates keeps one copy", async () => {
        const t = await target(service.dedupes);
        const sub = await createSubscription(ctx.db, { destination: t.destination, eventTypes: ["*"] });
        await enqueue(ctx.db, { id: "evt-twice", type: "order.paid", data: {} });
        const id = `evt-twice:${sub.id}`;
        await startRelay();
        await settled(id);
        // As if the relay died after the send and before writing it down: the delivery is due again.
        await ctx.db.query("UPDATE outbound_deliveries SET status = 'pending', next_attempt_at = now(), delivered_at = NULL WHERE id = $1", [id]);
        await ctx.db.query("SELECT pg_notify('outbound_deliveries', '')");
        await waitFor("the second attempt", async () => (await listAttempts(ctx.db, id)).filter((a) => a.result === "delivered").length === 2, 20_000);
        const got = await consume(t, (g) => g.length >= (service.dedupes ? 1 : 2));
        await new Promise((r) => setTimeout(r, 500));
        got.push(...(await t.read()));
        expect(new Set(got.map((m) => m.attributes["webhook-id"]))).toEqual(new Set([id]));
        if (service.dedupes) expect(got).toHaveLength(1);
        else expect(got).toHaveLength(2);
        for (const m of got) if (m.serviceId !== undefined) expect(m.serviceId).toBe(id);
      });

      if (options.ordered === "kept") {
        it("an ordered subscription keeps each key's order, under the service's ordering key", async () => {
          const t = await target(true);
          const sub = await createSubscription(ctx.db, { destination: t.destination, eventTypes: ["*"], ordered: true });
          const keys = ["cart-1", "cart-2"];
          for (let n = 0; n < 10; n++) await enqueue(ctx.db, { id: `evt-o-${n}`, type: "cart.changed", data: { n }, orderingKey: keys[n % 2] });
          await startRelay();
          await waitFor("every ordered delivery", async () => (await ctx.db.query("SELECT 1 FROM outbound_deliveries WHERE status = 'delivered'")).rows.length === 10, 30_000);
          const got = await consume(t, (g) => g.length >= 10);
          for (const key of keys) {
            const ofKey = got.filter((m) => (JSON.parse(m.body) as { data: { n: number } }).data.n % 2 === keys.indexOf(key));
            expect(ofKey.map((m) => (JSON.parse(m.body) as { data: { n: number } }).data.n)).toEqual([...ofKey.map((m) => (JSON.parse(m.body) as { data: { n: number } }).data.n)].sort((a, b) => a - b));
            expect(ofKey).toHaveLength(5);
            if (service.kind !== "rabbitmq") for (const m of ofKey) expect(m.group).toBe(key);
          }
          expect(got.filter((m) => m.group === undefined && service.kind !== "rabbitmq")).toEqual([]);
          expect((sub as unknown as { ordered: boolean }).ordered).toBe(true);
        });
      } else {
        it("an ordered subscription is refused: the service keeps no order", async () => {
          const t = await target();
          await expect(createSubscription(ctx.db, { destination: t.destination, eventTypes: ["*"], ordered: true })).rejects.toMatchObject({ issues: [{ path: "ordered" }] });
        });
      }

      it("a refused send (no such entity) is dead-lettered at once as not_found; corrected, a replay delivers it", async () => {
        const sub = await createSubscription(ctx.db, { destination: await service.missing(), eventTypes: ["*"] });
        await enqueue(ctx.db, { id: "evt-refused", type: "order.paid", data: {} });
        const id = `evt-refused:${sub.id}`;
        await startRelay();
        const dead = await settled(id);
        expect(dead).toMatchObject({ status: "dead", attempts: 1 });
        const attempts = await listAttempts(ctx.db, id);
        expect(attempts.map((a) => [a.result, a.errorClass])).toEqual([["permanent", "not_found"]]);
        expect(attempts[0]!.responseExcerpt).toBeTruthy(); // what the service said
        const t = await target();
        await updateSubscription(ctx.db, sub.id, { destination: t.destination });
        await replayDeadLetter(ctx.db, id);
        await waitFor("the replay delivered", async () => (await getDelivery(ctx.db, id)).status === "delivered", 20_000);
        const [m] = await consume(t, (g) => g.length >= 1);
        expect(m!.attributes["webhook-id"]).toBe(id);
      });

      it("a send without an answer is retried with backoff, then dead-lettered when the attempts run out", async () => {
        const sub = await createSubscription(ctx.db, { destination: service.unreachable(await closedPort()), eventTypes: ["*"], attemptTimeoutMs: 2000 });
        await enqueue(ctx.db, { id: "evt-unanswered", type: "order.paid", data: {} });
        const id = `evt-unanswered:${sub.id}`;
        await startRelay();
        const dead = await settled(id);
        expect(dead).toMatchObject({ status: "dead", attempts: FAST.maxAttempts });
        const attempts = await listAttempts(ctx.db, id);
        expect(attempts.map((a) => a.result)).toEqual(Array(FAST.maxAttempts).fill("retryable"));
        expect(attempts[0]!.errorClass).toMatch(/^(connection_refused|timeout|service_unavailable|network_error|destination_error)$/);
        // Backoff: the attempts are spaced, not sent back to back.
        const times = attempts.map((a) => a.createdAt.getTime());
        for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(FAST.baseSeconds * 1000 * 0.5);
      }, 40_000);

      options.extra?.({ db: () => ctx.db });
    });
  });
}
