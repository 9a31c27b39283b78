/**
 * The GCP functions (Cloud Run functions gen2) served by the real Functions Framework in-process
 * (`getTestServer` over the registration modules that ship), against real PostgreSQL, Google's
 * Pub/Sub emulator and the Cloud Storage test peer (test/support/gcsTestPeer.ts).
 *
 * Nothing plays the trigger here: the processor is the push endpoint of a real PUSH subscription
 * on the emulator, with a dead-letter policy. The emulator POSTs the push envelope, treats a
 * non-2xx as a nack, redelivers with its own backoff and, after max delivery attempts, forwards
 * the message to the dead-letter topic. (The emulator leaves `deliveryAttempt` out of its push
 * envelopes; Google Cloud sends it when a dead-letter policy is set.)
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "@google-cloud/functions-framework";
import { getTestServer } from "@google-cloud/functions-framework/testing";
import "../../functions/gcp/ingest.js";
import "../../functions/gcp/processor.js";
import "../../functions/gcp/relay.js";
import "../../functions/gcp/migrate.js";
import { ingestHttp } from "../../functions/gcp/handlers.js";
import { migrateHttp } from "../../functions/gcp/migrateHttp.js";
import { topicAndClaimChecks } from "../../functions/gcp/claimChecks.js";
import { createGcpRuntime, gcpRuntime } from "../../functions/gcp/runtime.js";
import { claimCheckMessage, inlineMessage } from "../../shared/cloud/inboundMessage.js";
import { openPostgres } from "../../shared/db/postgres.js";
import type { Database } from "../../shared/db/port.js";
import { createSubscription, enqueue } from "../../shared/outbound/index.js";
import type { QueueAdapter } from "../../shared/queue/port.js";
import { createPubSubQueue } from "../../shared/queue/pubsub.js";
import { createServerDatabase, postgresAvailable } from "../support/databases.js";
import { PUBSUB_EMULATOR_HOST, PUBSUB_PROJECT, pubsubEmulatorAvailable, skipUnlessAvailable } from "../support/emulators.js";
import { startGcsTestPeer, type GcsTestPeer } from "../support/gcsTestPeer.js";
import { startReceiver, type Receiver } from "./receiver.js";
import { eventually, inboxEntry, orderEvent, orderState, PARTNERS_JSON, poisonEvent, signedDelivery } from "./support.js";
import { deadHost } from "../support/failures.js";

/** Google Cloud's minimum for a dead-letter policy. */
const MAX_DELIVERY_ATTEMPTS = 5;
const BUCKET = "claim-checks";
const suffix = Date.now().toString(36);
let skip: string | undefined;
let gcs: GcsTestPeer;
const servers: Server[] = [];
const url: Record<"ingest" | "processor" | "relay" | "migrate" | "ingest-emulator-down", string> = { ingest: "", processor: "", relay: "", migrate: "", "ingest-emulator-down": "" };
/** The database as its owner, for what the application role may not do (triggers, clean-up). */
let owner: Database;
const APP_PASSWORD = "app-password-for-the-gcp-tests";
/** A pull subscription on the inbound topic: sees every message ingest publishes. */
let tap: QueueAdapter;
/** Reads the dead-letter topic of the push subscription. */
let deadLetters: QueueAdapter;
let removeTopics: (() => Promise<void>) | undefined;
let dropDatabase: (() => Promise<void>) | undefined;

async function serve(name: keyof typeof url): Promise<void> {
  const server = getTestServer(name);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  url[name] = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function ingest(partner: string, delivery: { headers: Record<string, string>; body: string }, via: "ingest" | "ingest-emulator-down" = "ingest") {
  const r = await fetch(`${url[via]}/webhooks/${partner}`, { method: "POST", headers: delivery.headers, body: delivery.body });
  return { status: r.status, retryAfter: r.headers.get("retry-after"), body: await r.json() as Record<string, unknown> };
}


/** Creates the topics and the push subscription (with its dead-letter policy) on the emulator. */
async function createPushTopology(topic: string, pushEndpoint: string) {
  const { PubSub } = await import("@google-cloud/pubsub");
  const pubsub = new PubSub({ projectId: PUBSUB_PROJECT, universeDomain: "googleapis.com", emulatorMode: true });
  const [main] = await pubsub.createTopic(topic);
  const [dlt] = await pubsub.createTopic(`${topic}-dlq`);
  const [dls] = await dlt.createSubscription(`${topic}-dlq-reader`, { ackDeadlineSeconds: 10 });
  const [tapSub] = await main.createSubscription(`${topic}-tap`, { ackDeadlineSeconds: 10 });
  const [push] = await main.createSubscription(`${topic}-push`, {
    ackDeadlineSeconds: 10,
    pushConfig: { pushEndpoint },
    deadLetterPolicy: { deadLetterTopic: dlt.name, maxDeliveryAttempts: MAX_DELIVERY_ATTEMPTS },
  });
  return async () => {
    for (const thing of [push, tapSub, dls, main, dlt]) await thing.delete().catch(() => {});
    await pubsub.close();
  };
}

beforeAll(async () => {
  skip = await skipUnlessAvailable("the Pub/Sub emulator", PUBSUB_EMULATOR_HOST, pubsubEmulatorAvailable);
  if (!skip && !(await postgresAvailable())) {
    if (process.env.CI && process.env.CI !== "false") throw new Error("PostgreSQL is not answering at 127.0.0.1:5432; CI must run these tests.");
    skip = "PostgreSQL is not answering";
    console.warn(`\n!!! ${skip}: the GCP function tests are SKIPPED.\n`);
  }
  if (skip) return;
  gcs = await startGcsTestPeer();
  const database = await createServerDatabase();
  dropDatabase = database.drop;
  owner = openPostgres({ connectionString: database.url, max: 2 });
  const appUrl = new URL(database.url);
  appUrl.username = "webhooks_app";
  appUrl.password = APP_PASSWORD;
  const topic = `fn-${suffix}`;
  // The registrations build their runtime from the environment at the first request, as on Cloud Run.
  Object.assign(process.env, {
    PUBSUB_EMULATOR_HOST,
    GOOGLE_CLOUD_PROJECT: PUBSUB_PROJECT,
    WEBHOOKS_TOPIC: topic,
    PARTNERS: PARTNERS_JSON,
    // As on GCP: the functions connect as the application role, only migrate as the owner.
    // (127.0.0.1:5432 trusts local connections and speaks no TLS: the TLS path is the wiring test's.)
    DATABASE_URL: appUrl.toString(),
    DATABASE_ADMIN_URL: database.url,
    WEBHOOKS_DATABASE_TLS: "disable",
    WEBHOOKS_DEAD_LETTER_TOPIC: `${topic}-dlq`,
    WEBHOOKS_MAX_DELIVERY_ATTEMPTS: String(MAX_DELIVERY_ATTEMPTS),
    WEBHOOKS_CLAIM_CHECK_BUCKET: BUCKET,
    WEBHOOKS_STORAGE_API_ENDPOINT: gcs.endpoint,
    WEBHOOKS_RELAY_BUDGET_SECONDS: "60",
    // What the stack sets on ingest (stacks/gcp/capacity.ts); MAX_PAYLOAD_BYTES stays at its 256 KiB.
    MAX_INBOUND_BODY_BYTES: String(30 * 1024 * 1024),
    INBOX_DEFER_DELAY_SECONDS: "1",
    // Short steps, so the inbox's own retries (run by the relay's sweep) fit in a test.
    INBOX_RETRY_SCHEDULE: "1,2",
    ALLOWED_DESTINATIONS: "127.0.0.1",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
  });
  await serve("ingest");
  await serve("processor");
  await serve("relay");
  await serve("migrate");
  // The deploy's migrate step, before any other function touches the database.
  const migrated = await fetch(`${url.migrate}/`, { method: "POST" });
  if (migrated.status !== 200) throw new Error(`migrate answered ${migrated.status}: ${await migrated.text()}`);
  // The same ingest code with the publisher pointed at a port nothing listens on.
  const down = createGcpRuntime({ ...process.env, PUBSUB_EMULATOR_HOST: await deadHost(), WEBHOOKS_PUBLISH_TIMEOUT_SECONDS: "2" }, topicAndClaimChecks);
  http("ingest-emulator-down", (req, res) => ingestHttp(down, req, res));
  await serve("ingest-emulator-down");
  removeTopics = await createPushTopology(topic, `${url.processor}/`);
  const reader = (subscription: string, dlq: string) => createPubSubQueue({ projectId: PUBSUB_PROJECT, topic, subscription, deadLetterTopic: dlq, deadLetterSubscription: `${topic}-dlq-reader` });
  tap = await reader(`${topic}-tap`, `${topic}-dlq`);
  deadLetters = await reader(`${topic}-push`, `${topic}-dlq`);
}, 60_000);

afterAll(async () => {
  for (const server of servers) await new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); });
  await tap?.close();
  await deadLetters?.close();
  await removeTopics?.();
  if (!skip) await (await gcpRuntime().database()).close();
  await owner?.close();
  await gcs?.close();
  await dropDatabase?.();
});

/** Acks everything the tap holds; returns how many messages that was. */
async function drainTap(waitSeconds = 0): Promise<number> {
  let n = 0;
  for (;;) {
    const got = await tap.receive({ visibilitySeconds: 30, waitSeconds, max: 10 });
    if (got.length === 0) return n;
    for (const m of got) await tap.ack(m);
    n += got.length;
  }
}

describe("GCP functions on the Pub/Sub emulator (push), the Cloud Storage test peer and PostgreSQL", () => {
  it("ingest → Pub/Sub → push to the processor → inbox entry processed and the order created", async (t) => {
    if (skip) return t.skip();
    const eventId = `evt_created_${suffix}`;
    const answer = await ingest("shop", signedDelivery(eventId, orderEvent(`o-${suffix}`, "order.created")));
    expect(answer).toMatchObject({ status: 202, body: { received: true, eventId, claimCheck: false } });
    const db = await gcpRuntime().database();
    await eventually("the push to be processed", async () => (await inboxEntry(db, eventId))?.status === "processed");
    expect(await inboxEntry(db, eventId)).toMatchObject({ status: "processed", outcome: "applied" });
    expect(await orderState(db, `o-${suffix}`)).toBe("created");
  });

  it("an event ahead of its prerequisite is acked and deferred in the inbox; the relay's inbox sweep applies it", async (t) => {
    if (skip) return t.skip();
    const order = `o-late-${suffix}`;
    const db = await gcpRuntime().database();
    expect((await ingest("shop", signedDelivery(`evt_paid_${suffix}`, orderEvent(order, "order.paid")))).status).toBe(202);
    await eventually("the paid event to be deferred", async () => (await inboxEntry(db, `evt_paid_${suffix}`))?.status === "deferred");
    expect((await ingest("shop", signedDelivery(`evt_new_${suffix}`, orderEvent(order, "order.created")))).status).toBe(202);
    await eventually("the created event to apply", async () => (await orderState(db, order)) === "created");
    // Pub/Sub cannot hold one message back: the deferral lives in the inbox until the relay runs.
    await new Promise((r) => setTimeout(r, 1500));
    expect(await orderState(db, order)).toBe("created");
    const relayed = await fetch(`${url.relay}/`, { method: "POST" });
    expect(relayed.status).toBe(200);
    expect(await relayed.json()).toMatchObject({ stoppedBecause: "idle", inboxEntriesClaimed: expect.any(Number) });
    expect(await orderState(db, order)).toBe("paid");
    expect((await inboxEntry(db, `evt_paid_${suffix}`))?.status).toBe("processed");
  });

  it("a payload over what one REST publish carries (7.5 MB of message) travels by claim-check through Cloud Storage", async (t) => {
    if (skip) return t.skip();
    const eventId = `evt_big_${suffix}`;
    const body = orderEvent(`o-big-${suffix}`, "order.created", { note: "x".repeat(6 * 1024 * 1024) });
    const answer = await ingest("shop", signedDelivery(eventId, body));
    expect(answer).toMatchObject({ status: 202, body: { claimCheck: true } });
    expect(gcs.objects.get(`${BUCKET}/inbound/shop/${eventId}`)?.length).toBe(Buffer.byteLength(body));
    const db = await gcpRuntime().database();
    await eventually("the big event to be processed", async () => (await inboxEntry(db, eventId))?.status === "processed");
    const stored = await db.query<{ n: number }>("SELECT length(payload) AS n FROM inbox_entries WHERE partner_event_id = $1", [eventId]);
    expect(stored.rows[0]?.n).toBe(Buffer.byteLength(body));
  });

  it("a bad signature answers 401 and publishes nothing; an unknown partner 404", async (t) => {
    if (skip) return t.skip();
    await drainTap();
    const delivery = signedDelivery(`evt_forged_${suffix}`, orderEvent("o-x", "order.created"));
    const forged = await ingest("shop", { ...delivery, body: delivery.body.replace("o-x", "o-y") });
    expect(forged.status).toBe(401);
    expect(JSON.stringify(forged.body)).toMatch(/signature/);
    expect((await ingest("nobody", delivery)).status).toBe(404);
    // A control that the tap does see what ingest publishes:
    expect((await ingest("shop", signedDelivery(`evt_control_${suffix}`, orderEvent(`o-c-${suffix}`, "order.created")))).status).toBe(202);
    const seen = await tap.receive({ visibilitySeconds: 30, waitSeconds: 3, max: 10 });
    expect(seen.map((m) => m.attributes.eventId)).toEqual([`evt_control_${suffix}`]);
    for (const m of seen) await tap.ack(m);
  });

  it("Pub/Sub down: ingest answers 503 with retry-after and stores nothing; the sender's retry is accepted and processed", async (t) => {
    if (skip) return t.skip();
    await drainTap();
    const eventId = `evt_outage_${suffix}`;
    const delivery = signedDelivery(eventId, orderEvent(`o-out-${suffix}`, "order.created"));
    const refused = await ingest("shop", delivery, "ingest-emulator-down");
    expect(refused).toMatchObject({ status: 503, retryAfter: expect.stringMatching(/^\d+$/), body: { error: { code: "queue_unavailable" } } });
    expect(JSON.stringify(refused.body)).not.toMatch(/ECONNREFUSED|at .*\.ts/);
    const db = await gcpRuntime().database();
    expect(await inboxEntry(db, eventId)).toBeUndefined();
    // The sender retries the same delivery; Pub/Sub answers again.
    expect((await ingest("shop", delivery)).status).toBe(202);
    await eventually("the retried event to be processed", async () => (await inboxEntry(db, eventId))?.status === "processed");
    expect(await orderState(db, `o-out-${suffix}`)).toBe("created");
  });

  it("a processing failure once the inbox holds the entry is acked (204): Pub/Sub never redelivers it, the inbox retries it on INBOX_RETRY_SCHEDULE (not before) and quarantines it after the last step (issue 24 #3)", async (t) => {
    if (skip) return t.skip();
    const eventId = `evt_poison_${suffix}`;
    const db = await gcpRuntime().database();
    await poisonEvent(owner, eventId);
    try {
      const message = inlineMessage({ partner: "shop", eventId, eventType: "order.created", receivedAt: new Date() }, Buffer.from(orderEvent(`o-p-${suffix}`, "order.created")));
      const push = (attempt: number) => pushToProcessor(message, eventId, attempt);
      expect((await push(1)).status).toBe(204);
      expect(await inboxEntry(db, eventId)).toMatchObject({ status: "failed", failures: 1 });
      // A redelivery before the retry is due does not run the entry.
      expect((await push(2)).status).toBe(204);
      expect(await inboxEntry(db, eventId)).toMatchObject({ status: "failed", failures: 1 });
      const due = async () => (await db.query<{ at: Date }>("SELECT next_attempt_at AS at FROM inbox_entries WHERE partner_event_id = $1", [eventId])).rows[0]!.at;
      for (const failures of [2, 3]) {
        const at = await due();
        await new Promise((r) => setTimeout(r, Math.max(0, at.getTime() - Date.now()) + 50));
        expect((await fetch(`${url.relay}/`, { method: "POST" })).status).toBe(200);
        expect(await inboxEntry(db, eventId)).toMatchObject(failures === 3 ? { status: "quarantined" } : { status: "failed", failures });
      }
    } finally {
      await owner.query("DROP TRIGGER IF EXISTS test_poison ON inbox_entries");
    }
  });

  it("a failure before the inbox (a claim-check that cannot be read) answers 500, is redelivered by Pub/Sub and dead-lettered after max delivery attempts", async (t) => {
    if (skip) return t.skip();
    const eventId = `evt_lost_${suffix}`;
    await tap.send(claimCheckMessage({ partner: "shop", eventId, eventType: "order.created", receivedAt: new Date() }, `gs://${BUCKET}/inbound/shop/missing-${suffix}`));
    const dead = await eventually("the unreadable message to reach the dead-letter topic", async () => {
      const got = (await deadLetters.receiveDeadLetters({ waitSeconds: 1 })).filter((m) => m.attributes.eventId === eventId);
      return got.length > 0 && got;
    }, 60_000);
    expect(dead).toEqual([expect.objectContaining({ attributes: expect.objectContaining({ eventId }), reason: expect.stringMatching(/max delivery attempts \(5\)/) })]);
    for (const m of dead) await deadLetters.ackDeadLetter(m);
    expect(await inboxEntry(await gcpRuntime().database(), eventId)).toBeUndefined();
  }, 90_000);

  it("a malformed message is dead-lettered by the processor at once, with its reason, and acked", async (t) => {
    if (skip) return t.skip();
    // Only a bug or a foreign publisher puts this on the topic: ingest never would.
    await tap.send({ body: "not an inbound message", attributes: { eventId: `evt_malformed_${suffix}` } });
    const dead = await eventually("the malformed message on the dead-letter topic", async () => {
      const got = (await deadLetters.receiveDeadLetters({ waitSeconds: 1 })).filter((m) => m.attributes.eventId === `evt_malformed_${suffix}`);
      return got.length > 0 && got;
    }, 20_000);
    expect(dead).toEqual([expect.objectContaining({ body: "not an inbound message", reason: expect.not.stringMatching(/max delivery attempts/) })]);
    expect(dead[0]!.reason.length).toBeGreaterThan(10);
    expect(dead[0]!.attributes.originalMessageId).toEqual(expect.any(String));
    for (const m of dead) await deadLetters.ackDeadLetter(m);
    await drainTap();
  });

  it("a failure on the last delivery attempt is dead-lettered by the processor with the failure as its reason", async (t) => {
    if (skip) return t.skip();
    const eventId = `evt_last_${suffix}`;
    // A failure before the inbox: the claim-check's object is not there.
    const message = claimCheckMessage({ partner: "shop", eventId, eventType: "order.created", receivedAt: new Date() }, `gs://${BUCKET}/inbound/shop/missing-last-${suffix}`);
    expect((await pushToProcessor(message, eventId, MAX_DELIVERY_ATTEMPTS - 1)).status).toBe(500);
    expect((await pushToProcessor(message, eventId, MAX_DELIVERY_ATTEMPTS)).status).toBe(204);
    const dead = await eventually("the failed message on the dead-letter topic", async () => {
      const got = (await deadLetters.receiveDeadLetters({ waitSeconds: 1 })).filter((m) => m.attributes.eventId === eventId);
      return got.length > 0 && got;
    }, 20_000);
    expect(dead).toEqual([expect.objectContaining({ reason: expect.stringMatching(/claim-check unreadable/) })]);
    for (const m of dead) await deadLetters.ackDeadLetter(m);
  });

  it("answers a push body that is not a Pub/Sub message with 400 and the problems", async (t) => {
    if (skip) return t.skip();
    const r = await fetch(`${url.processor}/`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ message: { data: "not base64!" } }) });
    expect(r.status).toBe(400);
    expect(await r.text()).toMatch(/message\.messageId must be a non-empty string.*message\.data must be base64/);
  });
});

/** A push of `message` to the processor as Pub/Sub makes it, on delivery attempt `deliveryAttempt`. */
function pushToProcessor(message: { body: string; attributes?: Record<string, string | undefined> }, eventId: string, deliveryAttempt: number) {
  return fetch(`${url.processor}/`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      subscription: `projects/${PUBSUB_PROJECT}/subscriptions/fn-${suffix}-push`,
      deliveryAttempt,
      message: { messageId: `m-${eventId}-${deliveryAttempt}`, data: Buffer.from(message.body).toString("base64"), attributes: { ...message.attributes, eventId } },
    }),
  });
}

describe("GCP relay (Cloud Scheduler → HTTP)", () => {
  let partner: Receiver;
  beforeAll(async () => { if (!skip) partner = await startReceiver(); });
  afterAll(async () => { await partner?.close(); });

  it("drains a due outbox delivery to the receiver, signed, and answers its summary", async (t) => {
    if (skip) return t.skip();
    const db = await gcpRuntime().database();
    const sub = await createSubscription(db, { url: `${partner.url}/hooks`, eventTypes: ["invoice.*"] });
    const eventId = `evt_invoice_${suffix}`;
    await db.transaction((tx) => enqueue(tx, { id: eventId, type: "invoice.paid", data: { invoice: 1 } }));
    await owner.query("DELETE FROM retention_runs"); // a retention run is due
    const r = await fetch(`${url.relay}/`, { method: "POST" });
    expect(r.status).toBe(200);
    const summary = await r.json() as { deliveriesAttempted: number; stoppedBecause: string; purged?: unknown };
    expect(summary.stoppedBecause).toBe("idle");
    // Then the run went on to retention (nothing here is old enough to delete).
    expect(summary.purged).toEqual({ outbound: { deliveries: 0, attempts: 0, replays: 0, events: 0 }, inbox: { entries: 0 } });
    expect(summary.deliveriesAttempted).toBeGreaterThanOrEqual(1);
    const got = partner.received.find((x) => x.headers["webhook-id"] === `${eventId}:${sub.id}`);
    expect(got?.headers["webhook-signature"]).toMatch(/^v1,/);
    const row = await db.query<{ status: string }>("SELECT status FROM outbound_deliveries WHERE id = $1", [`${eventId}:${sub.id}`]);
    expect(row.rows[0]?.status).toBe("delivered");
  });
});

describe("GCP migrate (the deploy step)", () => {
  it("runs again without change, and leaves the functions' role without DDL rights", async (t) => {
    if (skip) return t.skip();
    const again = await fetch(`${url.migrate}/`, { method: "POST" });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ applied: [], appRole: "webhooks_app", roleCreated: false });
    const db = await gcpRuntime().database();
    expect((await db.query<{ current_user: string }>("SELECT current_user")).rows[0]?.current_user).toBe("webhooks_app");
    await expect(db.query("CREATE TABLE gcp_test_ddl (id int)")).rejects.toThrow(/permission denied/);
  });

  it("answers 500 with the reason when the owner's URL is missing", async () => {
    const runtime = createGcpRuntime({ GOOGLE_CLOUD_PROJECT: "p", WEBHOOKS_TOPIC: "t", DATABASE_URL: "postgres://webhooks_app:0123456789abcdef@127.0.0.1:5432/x", WEBHOOKS_DATABASE_TLS: "disable", LOG_LEVEL: "silent" });
    // The three Express calls the handler makes, recorded.
    const answer = { status: 0, body: "" };
    const res = { status: (c: number) => { answer.status = c; return res; }, set: () => res, send: (b: string) => { answer.body = b; return res; } };
    await migrateHttp(runtime, {} as never, res as never);
    expect(answer.status).toBe(500);
    expect(answer.body).toMatch(/DATABASE_ADMIN_URL/);
  });
});

describe("GCP cold start", () => {
  it("names every missing setting; the topic only where a function publishes", async () => {
    expect(() => createGcpRuntime({})).toThrow(/GOOGLE_CLOUD_PROJECT is not set/);
    // The relay and migrate publish nothing: they start without a topic, and only a publish asks for one.
    const noTopic = createGcpRuntime({ GOOGLE_CLOUD_PROJECT: "p", LOG_LEVEL: "silent" });
    await expect(noTopic.topic()).rejects.toThrow(/Set WEBHOOKS_TOPIC/);
  });
});
