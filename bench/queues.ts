/**
 * Queue adapter benchmark (not a test): messages per second sent and received through each adapter
 * on its local server, side by side with a bare loop that makes the same service calls straight on
 * the SDK (or `pg`), on the same server, in the same run. The ratio adapter / bare is the adapter's
 * overhead (target: >= 0.90, i.e. within 10% of the bare SDK).
 *
 * Each contender, each round: two fresh queues, one per side; send N messages in batches of 10 (the
 * largest batch SQS takes, so every service does the same calls); then receive 10 at a time and
 * ack each one, until N are back. The two sides run in lockstep, call by call (see `measure`), and
 * only the time inside each side's own calls counts; the median of the rounds is reported.
 *
 *   npm run bench:queues     # BENCH_QUEUE_MESSAGES (400), BENCH_QUEUE_ROUNDS (3), BENCH_QUEUE_ONLY (e.g. "sqs")
 * Needs PostgreSQL on 127.0.0.1:5432 and `source .ci/services.sh && start_services`; a contender
 * whose server is missing is reported as skipped. Service Bus runs against the in-process AMQP
 * test peer (test/support/serviceBusTestPeer.ts): its numbers measure the SDK and the adapter, not
 * the service.
 */
import { existsSync } from "node:fs";
import pg from "pg";
import { openDatabase } from "../shared/db/open.js";
import { createLocalQueue } from "../shared/queue/local.js";
import type { QueueAdapter } from "../shared/queue/port.js";
import { createPubSubQueue } from "../shared/queue/pubsub.js";
import { createSqsQueue } from "../shared/queue/sqs.js";
import { createServerDatabase, postgresAvailable } from "../test/support/databases.js";
import {
  createEmulatorTopics, createMotoQueuePair, MOTO_CLIENT_CONFIG, motoAvailable, pubsubEmulatorAvailable,
} from "../test/support/emulators.js";
import { runBench } from "./runBench.js";

const N = Number(process.env.BENCH_QUEUE_MESSAGES ?? 400);
const ROUNDS = Number(process.env.BENCH_QUEUE_ROUNDS ?? 3);
const BATCH = 10;
const ATTRIBUTES = { partner: "stripe", contentType: "application/json", receivedAt: "2026-01-01T00:00:00.000Z" };
const body = (i: number) => JSON.stringify({ id: `evt_${i}`, type: "order.paid", data: { amount: 4200 + i, currency: "eur" } });

/** What each side of a round does: send N (batches of 10), then receive-and-ack N. */
interface Side {
  sendBatch(from: number, count: number): Promise<void>;
  /** Receives up to 10, acks each; returns how many. */
  receiveAndAck(): Promise<number>;
}
interface Contender {
  name: string;
  available(): Promise<boolean>;
  /** A fresh queue; `adapter` or `bare` decides which side talks to it. */
  open(kind: "adapter" | "bare"): Promise<{ side: Side; close(): Promise<void> }>;
}

const adapterSide = (queue: QueueAdapter, visibilitySeconds = 30): Side => ({
  async sendBatch(from, count) {
    await queue.sendBatch(Array.from({ length: count }, (_, k) => ({ body: body(from + k), attributes: { ...ATTRIBUTES, eventId: `evt_${from + k}` } })));
  },
  async receiveAndAck() {
    const messages = await queue.receive({ max: BATCH, visibilitySeconds });
    for (const m of messages) await queue.ack(m);
    return messages.length;
  },
});

type Kind = "adapter" | "bare";
type Rates = Record<Kind, { send: number; receive: number }>;

/**
 * Both sides in lockstep, each on its own fresh queue: batch k of the adapter, then batch k of the
 * bare loop (order flipped every call), each call timed on its own. On a shared machine, load
 * then falls on both sides alike instead of on whichever ran during a busy minute.
 */
async function measure(sides: Record<Kind, Side>): Promise<Rates> {
  const spent = { adapter: { send: 0, receive: 0 }, bare: { send: 0, receive: 0 } };
  const timed = async <T>(kind: Kind, op: "send" | "receive", fn: () => Promise<T>): Promise<T> => {
    const start = performance.now();
    try { return await fn(); } finally { spent[kind][op] += performance.now() - start; }
  };
  let flip = false;
  const order = (): Kind[] => ((flip = !flip) ? ["adapter", "bare"] : ["bare", "adapter"]);
  for (let i = 0; i < N; i += BATCH) {
    for (const kind of order()) await timed(kind, "send", () => sides[kind].sendBatch(i, Math.min(BATCH, N - i)));
  }
  const received = { adapter: 0, bare: 0 };
  const deadline = Date.now() + 180_000;
  while (received.adapter < N || received.bare < N) {
    if (Date.now() > deadline) throw new Error(`only ${received.adapter} / ${received.bare} of ${N} messages came back within 180 s`);
    for (const kind of order()) {
      if (received[kind] < N) received[kind] += await timed(kind, "receive", () => sides[kind].receiveAndAck());
    }
  }
  const rate = (ms: number) => N / (ms / 1000);
  return {
    adapter: { send: rate(spent.adapter.send), receive: rate(spent.adapter.receive) },
    bare: { send: rate(spent.bare.send), receive: rate(spent.bare.receive) },
  };
}

// ---- contenders ------------------------------------------------------------------------------

const local: Contender = {
  name: "local (PostgreSQL server)",
  available: postgresAvailable,
  async open(kind) {
    const { url, drop } = await createServerDatabase();
    const db = await openDatabase({ databaseUrl: url, poolSize: 2 });
    const queue = `bench_${kind}`;
    if (kind === "adapter") {
      return { side: adapterSide(createLocalQueue({ db, queue })), close: async () => { await db.close(); await drop(); } };
    }
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    const side: Side = {
      async sendBatch(from, count) {
        const idx = Array.from({ length: count }, (_, k) => from + k);
        // The very statement the adapter sends (ordered, with per-message delay, returning ids), so
        // the ratio measures the adapter's own code, not a cheaper query.
        await pool.query(
          `INSERT INTO queue_messages (queue, body, attributes, visible_at)
           SELECT $1, b.body, b.attributes, now() + make_interval(secs => b.delay)
           FROM unnest($2::text[], $3::jsonb[], $4::int[]) WITH ORDINALITY AS b(body, attributes, delay, n)
           ORDER BY b.n
           RETURNING message_id::text`,
          [queue, idx.map(body), idx.map((i) => JSON.stringify({ ...ATTRIBUTES, eventId: `evt_${i}` })), idx.map(() => 0)],
        );
      },
      async receiveAndAck() {
        const { rows } = await pool.query<{ id: string; receipt: string }>(
          `WITH due AS (SELECT id FROM queue_messages WHERE queue = $1 AND dead_lettered_at IS NULL AND visible_at <= now()
                        ORDER BY visible_at, id LIMIT 10 FOR UPDATE SKIP LOCKED)
           UPDATE queue_messages m SET receive_count = m.receive_count + 1, visible_at = now() + interval '30 seconds', receipt = gen_random_uuid()
           FROM due WHERE m.id = due.id RETURNING m.id::text, m.receipt::text, m.body, m.attributes`,
          [queue],
        );
        for (const r of rows) await pool.query("DELETE FROM queue_messages WHERE id = $1 AND receipt = $2::uuid", [r.id, r.receipt]);
        return rows.length;
      },
    };
    return { side, close: async () => { await pool.end(); await db.close(); await drop(); } };
  },
};

const sqs: Contender = {
  name: "SQS (moto_server)",
  available: motoAvailable,
  async open(kind) {
    const pair = await createMotoQueuePair(5);
    if (kind === "adapter") {
      const queue = await createSqsQueue({ ...pair, clientConfig: MOTO_CLIENT_CONFIG });
      return { side: adapterSide(queue), close: async () => { await queue.close(); await pair.remove(); } };
    }
    const sdk = await import("@aws-sdk/client-sqs");
    const client = new sdk.SQSClient(MOTO_CLIENT_CONFIG);
    const attrs = (i: number) => Object.fromEntries(Object.entries({ ...ATTRIBUTES, eventId: `evt_${i}` }).map(([k, v]) => [k, { DataType: "String", StringValue: v }]));
    const side: Side = {
      async sendBatch(from, count) {
        await client.send(new sdk.SendMessageBatchCommand({
          QueueUrl: pair.queueUrl,
          Entries: Array.from({ length: count }, (_, k) => ({ Id: String(k), MessageBody: body(from + k), MessageAttributes: attrs(from + k) })),
        }));
      },
      async receiveAndAck() {
        const { Messages = [] } = await client.send(new sdk.ReceiveMessageCommand({
          QueueUrl: pair.queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 30,
          MessageAttributeNames: ["All"], MessageSystemAttributeNames: ["ApproximateReceiveCount"],
        }));
        for (const m of Messages) await client.send(new sdk.DeleteMessageCommand({ QueueUrl: pair.queueUrl, ReceiptHandle: m.ReceiptHandle }));
        return Messages.length;
      },
    };
    return { side, close: async () => { client.destroy(); await pair.remove(); } };
  },
};

const pubsub: Contender = {
  name: "Pub/Sub (emulator)",
  available: pubsubEmulatorAvailable,
  async open(kind) {
    const topics = await createEmulatorTopics(5);
    if (kind === "adapter") {
      const queue = await createPubSubQueue(topics);
      // Visibility = the subscription's ack deadline, so neither side makes a modifyAckDeadline call.
      return { side: adapterSide(queue, topics.subscriptionAckDeadlineSeconds), close: async () => { await queue.close(); await topics.remove(); } };
    }
    const sdk = await import("@google-cloud/pubsub");
    const ps = new sdk.PubSub({ projectId: topics.projectId });
    ps.options.universeDomain = "googleapis.com";
    const clientOptions = ps.options as ConstructorParameters<typeof sdk.v1.PublisherClient>[0];
    const publisher = new sdk.v1.PublisherClient(clientOptions);
    const subscriber = new sdk.v1.SubscriberClient(clientOptions);
    const topic = `projects/${topics.projectId}/topics/${topics.topic}`;
    const subscription = `projects/${topics.projectId}/subscriptions/${topics.subscription}`;
    const side: Side = {
      async sendBatch(from, count) {
        await publisher.publish({
          topic,
          messages: Array.from({ length: count }, (_, k) => ({ data: Buffer.from(body(from + k)), attributes: { ...ATTRIBUTES, eventId: `evt_${from + k}` } })),
        });
      },
      async receiveAndAck() {
        const [response] = await subscriber.pull({ subscription, maxMessages: 10, returnImmediately: true });
        const received = response.receivedMessages ?? [];
        for (const m of received) await subscriber.acknowledge({ subscription, ackIds: [m.ackId!] });
        return received.length;
      },
    };
    return { side, close: async () => { await publisher.close(); await subscriber.close(); await ps.close(); await topics.remove(); } };
  },
};

/** Service Bus through the other engineer's AMQP test peer, when it is there. */
async function serviceBus(): Promise<Contender | undefined> {
  if (!existsSync(new URL("../test/support/serviceBusTestPeer.ts", import.meta.url))) return undefined;
  const { startServiceBusTestPeer } = await import("../test/support/serviceBusTestPeer.js");
  const { createServiceBusQueue } = await import("../shared/queue/serviceBus.js");
  let queues = 0;
  return {
    name: "Service Bus (AMQP test peer)",
    available: async () => true,
    async open(kind) {
      const peer = await startServiceBusTestPeer();
      const queueName = `bench-${++queues}`;
      peer.createQueue(queueName, { lockDurationMs: 30_000, maxDeliveryCount: 5 });
      if (kind === "adapter") {
        const queue = await createServiceBusQueue({ connectionString: peer.connectionString, queueName });
        return { side: adapterSide(queue), close: async () => { await queue.close(); await peer.close(); } };
      }
      const sdk = await import("@azure/service-bus");
      const client = new sdk.ServiceBusClient(peer.connectionString);
      const sender = client.createSender(queueName);
      const receiver = client.createReceiver(queueName, { receiveMode: "peekLock", maxAutoLockRenewalDurationInMs: 30_000, skipParsingBodyAsJson: true });
      const side: Side = {
        async sendBatch(from, count) {
          const batch = await sender.createMessageBatch();
          for (let k = 0; k < count; k++) {
            batch.tryAddMessage({ body: Buffer.from(body(from + k)), messageId: `m-${from + k}`, applicationProperties: { ...ATTRIBUTES, eventId: `evt_${from + k}` } });
          }
          await sender.sendMessages(batch);
        },
        async receiveAndAck() {
          const messages = await receiver.receiveMessages(10, { maxWaitTimeInMs: 100 });
          for (const m of messages) await receiver.completeMessage(m);
          return messages.length;
        },
      };
      return { side, close: async () => { await receiver.close(); await sender.close(); await client.close(); await peer.close(); } };
    },
  };
}

// ---- run -------------------------------------------------------------------------------------

const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (n: number) => n.toLocaleString("en-US", { maximumFractionDigits: 0 }).padStart(8);

async function run(contender: Contender) {
  const once = async (): Promise<Rates> => {
    const adapter = await contender.open("adapter");
    const bare = await contender.open("bare");
    try {
      return await measure({ adapter: adapter.side, bare: bare.side });
    } finally {
      await adapter.close();
      await bare.close();
    }
  };
  await once(); // warm-up (JIT, connections, the server's caches), discarded
  const results: Rates[] = [];
  for (let round = 0; round < ROUNDS; round++) results.push(await once());
  const pick = (kind: Kind, op: "send" | "receive") => median(results.map((r) => r[kind][op]));
  return (["send", "receive"] as const).map((op) => ({ op, bare: pick("bare", op), adapter: pick("adapter", op) }));
}

async function main() {
  console.log(`queue adapters benchmark: ${N} messages per round, batches of ${BATCH}, median of ${ROUNDS} rounds (after a warm-up)`);
  const only = process.env.BENCH_QUEUE_ONLY?.toLowerCase();
  const contenders = [local, sqs, pubsub, await serviceBus()]
    .filter((c): c is Contender => c !== undefined && (!only || c.name.toLowerCase().includes(only)));
  const rows: string[] = [];
  const skipped: string[] = [];
  for (const contender of contenders) {
    if (!(await contender.available())) {
      rows.push(`${contender.name.padEnd(30)} SKIPPED: its server is not answering (see the header of this file)`);
      skipped.push(contender.name);
      continue;
    }
    console.log(`  running ${contender.name} ...`);
    for (const { op, bare, adapter } of await run(contender)) {
      rows.push(`${contender.name.padEnd(30)} ${op.padEnd(8)} ${fmt(bare)} ${fmt(adapter)}   ${(adapter / bare).toFixed(3)}${adapter / bare >= 0.9 ? "" : "  (over 10%)"}`);
    }

  }
  console.log(`\n${"service".padEnd(30)} ${"op".padEnd(8)} ${"bare/s".padStart(8)} ${"adapter/s".padStart(8)}   adapter÷bare`);
  for (const row of rows) console.log(row);
  console.log("\nmsg/s; 'receive' = receive 10 at a time and ack each. Ratio 1.00 = no overhead; >= 0.90 is the target.");
  // As the tests: under CI every service runs, so a skipped contender is a failure there.
  if (process.env.CI && skipped.length > 0) throw new Error(`${skipped.join(", ")} skipped under CI=true: start the services (source .ci/services.sh && start_services)`);
}

runBench("bench:queues", main);
