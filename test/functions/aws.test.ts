/**
 * The AWS functions, invoked locally with AWS's real event shapes (`@types/aws-lambda`) against
 * real PostgreSQL and a real SQS wire protocol (moto), partners and credentials read from Secrets
 * Manager (moto too), claim-checks in S3 (moto). The event source mapping is played by
 * test/support/sqsEventSource.ts; everything else is the code that ships.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CreateQueueCommand, GetQueueAttributesCommand, PurgeQueueCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient,
} from "@aws-sdk/client-sqs";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { CreateSecretCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { handleIngest } from "../../functions/aws/ingest.js";
import { handleProcessor } from "../../functions/aws/processor.js";
import { handleRelay } from "../../functions/aws/relay.js";
import { claimCheckMessage } from "../../shared/cloud/inboundMessage.js";
import { queueAndClaimChecks } from "../../functions/aws/clients.js";
import { createAwsRuntime, type AwsRuntime } from "../../functions/aws/runtime.js";
import { migrate } from "../../shared/db/migrate.js";
import { openPostgres } from "../../shared/db/postgres.js";
import { MOTO_CLIENT_CONFIG, MOTO_URL, motoAvailable, skipUnlessAvailable } from "../support/emulators.js";
import { createServerDatabase, postgresAvailable } from "../support/databases.js";
import { pollOnce } from "../support/sqsEventSource.js";
import { apiGatewayEvent as apiEvent, eventually, inboxEntry, orderEvent, orderState, PARTNERS_JSON, poisonEvent, signedDelivery } from "./support.js";

const suffix = Date.now().toString(36);
let skip: string | undefined;
let runtime: AwsRuntime;
let sqs: SQSClient;
let queueUrl: string;
let queueArn: string;
let dlqUrl: string;
let dropDatabase: (() => Promise<void>) | undefined;
let runtimeEnv: Record<string, string | undefined>;
/** The test process's environment without WEBHOOKS_* names (the functions refuse names they do not know). */
const baseEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("WEBHOOKS_")));


const depth = async (url: string) => {
  const names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"] as const;
  const r = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: [...names] }));
  return names.reduce((sum, name) => sum + Number(r.Attributes?.[name] ?? 0), 0);
};
const processBatch = () => pollOnce(sqs, queueUrl, queueArn, (event) => handleProcessor(runtime, event));

beforeAll(async () => {
  skip = await skipUnlessAvailable("moto_server", MOTO_URL, motoAvailable);
  if (skip || !(await postgresAvailable())) return;
  // The functions build their SDK clients from the environment, as on Lambda.
  Object.assign(process.env, {
    AWS_ENDPOINT_URL: MOTO_URL, AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: MOTO_CLIENT_CONFIG.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: MOTO_CLIENT_CONFIG.credentials.secretAccessKey,
  });
  sqs = new SQSClient(MOTO_CLIENT_CONFIG);
  const dlq = await sqs.send(new CreateQueueCommand({ QueueName: `fn-dlq-${suffix}` }));
  dlqUrl = dlq.QueueUrl!;
  const dlqArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ["QueueArn"] }))).Attributes!.QueueArn!;
  const main = await sqs.send(new CreateQueueCommand({
    QueueName: `fn-main-${suffix}`,
    Attributes: { VisibilityTimeout: "1", RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 3 }) },
  }));
  queueUrl = main.QueueUrl!;
  queueArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["QueueArn"] }))).Attributes!.QueueArn!;
  const bucket = `fn-claims-${suffix}`;
  await new S3Client({ ...MOTO_CLIENT_CONFIG, forcePathStyle: true }).send(new CreateBucketCommand({ Bucket: bucket }));
  const secret = await new SecretsManagerClient(MOTO_CLIENT_CONFIG).send(new CreateSecretCommand({ Name: `fn-partners-${suffix}`, SecretString: PARTNERS_JSON }));
  const database = await createServerDatabase();
  dropDatabase = database.drop;
  // The deploy's migrate step (the functions never run DDL); here as the test database's owner.
  const owner = openPostgres({ connectionString: database.url, max: 1 });
  await migrate(owner);
  await owner.close();
  runtimeEnv = {
    ...baseEnv(),
    WEBHOOKS_QUEUE_URL: queueUrl,
    WEBHOOKS_DEAD_LETTER_QUEUE_URL: dlqUrl,
    WEBHOOKS_PARTNER_SECRETS_ARN: secret.ARN!,
    WEBHOOKS_DATABASE_URL: database.url,
    WEBHOOKS_DATABASE_TLS: "disable",
    WEBHOOKS_CLAIM_CHECK_BUCKET: bucket,
    // As the stack sets it on ingest: bodies above the queue's 256 KiB go by claim-check.
    MAX_INBOUND_BODY_BYTES: String(4 * 1024 * 1024),
    INBOX_DEFER_DELAY_SECONDS: "1",
    INBOX_RETRY_SCHEDULE: "1,2",
    LOG_LEVEL: "silent",
  };
  runtime = createAwsRuntime(runtimeEnv, queueAndClaimChecks);
}, 60_000);

afterAll(async () => {
  if (runtime) await (await runtime.database()).close();
  await dropDatabase?.();
});

describe("AWS functions on moto and PostgreSQL", () => {
  it("ingest → SQS → processor → inbox entry processed and the order created", async (t) => {
    if (skip) return t.skip();
    const eventId = `evt_created_${suffix}`;
    const answer = await handleIngest(runtime, apiEvent("shop", signedDelivery(eventId, orderEvent(`o-${suffix}`, "order.created"))));
    expect(answer.statusCode).toBe(202);
    await eventually("the processor to handle the message", async () => (await processBatch()).records > 0);
    const db = await runtime.database();
    expect(await inboxEntry(db, eventId)).toMatchObject({ status: "processed", outcome: "applied" });
    expect(await orderState(db, `o-${suffix}`)).toBe("created");
    expect(await depth(queueUrl)).toBe(0);
  });

  it("an event ahead of its prerequisite is deferred on SQS itself, then applies", async (t) => {
    if (skip) return t.skip();
    const order = `o-late-${suffix}`;
    expect((await handleIngest(runtime, apiEvent("shop", signedDelivery(`evt_paid_${suffix}`, orderEvent(order, "order.paid"))))).statusCode).toBe(202);
    const first = await eventually("the paid event to be received", async () => { const r = await processBatch(); return r.records > 0 && r; });
    expect(first.failed).toHaveLength(0); // deferred: acked, and a copy sent with DelaySeconds
    expect(await depth(queueUrl)).toBe(1);
    const db = await runtime.database();
    expect((await inboxEntry(db, `evt_paid_${suffix}`))?.status).toBe("deferred");
    expect((await handleIngest(runtime, apiEvent("shop", signedDelivery(`evt_new_${suffix}`, orderEvent(order, "order.created"))))).statusCode).toBe(202);
    await eventually("both events to apply", async () => { await processBatch(); return (await orderState(db, order)) === "paid"; });
    expect((await inboxEntry(db, `evt_paid_${suffix}`))?.status).toBe("processed");
  });

  it("a deferral repeated more times than maxReceiveCount never reaches the DLQ (issue 12 #6)", async (t) => {
    if (skip) return t.skip();
    const order = `o-waiting-${suffix}`;
    const eventId = `evt_waiting_${suffix}`;
    expect((await handleIngest(runtime, apiEvent("shop", signedDelivery(eventId, orderEvent(order, "order.paid"))))).statusCode).toBe(202);
    const db = await runtime.database();
    // maxReceiveCount is 3 on this queue: five deferrals would have dead-lettered it when each used a receive.
    let receives = 0;
    await eventually("five deferrals", async () => {
      const r = await processBatch();
      expect(r.failed).toEqual([]);
      receives += r.records;
      return receives >= 5;
    }, 30_000);
    expect(await depth(dlqUrl)).toBe(0);
    expect(await inboxEntry(db, eventId)).toMatchObject({ status: "deferred" });
    expect(await depth(queueUrl)).toBe(1); // the next copy, waiting out its delay
    expect((await handleIngest(runtime, apiEvent("shop", signedDelivery(`evt_create_${suffix}`, orderEvent(order, "order.created"))))).statusCode).toBe(202);
    await eventually("the waiting event to apply", async () => { await processBatch(); return (await orderState(db, order)) === "paid"; });
    expect(await depth(dlqUrl)).toBe(0);
  });

  it("a deferral longer than SQS's 15-minute delay is acked and left to the inbox and the relay", async (t) => {
    if (skip) return t.skip();
    const slow = createAwsRuntime({ ...runtimeEnv, INBOX_DEFER_DELAY_SECONDS: "1200" }, queueAndClaimChecks);
    const eventId = `evt_later_${suffix}`;
    expect((await handleIngest(slow, apiEvent("shop", signedDelivery(eventId, orderEvent(`o-later-${suffix}`, "order.paid"))))).statusCode).toBe(202);
    const r = await eventually("the event to be received", async () => { const b = await pollOnce(sqs, queueUrl, queueArn, (e) => handleProcessor(slow, e)); return b.records > 0 && b; });
    expect(r.failed).toEqual([]);
    expect(await depth(queueUrl)).toBe(0);
    expect(await depth(dlqUrl)).toBe(0);
    const db = await slow.database();
    expect(await inboxEntry(db, eventId)).toMatchObject({ status: "deferred" });
    const next = await db.query<{ s: number }>("SELECT extract(epoch FROM next_attempt_at - now())::int AS s FROM inbox_entries WHERE partner_event_id = $1", [eventId]);
    expect(next.rows[0]!.s).toBeGreaterThan(900);
    await db.close();
  });

  it("direct ingress: a deferral is acked and left to the inbox (a re-sent copy would fail its signature's tolerance)", async (t) => {
    if (skip) return t.skip();
    const direct = createAwsRuntime({ ...runtimeEnv, WEBHOOKS_VERIFY_IN_PROCESSOR: "true" }, queueAndClaimChecks);
    const eventId = `evt_direct_${suffix}`;
    const delivery = signedDelivery(eventId, orderEvent(`o-direct-${suffix}`, "order.paid"));
    // What API Gateway's SQS-SendMessage integration queues: the raw body, the partner and the signature headers as attributes.
    const attributes = { partner: "shop", ...delivery.headers };
    await sqs.send(new SendMessageCommand({
      QueueUrl: queueUrl, MessageBody: delivery.body,
      MessageAttributes: Object.fromEntries(Object.entries(attributes).map(([k, v]) => [k, { DataType: "String", StringValue: v }])),
    }));
    const r = await eventually("the direct message to be received", async () => { const b = await pollOnce(sqs, queueUrl, queueArn, (e) => handleProcessor(direct, e)); return b.records > 0 && b; });
    expect(r.failed).toEqual([]);
    expect(await depth(queueUrl)).toBe(0);
    const db = await direct.database();
    expect(await inboxEntry(db, eventId)).toMatchObject({ status: "deferred" });
    await db.close();
  });

  it("a payload over the SQS limit travels by claim-check through S3", async (t) => {
    if (skip) return t.skip();
    const eventId = `evt_big_${suffix}`;
    // Above MAX_PAYLOAD_BYTES (256 KiB, what ingest refused before issue 12 #12), under MAX_INBOUND_BODY_BYTES.
    const body = orderEvent(`o-big-${suffix}`, "order.created", { note: "x".repeat(1024 * 1024) });
    const answer = await handleIngest(runtime, apiEvent("shop", signedDelivery(eventId, body)));
    expect(answer.statusCode).toBe(202);
    expect(JSON.parse(answer.body)).toMatchObject({ claimCheck: true });
    const db = await runtime.database();
    await eventually("the big event to be processed", async () => { await processBatch(); return (await inboxEntry(db, eventId))?.status === "processed"; });
    const stored = await db.query<{ n: number }>("SELECT length(payload) AS n FROM inbox_entries WHERE partner_event_id = $1", [eventId]);
    expect(stored.rows[0]?.n).toBe(Buffer.byteLength(body));
  });

  it("a bad signature answers 401 and queues nothing", async (t) => {
    if (skip) return t.skip();
    await sqs.send(new PurgeQueueCommand({ QueueUrl: queueUrl })).catch(() => {});
    const delivery = signedDelivery(`evt_forged_${suffix}`, orderEvent("o-x", "order.created"));
    const answer = await handleIngest(runtime, apiEvent("shop", { ...delivery, body: delivery.body.replace("o-x", "o-y") }));
    expect(answer.statusCode).toBe(401);
    expect(JSON.parse(answer.body).error.code).toMatch(/signature/);
    const unknown = await handleIngest(runtime, apiEvent("nobody", delivery));
    expect(unknown.statusCode).toBe(404);
    const r = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 0 }));
    expect(r.Messages ?? []).toHaveLength(0);
  });

  it("a processing failure once the inbox holds the entry is acked: SQS never redelivers it, the inbox retries it on INBOX_RETRY_SCHEDULE (not before) and quarantines it after the last step (issue 24 #3)", async (t) => {
    if (skip) return t.skip();
    const eventId = `evt_poison_${suffix}`;
    const db = await runtime.database();
    await poisonEvent(db, eventId);
    const delivery = apiEvent("shop", signedDelivery(eventId, orderEvent(`o-p-${suffix}`, "order.created")));
    expect((await handleIngest(runtime, delivery)).statusCode).toBe(202);
    const first = await eventually("the poison message to be received", async () => { const r = await processBatch(); return r.records > 0 && r; });
    expect(first.failed).toEqual([]); // acked: the inbox owns the retries
    expect(await depth(queueUrl)).toBe(0);
    expect(await inboxEntry(db, eventId)).toMatchObject({ status: "failed", failures: 1 });
    // A redelivered copy (SQS is at-least-once) before the retry is due does not run the entry.
    expect((await handleIngest(runtime, delivery)).statusCode).toBe(202);
    await eventually("the copy to be received", async () => (await processBatch()).records > 0);
    expect(await inboxEntry(db, eventId)).toMatchObject({ status: "failed", failures: 1 });
    // The relay's inbox sweep runs it on the schedule (1 s, then 2 s), then quarantines it.
    const due = async () => (await db.query<{ at: Date }>("SELECT next_attempt_at AS at FROM inbox_entries WHERE partner_event_id = $1", [eventId])).rows[0]!.at;
    for (const failures of [2, 3]) {
      const at = await due();
      await new Promise((r) => setTimeout(r, Math.max(0, at.getTime() - Date.now()) + 50));
      await handleRelay(runtime, () => 60_000);
      expect(await inboxEntry(db, eventId)).toMatchObject(failures === 3 ? { status: "quarantined" } : { status: "failed", failures });
    }
    expect(await depth(dlqUrl)).toBe(0);
  });

  it("a failure before the inbox (a claim-check that cannot be read) is retried by SQS and dead-lettered after maxReceiveCount", async (t) => {
    if (skip) return t.skip();
    const lost = claimCheckMessage({ partner: "shop", eventId: `evt_lost_${suffix}`, eventType: "order.created", receivedAt: new Date() }, `s3://${runtimeEnv.WEBHOOKS_CLAIM_CHECK_BUCKET}/inbound/shop/missing-${suffix}`);
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: lost.body, MessageAttributes: Object.fromEntries(Object.entries(lost.attributes ?? {}).map(([k, v]) => [k, { DataType: "String", StringValue: String(v) }])) }));
    let deliveries = 0;
    await eventually("the unreadable message to reach the DLQ", async () => {
      const r = await processBatch();
      deliveries += r.records;
      return (await depth(dlqUrl)) > 0;
    }, 30_000);
    expect(deliveries).toBe(3);
    expect(await depth(queueUrl)).toBe(0);
    expect(await inboxEntry(await runtime.database(), `evt_lost_${suffix}`)).toBeUndefined();
  });

  it("a malformed message is dead-lettered with its reason, not dropped", async (t) => {
    if (skip) return t.skip();
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "{not json" }));
    await eventually("the malformed message to be handled", async () => (await processBatch()).records > 0);
    const dead = await sqs.send(new ReceiveMessageCommand({ QueueUrl: dlqUrl, MaxNumberOfMessages: 10, MessageAttributeNames: ["All"] }));
    const reasons = (dead.Messages ?? []).map((m) => m.MessageAttributes?.deadLetterReason?.StringValue ?? "");
    expect(reasons.some((r) => r.includes("is not JSON"))).toBe(true);
  });
});

describe("AWS cold start", () => {
  it("names a bad setting, and refuses a setting it does not know", async () => {
    expect(() => createAwsRuntime({ WEBHOOKS_QUEUE_URL: "not a url" })).toThrow(/WEBHOOKS_QUEUE_URL: /);
    expect(() => createAwsRuntime({ WEBHOOKS_DATABASE_SSL: "verify-full" })).toThrow(/does not know WEBHOOKS_DATABASE_SSL/);
    expect(() => createAwsRuntime({ WEBHOOKS_DATABASE_TLS: "require" })).toThrow(/WEBHOOKS_DATABASE_TLS/);
    await expect(createAwsRuntime({}).database()).rejects.toThrow(/WEBHOOKS_DATABASE_USER/);
    await expect(createAwsRuntime({}, queueAndClaimChecks).queue()).rejects.toThrow(/WEBHOOKS_QUEUE_URL/);
  });
});
