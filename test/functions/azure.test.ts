/**
 * The Azure functions (v4 programming model), invoked locally with `@azure/functions`' real
 * `HttpRequest` and `InvocationContext` objects against real PostgreSQL, the Service Bus AMQP test
 * peer (through the real `@azure/service-bus` client) and Azurite for the Blob claim-check
 * (`@azure/storage-blob`, Shared Key). The
 * Functions host's Service Bus trigger is played by test/support/serviceBusTriggerHost.ts (a
 * stand-in); everything else is the code that ships. The functions connect as the application
 * role `webhooks_app` that the migrate function prepares (as on Azure; TLS "disable" here because
 * the local server has none: test/wiring/azure.test.ts covers verify-full); the test's own checks
 * and fault injections use the owner's connection.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HttpRequest, type Timer } from "@azure/functions";
import { BlobServiceClient } from "@azure/storage-blob";
import { ServiceBusClient, type ServiceBusReceiver } from "@azure/service-bus";
import { ingestHttp, processServiceBusMessage, relayTimer } from "../../functions/azure/handlers.js";
import { DEAD_LETTER_AT, DEAD_LETTER_REASON, RETRY_ATTEMPT, retryDelaySeconds } from "../../functions/azure/failedMessages.js";
import { handleMigrate } from "../../functions/azure/migrate.js";
import type { Database } from "../../shared/db/port.js";
import { openPostgres } from "../../shared/db/postgres.js";
import { queueAndClaimChecks } from "../../functions/azure/claimChecks.js";
import { createAzureRuntime, type AzureRuntime } from "../../functions/azure/runtime.js";
import { createSubscription, enqueue } from "../../shared/outbound/index.js";
import type { QueueAdapter } from "../../shared/queue/port.js";
import { createServiceBusQueue } from "../../shared/queue/serviceBus.js";
import { startAzurite, type Azurite } from "../support/azurite.js";
import { createServerDatabase, postgresAvailable } from "../support/databases.js";
import { startServiceBusTestPeer, type ServiceBusTestPeer } from "../support/serviceBusTestPeer.js";
import { invokeOnce, type HostOutcome } from "../support/serviceBusTriggerHost.js";
import { startReceiver, type Receiver } from "./receiver.js";
import { eventually, inboxEntry, orderEvent, orderState, PARTNERS_JSON, poisonEvent, signedDelivery } from "./support.js";

const QUEUE = "inbound";
const MAX_DELIVERY_COUNT = 3;
const suffix = Date.now().toString(36);
let skip: string | undefined;
let peer: ServiceBusTestPeer;
let azurite: Azurite;
let client: ServiceBusClient;
let receiver: ServiceBusReceiver;
let inspect: QueueAdapter;
let runtime: AzureRuntime;
let env: Record<string, string>;
let dropDatabase: (() => Promise<void>) | undefined;
/** The owner's connection: the test's checks and fault injections (the functions cannot run DDL). */
let owner: Database;
const RETRY_MAX_ATTEMPTS = 3;

function request(partner: string, delivery: { headers: Record<string, string>; body: string }): HttpRequest {
  return new HttpRequest({
    method: "POST",
    url: `https://webhooks-fn.azurewebsites.net/api/webhooks/${partner}`,
    headers: delivery.headers,
    body: { string: delivery.body },
    params: { partner },
  });
}

const ingest = async (partner: string, delivery: { headers: Record<string, string>; body: string }) => {
  const answer = await ingestHttp(runtime, request(partner, delivery));
  return { status: answer.status, body: JSON.parse(String(answer.body)) as Record<string, unknown> };
};
const host = (): Promise<HostOutcome> => invokeOnce(receiver, (message, context) => processServiceBusMessage(runtime, message, context));

beforeAll(async () => {
  if (!(await postgresAvailable())) {
    if (process.env.CI && process.env.CI !== "false") throw new Error("PostgreSQL is not answering at 127.0.0.1:5432; CI must run these tests.");
    skip = "PostgreSQL is not answering at 127.0.0.1:5432";
    console.warn(`\n!!! ${skip}: the Azure function tests are SKIPPED.\n`);
    return;
  }
  peer = await startServiceBusTestPeer();
  // A short lock: an abandoned or crashed delivery comes back quickly.
  peer.createQueue(QUEUE, { lockDurationMs: 5_000, maxDeliveryCount: MAX_DELIVERY_COUNT });
  client = new ServiceBusClient(peer.connectionString);
  receiver = client.createReceiver(QUEUE, { receiveMode: "peekLock", maxAutoLockRenewalDurationInMs: 0, skipParsingBodyAsJson: true });
  inspect = await createServiceBusQueue({ connectionString: peer.connectionString, queueName: QUEUE });
  azurite = await startAzurite();
  await BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient("claim-checks").createIfNotExists();
  const database = await createServerDatabase();
  dropDatabase = database.drop;
  owner = openPostgres({ connectionString: database.url, max: 2 });
  const appUrl = new URL(database.url);
  appUrl.username = "webhooks_app";
  appUrl.password = "app-password-for-tests";
  env = {
    WEBHOOKS_QUEUE_NAME: QUEUE,
    ServiceBusConnection: peer.connectionString,
    PARTNERS: PARTNERS_JSON,
    DATABASE_URL: appUrl.href,
    WEBHOOKS_DATABASE_TLS: "disable",
    WEBHOOKS_RETRY_MAX_ATTEMPTS: String(RETRY_MAX_ATTEMPTS),
    WEBHOOKS_RETRY_BASE_SECONDS: "1",
    WEBHOOKS_CLAIM_CHECK_CONNECTION: azurite.connectionString,
    MAX_INBOUND_BODY_BYTES: String(1024 * 1024),
    INBOX_DEFER_DELAY_SECONDS: "1",
    ALLOWED_DESTINATIONS: "127.0.0.1",
    LOG_LEVEL: "silent",
  };
  // The deploy's migrate step first: the functions refuse a schema that is not current.
  const migrator = createAzureRuntime({ ...env, DATABASE_ADMIN_URL: database.url });
  await expect(createAzureRuntime(env).database()).rejects.toThrow(/migrate step/);
  expect((await handleMigrate(migrator)).appRole).toBe("webhooks_app");
  expect((await handleMigrate(migrator)).applied).toEqual([]); // idempotent
  runtime = createAzureRuntime(env, queueAndClaimChecks);
}, 60_000);

afterAll(async () => {
  if (runtime) {
    await (await runtime.queue()).close();
    await (await runtime.database()).close();
  }
  await owner?.close();
  await receiver?.close();
  await client?.close();
  await inspect?.close();
  await peer?.close();
  await azurite?.stop();
  await dropDatabase?.();
});

describe("Azure functions on the Service Bus test peer, Azurite and PostgreSQL", () => {
  it("ingest → Service Bus → processor → inbox entry processed and the order created", async (t) => {
    if (skip) return t.skip();
    const eventId = `evt_created_${suffix}`;
    const answer = await ingest("shop", signedDelivery(eventId, orderEvent(`o-${suffix}`, "order.created")));
    expect(answer).toMatchObject({ status: 202, body: { received: true, eventId, claimCheck: false } });
    expect(peer.stats(QUEUE).active).toBe(1);
    expect(await host()).toBe("completed");
    const db = owner;
    expect(await inboxEntry(db, eventId)).toMatchObject({ status: "processed", outcome: "applied" });
    expect(await orderState(db, `o-${suffix}`)).toBe("created");
    expect(peer.stats(QUEUE)).toMatchObject({ active: 0, locked: 0, scheduled: 0, deadLettered: 0 });
  });

  it("an event ahead of its prerequisite is deferred as a scheduled message, then applies", async (t) => {
    if (skip) return t.skip();
    const order = `o-late-${suffix}`;
    expect((await ingest("shop", signedDelivery(`evt_paid_${suffix}`, orderEvent(order, "order.paid")))).status).toBe(202);
    expect(await host()).toBe("completed"); // the original is completed…
    expect(peer.stats(QUEUE).scheduled).toBe(1); // …and a copy is scheduled for the entry's next attempt
    const db = owner;
    expect((await inboxEntry(db, `evt_paid_${suffix}`))?.status).toBe("deferred");
    expect((await ingest("shop", signedDelivery(`evt_new_${suffix}`, orderEvent(order, "order.created")))).status).toBe(202);
    await eventually("both events to apply", async () => { await host(); return (await orderState(db, order)) === "paid"; });
    expect((await inboxEntry(db, `evt_paid_${suffix}`))?.status).toBe("processed");
    expect(peer.stats(QUEUE)).toMatchObject({ active: 0, scheduled: 0, deadLettered: 0 });
  });

  // Defect 12: ingest refused anything over MAX_PAYLOAD_BYTES (256 KiB by default, as here): the
  // body is accepted up to MAX_INBOUND_BODY_BYTES now.
  it("a payload over Service Bus's 256 KiB limit travels by claim-check through Blob Storage", async (t) => {
    if (skip) return t.skip();
    const eventId = `evt_big_${suffix}`;
    const body = orderEvent(`o-big-${suffix}`, "order.created", { note: "x".repeat(300 * 1024) });
    const answer = await ingest("shop", signedDelivery(eventId, body));
    expect(answer).toMatchObject({ status: 202, body: { claimCheck: true } });
    const blobs = [];
    for await (const blob of BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient("claim-checks").listBlobsFlat()) blobs.push(blob.name);
    expect(blobs).toContain(`inbound/shop/${eventId}`);
    expect(await host()).toBe("completed");
    const db = owner;
    expect(await inboxEntry(db, eventId)).toMatchObject({ status: "processed" });
    const stored = await db.query<{ n: number }>("SELECT length(payload) AS n FROM inbox_entries WHERE partner_event_id = $1", [eventId]);
    expect(stored.rows[0]?.n).toBe(Buffer.byteLength(body));
  });

  it("a claim-check store that cannot open fails only the claim-check messages; inline ones are processed", async (t) => {
    if (skip) return t.skip();
    // The account URL without the platform's identity variables: the managed identity cannot start.
    const { WEBHOOKS_CLAIM_CHECK_CONNECTION: _, ...rest } = env;
    const misconfigured = createAzureRuntime({ ...rest, WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL: "https://acct.blob.core.windows.net" }, queueAndClaimChecks);
    try {
      const inline = `evt_inline_nostore_${suffix}`;
      expect((await ingest("shop", signedDelivery(inline, orderEvent(`o-ns-${suffix}`, "order.created")))).body).toMatchObject({ claimCheck: false });
      expect(await invokeOnce(receiver, (message, context) => processServiceBusMessage(misconfigured, message, context))).toBe("completed");
      const db = owner;
      expect(await inboxEntry(db, inline)).toMatchObject({ status: "processed" });

      const big = `evt_big_nostore_${suffix}`;
      expect((await ingest("shop", signedDelivery(big, orderEvent(`o-nsb-${suffix}`, "order.created", { note: "z".repeat(300 * 1024) })))).body).toMatchObject({ claimCheck: true });
      // A failure before the inbox: completed, and a copy scheduled for a retry after a delay.
      expect(await invokeOnce(receiver, (message, context) => processServiceBusMessage(misconfigured, message, context))).toBe("completed");
      expect(peer.stats(QUEUE)).toMatchObject({ active: 0, scheduled: 1 });
      await expect(misconfigured.objectStore()).rejects.toThrow(/IDENTITY_ENDPOINT and IDENTITY_HEADER are not set/);
      expect(await inboxEntry(db, big)).toBeUndefined();
      // The retry reaches a function that can read it.
      await eventually("the retry to apply", async () => { await host(); return (await inboxEntry(db, big))?.status === "processed"; });
    } finally {
      await (await misconfigured.database()).close();
    }
  });

  it("a bad signature answers 401 and queues nothing; an unknown partner 404", async (t) => {
    if (skip) return t.skip();
    const before = peer.stats(QUEUE);
    const delivery = signedDelivery(`evt_forged_${suffix}`, orderEvent("o-x", "order.created"));
    const forged = await ingest("shop", { ...delivery, body: delivery.body.replace("o-x", "o-y") });
    expect(forged.status).toBe(401);
    expect(JSON.stringify(forged.body)).toMatch(/signature/);
    expect((await ingest("nobody", delivery)).status).toBe(404);
    expect(peer.stats(QUEUE)).toEqual(before);
    expect(await host()).toBe("none");
  });

  /** Runs `run` (one host invocation) until `condition`, or `ms` pass; the outcomes other than "none", in order. */
  async function hostUntil(run: () => Promise<HostOutcome>, condition: () => boolean, ms: number): Promise<HostOutcome[]> {
    const outcomes: HostOutcome[] = [];
    const deadline = Date.now() + ms;
    while (!condition() && Date.now() < deadline) {
      const outcome = await run();
      if (outcome !== "none") outcomes.push(outcome);
    }
    return outcomes;
  }

  it("a processing failure once the inbox holds the entry completes the message: the inbox's schedule retries it", async (t) => {
    if (skip) return t.skip();
    const eventId = `evt_poison_${suffix}`;
    await poisonEvent(owner, eventId);
    try {
      expect((await ingest("shop", signedDelivery(eventId, orderEvent(`o-p-${suffix}`, "order.created")))).status).toBe(202);
      expect(await host()).toBe("completed");
      expect(peer.stats(QUEUE)).toMatchObject({ active: 0, scheduled: 0, deadLettered: 0 });
      const entry = await owner.query<{ status: string; failures: number; later: boolean }>(
        "SELECT status, failures, next_attempt_at > now() AS later FROM inbox_entries WHERE partner_event_id = $1", [eventId]);
      expect(entry.rows[0]).toEqual({ status: "failed", failures: 1, later: true });
    } finally {
      await owner.query("DROP TRIGGER IF EXISTS test_poison ON inbox_entries");
    }
  });

  // Defect 13: a failure was abandoned and redelivered at once, so all deliveries went in seconds.
  it("a failure before the inbox (database down) is retried with a growing delay, then dead-lettered with its reason", async (t) => {
    if (skip) return t.skip();
    const down = createAzureRuntime({ ...env, DATABASE_URL: "postgres://webhooks_app:x@127.0.0.1:1/webhooks" }, queueAndClaimChecks);
    try {
      const eventId = `evt_dbdown_${suffix}`;
      expect((await ingest("shop", signedDelivery(eventId, orderEvent(`o-d-${suffix}`, "order.created")))).status).toBe(202);
      const started = Date.now();
      const downHost = () => invokeOnce(receiver, (m, c) => processServiceBusMessage(down, m, c));
      expect(await downHost()).toBe("completed"); // the original is completed…
      expect(peer.stats(QUEUE)).toMatchObject({ active: 0, scheduled: 1 }); // …and a copy waits out the first delay
      expect(await downHost()).toBe("none");
      // Attempts 2 and 3 follow after 1 s and 2 s; the third failure sends the dead-letter copy,
      // which is abandoned at once on each delivery until Service Bus dead-letters it.
      const outcomes = await hostUntil(downHost, () => peer.stats(QUEUE).deadLettered > 0, 20_000);
      expect(Date.now() - started).toBeGreaterThanOrEqual((retryDelaySeconds(1, 1) + retryDelaySeconds(2, 1)) * 1000);
      expect(outcomes).toEqual(["completed", "completed", ...Array(MAX_DELIVERY_COUNT).fill("abandoned")]);

      // Defect 17: the reason reaches the dead-letter subqueue (as a property of the message).
      const dead = await inspect.receiveDeadLetters({ waitSeconds: 1 });
      expect(dead).toHaveLength(1);
      expect(dead[0]!.attributes).toMatchObject({ eventId, partner: "shop", [RETRY_ATTEMPT]: String(RETRY_MAX_ATTEMPTS - 1) });
      expect(dead[0]!.attributes[DEAD_LETTER_REASON]).toMatch(/^failed 3 times, the last: database unavailable: .*ECONNREFUSED/);
      expect(Date.parse(dead[0]!.attributes[DEAD_LETTER_AT]!)).toBeGreaterThan(started);
      await inspect.ackDeadLetter(dead[0]!);
      expect(await inboxEntry(owner, eventId)).toBeUndefined();
    } finally {
      await (await down.queue()).close();
    }
  });

  it("a database back before the attempts run out: the scheduled copy is processed", async (t) => {
    if (skip) return t.skip();
    const down = createAzureRuntime({ ...env, DATABASE_URL: "postgres://webhooks_app:x@127.0.0.1:1/webhooks" }, queueAndClaimChecks);
    try {
      const eventId = `evt_dbback_${suffix}`;
      expect((await ingest("shop", signedDelivery(eventId, orderEvent(`o-b-${suffix}`, "order.created")))).status).toBe(202);
      expect(await invokeOnce(receiver, (m, c) => processServiceBusMessage(down, m, c))).toBe("completed");
      expect(peer.stats(QUEUE)).toMatchObject({ active: 0, scheduled: 1, deadLettered: 0 });
      await eventually("the retry copy to apply", async () => { await host(); return (await inboxEntry(owner, eventId))?.status === "processed"; });
    } finally {
      await (await down.queue()).close();
    }
  });

  it("a malformed message is dead-lettered with the reason at once (no retries)", async (t) => {
    if (skip) return t.skip();
    await inspect.send({ body: JSON.stringify({ not: "an inbound message" }), attributes: { partner: "shop" } });
    const outcomes = await hostUntil(host, () => peer.stats(QUEUE).deadLettered > 0, 10_000);
    expect(outcomes).toEqual(["completed", ...Array(MAX_DELIVERY_COUNT).fill("abandoned")]);
    const dead = await inspect.receiveDeadLetters({ waitSeconds: 1 });
    expect(dead[0]!.attributes[DEAD_LETTER_REASON]).toMatch(/\S/);
    expect(dead[0]!.attributes[RETRY_ATTEMPT]).toBeUndefined();
    await inspect.ackDeadLetter(dead[0]!);
  });

  it("a dead-letter mark older than an hour is ignored: a resubmitted message is processed", async (t) => {
    if (skip) return t.skip();
    const eventId = `evt_resubmit_${suffix}`;
    expect((await ingest("shop", signedDelivery(eventId, orderEvent(`o-r-${suffix}`, "order.created")))).status).toBe(202);
    const [original] = await inspect.receive({ waitSeconds: 1 });
    await inspect.ack(original!);
    const old = new Date(Date.now() - 2 * 3600_000).toISOString();
    await inspect.send({ body: original!.body, attributes: { ...original!.attributes, [DEAD_LETTER_REASON]: "earlier trouble", [DEAD_LETTER_AT]: old } });
    expect(await host()).toBe("completed");
    expect(await inboxEntry(owner, eventId)).toMatchObject({ status: "processed" });
  });
});

describe("Azure relay timer", () => {
  let partner: Receiver;
  beforeAll(async () => { if (!skip) partner = await startReceiver(); });
  afterAll(async () => { await partner?.close(); });

  const timer: Timer = { isPastDue: false, schedule: { adjustForDST: true }, scheduleStatus: { last: "", next: "", lastUpdated: "" } };

  async function dueDelivery(name: string): Promise<string> {
    const db = owner;
    const sub = await createSubscription(db, { url: `${partner.url}/${name}`, eventTypes: [`${name}.*`] });
    const eventId = `evt_${name}_${suffix}`;
    await db.transaction((tx) => enqueue(tx, { id: eventId, type: `${name}.paid`, data: { orderId: name } }));
    return `${eventId}:${sub.id}`;
  }

  it("leaves due deliveries alone when its budget cannot fit a pass", async (t) => {
    if (skip) return t.skip();
    const deliveryId = await dueDelivery("tight");
    const summary = await relayTimer(runtime, timer, 10); // less than the 15 s reserve a pass needs
    expect(summary).toMatchObject({ passes: 0, deliveriesAttempted: 0, stoppedBecause: "budget" });
    expect(partner.received.map((r) => r.headers["webhook-id"])).not.toContain(deliveryId);
    const db = owner;
    const r = await db.query<{ status: string }>("SELECT status FROM outbound_deliveries WHERE id = $1", [deliveryId]);
    expect(r.rows[0]?.status).toBe("pending");
  });

  it("drains a due outbox delivery to the receiver, signed, and stops when idle", async (t) => {
    if (skip) return t.skip();
    const deliveryId = await dueDelivery("drain");
    const summary = await relayTimer(runtime, timer, 60);
    expect(summary.stoppedBecause).toBe("idle");
    expect(summary.deliveriesAttempted).toBeGreaterThanOrEqual(1);
    const got = partner.received.find((r) => r.headers["webhook-id"] === deliveryId);
    expect(got?.headers["webhook-signature"]).toMatch(/^v1,/);
    expect(JSON.parse(got!.body)).toMatchObject({ type: "drain.paid", data: { orderId: "drain" } });
    const db = owner;
    const r = await db.query<{ status: string }>("SELECT status FROM outbound_deliveries WHERE id = $1", [deliveryId]);
    expect(r.rows[0]?.status).toBe("delivered");
  });

  it("spends the time left on retention when a run is due: delivered work past OUTBOUND_RETENTION_DAYS is deleted", async (t) => {
    if (skip) return t.skip();
    const deliveryId = await dueDelivery("aged");
    expect((await relayTimer(runtime, timer, 60)).stoppedBecause).toBe("idle");
    const db = owner;
    // Delivered 31 days ago, as far as retention can tell (the default keeps 30 days).
    await db.query("UPDATE outbound_deliveries SET created_at = now() - interval '31 days', delivered_at = now() - interval '31 days' WHERE id = $1", [deliveryId]);
    await db.query("UPDATE outbound_events SET created_at = now() - interval '31 days' WHERE id = $1", [deliveryId.split(":")[0]]);
    // An hour later, as far as the retention turn is concerned (the previous run took it).
    await db.query("DELETE FROM retention_runs");
    const summary = await relayTimer(runtime, timer, 60);
    expect(summary.purged?.outbound).toMatchObject({ deliveries: 1, events: 1 });
    expect(summary.purged!.outbound.attempts).toBeGreaterThanOrEqual(1);
    expect((await db.query("SELECT 1 FROM outbound_deliveries WHERE id = $1", [deliveryId])).rows).toEqual([]);
  });
});

describe("Azure cold start", () => {
  it("names what a function lacks when it needs it", async () => {
    const bare = createAzureRuntime({}, queueAndClaimChecks);
    await expect(bare.queue()).rejects.toThrow(/Set WEBHOOKS_QUEUE_NAME/);
    await expect(bare.database()).rejects.toThrow(/Set DATABASE_URL/);
    await expect(bare.ownerDatabase()).rejects.toThrow(/Set DATABASE_ADMIN_URL/);
  });

  it("refuses an sslmode in the database URL (TLS is WEBHOOKS_DATABASE_TLS)", async () => {
    await expect(createAzureRuntime({ DATABASE_URL: "postgres://webhooks_app:x@db.example:5432/webhooks?sslmode=require" }).database()).rejects.toThrow(/Remove sslmode/);
  });

  it("migrate takes the role and password from DATABASE_URL", async () => {
    const { appRoleOf } = await import("../../functions/azure/migrate.js");
    expect(appRoleOf("postgres://webhooks_app:p%40ss@db:5432/webhooks")).toEqual({ appRole: "webhooks_app", password: "p@ss" });
    expect(() => appRoleOf("postgres://webhooks_app@db:5432/webhooks")).toThrow(/its password/);
  });

  it("the relay's runtime (no connectors) has no queue and no claim-check store", async () => {
    const relayRuntime = createAzureRuntime({ WEBHOOKS_QUEUE_NAME: QUEUE, WEBHOOKS_CLAIM_CHECK_CONNECTION: "UseDevelopmentStorage=true" });
    await expect(relayRuntime.queue()).rejects.toThrow(/built without a Service Bus client/);
    expect(await relayRuntime.objectStore()).toBeUndefined();
  });
});
