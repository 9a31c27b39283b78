/**
 * Destinations benchmark (issue 31, must show 3; not a test): messages per second into each kind
 * of queue destination, in one run on this machine,
 *   - through our relay: N events enqueued first (outbox on a fresh PostgreSQL database), then one
 *     relay with its defaults delivers them to a subscription with that destination; the clock
 *     runs from the relay's start to the last completion written;
 *   - by the bare SDK: the same N messages (the same signed envelope, attributes, FIFO ids), sent
 *     by the service's own client library straight from memory, at the relay's most in flight per
 *     subscription (64), no database.
 * The ratio relay ÷ SDK is what the relay costs over the service itself (target ≥ 0.8). A third,
 * diagnostic side runs the same relay with a destination that takes every message at once: the
 * outbox's own ceiling now (claims and completion writes on PostgreSQL); relay ÷ no-op near 1
 * means the service, not the sender, is what the relay waits for. A fourth side runs the same relay
 * with the destination senders of BENCH_BASELINE_COMMIT (bench/destinations/baseline.ts; default:
 * before send coalescing), so a change to the senders is measured against the old ones in one run
 * (relay ÷ baseline; BENCH_BASELINE=off leaves it out). Each kind
 * runs against the stand-in the contract suite uses (moto for SQS/SNS/EventBridge, the Pub/Sub
 * emulator, the Service Bus test peer, the local RabbitMQ): their speed is theirs, not the
 * clouds', so compare the ratio, not the rates. The machine is shared: the two sides alternate
 * (A B B A …) over BENCH_ROUNDS rounds and medians are reported.
 *
 *   npm run bench:destinations
 *   env: BENCH_MESSAGES (per kind: sqs/sns 500, eventbridge 100, pubsub/rabbitmq 3000, servicebus 2000), BENCH_ROUNDS (2), BENCH_KINDS (sqs,sns,eventbridge,pubsub,servicebus,rabbitmq),
 *        BENCH_BASELINE_COMMIT (2501c22), BENCH_BASELINE (on; off: no baseline side)
 */
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { openDatabase } from "../shared/db/open.js";
import { enqueueMany } from "../shared/outbound/enqueue.js";
import { createRelay } from "../shared/outbound/relay.js";
import { createSubscription } from "../shared/outbound/subscriptions.js";
import { createTransport } from "../shared/outbound/transport.js";
import { signatureHeader } from "../shared/outbound/signature.js";
import { createDestinationSenders } from "../shared/outbound/destinations/senders.js";
import { startServiceBusTestPeer, type ServiceBusTestPeer } from "../test/support/serviceBusTestPeer.js";
import { motoAvailable, pubsubEmulatorAvailable } from "../test/support/emulators.js";
import {
  eventBridgeService, pubsubService, RABBITMQ_URL, rabbitmqService, serviceBusService, snsService, sqsService, tcpAnswers, type Service, type Target,
} from "../test/outbound/destinations/services.js";
import { bareSender } from "./destinations/bare.js";
import { BASELINE_COMMIT, loadBaselineSenders, type BaselineSenders } from "./destinations/baseline.js";
import { eventData, freshDatabase, waitFor } from "./outbound/support.js";
import { median, printTable } from "./table.js";
import { runBench } from "./runBench.js";
import { useThrowawayEncryptionKey } from "./throwawayKey.js";

useThrowawayEncryptionKey();

/**
 * Messages per side: by default fewer on moto, which takes tens of messages a second on this
 * machine (EventBridge's rule → SQS a few), so one run ends in minutes; BENCH_MESSAGES sets all.
 */
const DEFAULT_MESSAGES: Record<string, number> = { sqs: 500, sns: 500, eventbridge: 100, pubsub: 3000, servicebus: 2000, rabbitmq: 3000 };
const messagesFor = (kind: string) => Number(process.env.BENCH_MESSAGES ?? DEFAULT_MESSAGES[kind] ?? 1000);
let MESSAGES = 0;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const KINDS = (process.env.BENCH_KINDS ?? "sqs,sns,eventbridge,pubsub,servicebus,rabbitmq").split(",");
const WITH_BASELINE = process.env.BENCH_BASELINE !== "off";
/** The relay's most attempts in flight to one subscription (DEFAULT_HTTP_CONCURRENCY): the bare SDK gets as many. */
const IN_FLIGHT = 64;

/**
 * Our relay: enqueue, then deliver all; messages per second of the delivery phase. `noop`: a
 * diagnostic, the same relay with a destination client that takes every message at once (no
 * service): the outbox's own ceiling on this machine now, claims and completion writes.
 * `baseline`: the same relay with the senders of BASELINE_COMMIT.
 */
async function throughRelay(target: Target, noop = false, baseline?: BaselineSenders): Promise<number> {
  const fresh = await freshDatabase("bench_destinations");
  const db = await openDatabase({ databaseUrl: fresh.url, poolSize: 10 });
  try {
    await createSubscription(db, { destination: target.destination, eventTypes: ["bench.*"] });
    for (let from = 0; from < MESSAGES; from += 500) {
      const batch = Array.from({ length: Math.min(MESSAGES, from + 500) - from }, (_, k) => ({ id: `evt_${from + k}`, type: "bench.created", data: eventData(from + k) }));
      await db.transaction((tx) => enqueueMany(tx, batch));
    }
    let delivered = 0;
    let failed = "";
    let retried = 0;
    const transport = createTransport({});
    const destinations = noop
      ? createDestinationSenders({ db, openClient: async () => ({ send: async () => {}, close: async () => {}, classify: () => ({ result: "retryable", errorClass: "none", detail: "" }) }) })
      : baseline ? baseline.createDestinationSenders({ db }) : undefined;
    const relay = createRelay({
      db, transport, pollIntervalMs: 200, ...(destinations ? { destinations } : {}),
      onCompleted: (completions) => {
        for (const c of completions) {
          // A retried attempt (a stand-in's timeout under load) is part of the relay's cost; a dead letter voids the run.
          if (c.decision.status === "delivered") delivered += 1;
          else if (c.decision.status === "dead") failed ||= `${c.outcome.result} ${c.outcome.errorClass}: ${c.outcome.responseExcerpt}`;
          else retried += 1;
        }
      },
    });
    const start = performance.now();
    await relay.start();
    await waitFor(() => delivered >= MESSAGES || failed !== "", 600_000, 5);
    const seconds = (performance.now() - start) / 1000;
    await relay.stop();
    await destinations?.close(); // given to the relay: not closed by its stop
    await transport.close();
    if (failed) throw new Error(`a delivery did not succeed (${failed}): the benchmark is void`);
    if (retried > 0) console.error(`  (relay: ${retried} attempts retried)`);
    return MESSAGES / seconds;
  } finally {
    await db.close();
    await fresh.drop();
  }
}

/** The bare SDK: the same messages, signed beforehand as the relay signs them, IN_FLIGHT at a time. */
async function bySdk(target: Target): Promise<number> {
  const secret = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
  const timestamp = Math.floor(Date.now() / 1000);
  const messages = Array.from({ length: MESSAGES }, (_, i) => {
    const id = `evt_${i}:sub_bench`;
    const body = `{"id":"evt_${i}","type":"bench.created","timestamp":"${new Date().toISOString()}","data":${JSON.stringify(eventData(i))}}`;
    return {
      webhookId: id, body, orderingKey: null, eventType: "bench.created",
      attributes: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(timestamp), "webhook-signature": signatureHeader([secret], id, timestamp, body) },
    };
  });
  const sender = await bareSender(target.destination);
  try {
    let next = 0;
    const start = performance.now();
    await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
      while (next < messages.length) await sender.send(messages[next++]!);
    }));
    return MESSAGES / ((performance.now() - start) / 1000);
  } finally {
    await sender.close();
  }
}

runBench("bench:destinations", async () => {
  let peer: ServiceBusTestPeer | undefined;
  const services: { service: Service; available: () => Promise<boolean> }[] = [
    { service: sqsService, available: motoAvailable },
    { service: snsService, available: motoAvailable },
    { service: eventBridgeService, available: motoAvailable },
    { service: pubsubService, available: pubsubEmulatorAvailable },
    { service: serviceBusService(() => peer!), available: async () => true },
    { service: rabbitmqService, available: () => { const u = new URL(RABBITMQ_URL); return tcpAnswers(u.hostname, Number(u.port || 5672)); } },
  ];
  peer = await startServiceBusTestPeer();
  const baseline = WITH_BASELINE ? await loadBaselineSenders() : undefined;
  const rows: string[][] = [["kind (stand-in), messages per side", "relay msg/s", "bare SDK msg/s", "relay ÷ SDK", "target ≥ 0.8", "relay, no-op destination msg/s", "relay ÷ no-op",
    ...(baseline ? [`relay, ${BASELINE_COMMIT.slice(0, 7)}'s senders msg/s`, "its ÷ SDK", "relay ÷ it"] : [])]];
  const loadBefore = loadavg()[0]!;
  try {
    for (const { service, available } of services) {
      if (!KINDS.includes(service.kind)) continue;
      if (!(await available())) {
        rows.push([service.kind, "–", "–", "–", "not run: its service is not running"]);
        continue;
      }
      MESSAGES = messagesFor(service.kind);
      const relay: number[] = [];
      const sdk: number[] = [];
      const noop: number[] = [];
      const old: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        // A B, then B A: neither side always runs first on a machine whose load drifts.
        const sides = ["relay", ...(baseline ? ["baseline"] : []), "sdk", "noop"];
        const order = round % 2 === 0 ? sides : sides.reverse();
        for (const side of order) {
          const target = await service.target({ ordered: false });
          try {
            if (side === "relay") relay.push(await throughRelay(target));
            else if (side === "baseline") old.push(await throughRelay(target, false, baseline));
            else if (side === "noop") noop.push(await throughRelay(target, true));
            else sdk.push(await bySdk(target));
          } finally {
            await target.cleanup();
          }
        }
      }
      const ratio = median(relay) / median(sdk);
      rows.push([`${service.kind} (${STAND_IN[service.kind]}), ${MESSAGES}`, median(relay).toFixed(0), median(sdk).toFixed(0), ratio.toFixed(2), ratio >= 0.8 ? "met" : "NOT met", median(noop).toFixed(0), (median(relay) / median(noop)).toFixed(2),
        ...(baseline ? [median(old).toFixed(0), (median(old) / median(sdk)).toFixed(2), (median(relay) / median(old)).toFixed(2)] : [])]);
      console.error(`${service.kind}: relay ${relay.map((x) => x.toFixed(0)).join(", ")}; SDK ${sdk.map((x) => x.toFixed(0)).join(", ")}; no-op ${noop.map((x) => x.toFixed(0)).join(", ")}${baseline ? `; baseline ${old.map((x) => x.toFixed(0)).join(", ")}` : ""}`);
    }
  } finally {
    await peer.close();
    baseline?.remove();
  }
  console.log(`\nbench:destinations: ${ROUNDS} rounds (medians), ${IN_FLIGHT} in flight; load average ${loadBefore.toFixed(1)} → ${loadavg()[0]!.toFixed(1)} (a shared machine: compare the ratios)\n`);
  printTable(rows);
});

const STAND_IN: Record<string, string> = {
  sqs: "moto", sns: "moto, read by SQS", eventbridge: "moto, rule → SQS", pubsub: "emulator", servicebus: "test peer", rabbitmq: "local broker",
};
