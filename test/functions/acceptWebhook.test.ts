/**
 * The cloud ingest core, cloud-agnostic: the queue and claim-check store are opened only once a
 * request has passed verification (a forged request on a cold instance loads no cloud SDK), and a
 * queue that cannot be opened answers 503 `not_ready` with nothing accepted. The queue is the real
 * local adapter on PGlite.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { acceptWebhook, type AcceptTargets } from "../../shared/cloud/acceptWebhook.js";
import type { Database } from "../../shared/db/port.js";
import { parsePartners } from "../../shared/inbound/verify/partners.js";
import { createLocalQueue } from "../../shared/queue/local.js";
import type { QueueAdapter } from "../../shared/queue/port.js";
import { openTestDatabase } from "../support/databases.js";
import { orderEvent, PARTNERS_JSON, signedDelivery } from "./support.js";

describe("acceptWebhook: targets opened only after verification", () => {
  let db: Database;
  let close: () => Promise<void>;
  let queue: QueueAdapter;
  const partners = parsePartners(PARTNERS_JSON);

  beforeAll(async () => {
    ({ db, close } = await openTestDatabase("pglite"));
    queue = createLocalQueue({ db, queue: "ingest-core" });
  });
  afterAll(async () => {
    await queue.close();
    await close();
  });

  /** Targets that count how often the function asked for them. */
  function counted(open: () => Promise<AcceptTargets>) {
    const calls = { n: 0 };
    return { calls, targets: () => { calls.n++; return open(); } };
  }

  it("a forged request is refused with 401 without opening the queue", async () => {
    const { calls, targets } = counted(async () => ({ queue }));
    const body = orderEvent("o-forged", "order.created");
    const headers = { ...signedDelivery("evt_forged", body).headers, "webhook-signature": "v1,Zm9yZ2VkLXNpZ25hdHVyZQ==" };
    const answer = await acceptWebhook({ partners, targets, maxBodyBytes: 65_536 }, "shop", headers, Buffer.from(body));
    expect(answer.status).toBe(401);
    expect(calls.n).toBe(0);
    expect(await queue.receive()).toEqual([]);
  });

  it("an unknown partner and a body over the limit do not open it either", async () => {
    const { calls, targets } = counted(async () => ({ queue }));
    const body = orderEvent("o-big", "order.created", { note: "x".repeat(2_000) });
    const { headers } = signedDelivery("evt_big", body);
    expect((await acceptWebhook({ partners, targets, maxBodyBytes: 65_536 }, "nobody", headers, Buffer.from(body))).status).toBe(404);
    expect((await acceptWebhook({ partners, targets, maxBodyBytes: 1_000 }, "shop", headers, Buffer.from(body))).status).toBe(413);
    expect(calls.n).toBe(0);
  });

  it("a verified request opens the queue and is queued before the 202", async () => {
    const { calls, targets } = counted(async () => ({ queue }));
    const body = orderEvent("o-1", "order.created");
    const { headers } = signedDelivery("evt_ok", body);
    const answer = await acceptWebhook({ partners, targets, maxBodyBytes: 65_536 }, "shop", headers, Buffer.from(body));
    expect(answer.status).toBe(202);
    expect(calls.n).toBe(1);
    const [message] = await queue.receive();
    expect(message?.attributes.eventId).toBe("evt_ok");
    await queue.ack(message!);
  });

  it("a queue that cannot be opened answers 503 not_ready with a retry-after, and nothing is queued", async () => {
    const targets = async (): Promise<AcceptTargets> => { throw new Error("WEBHOOKS_QUEUE_URL is not set"); };
    const body = orderEvent("o-2", "order.created");
    const { headers } = signedDelivery("evt_not_ready", body);
    const answer = await acceptWebhook({ partners, targets, maxBodyBytes: 65_536 }, "shop", headers, Buffer.from(body));
    expect(answer.status).toBe(503);
    expect(answer.headers["retry-after"]).toBe("30");
    expect(answer.body).toEqual({ error: { code: "not_ready", message: "The ingest function is not ready; retry later." } });
    expect(await queue.receive()).toEqual([]);
  });

  it("the claim-check store is opened only for a payload over the queue's limit: a broken store refuses those alone", async () => {
    let opened = 0;
    const small = { send: queue.send.bind(queue), limits: { ...queue.limits, maxMessageBytes: 2_000 } };
    const targets = async (): Promise<AcceptTargets> => ({
      queue: small,
      objectStore: async () => { opened++; throw new Error("WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL is unreachable"); },
    });
    const inline = orderEvent("o-3", "order.created");
    const answer = await acceptWebhook({ partners, targets, maxBodyBytes: 65_536 }, "shop", signedDelivery("evt_inline", inline).headers, Buffer.from(inline));
    expect(answer.status).toBe(202);
    expect(opened).toBe(0);
    const large = orderEvent("o-4", "order.created", { note: "x".repeat(4_000) });
    const refused = await acceptWebhook({ partners, targets, maxBodyBytes: 65_536 }, "shop", signedDelivery("evt_large", large).headers, Buffer.from(large));
    expect(refused.status).toBe(503);
    expect(refused.headers["retry-after"]).toBeDefined();
    expect(opened).toBe(1);
    const queued = await queue.receive({ max: 10 });
    expect(queued.map((m) => m.attributes.eventId)).toEqual(["evt_inline"]);
    for (const m of queued) await queue.ack(m);
  });
});
