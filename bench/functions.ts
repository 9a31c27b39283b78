/**
 * Cloud function bundles benchmark (not a test): builds every bundle (functions/build.ts), then
 * for each prints its minified size (all chunks: what is zipped; and what importing index.mjs
 * loads, the rest being chunks loaded on first use) and, in a FRESH Node process per run, the time to import the
 * bundle and to handle a first event through the bundle's own entry point, with the trigger's
 * real event shape (API Gateway v2 / SQS event; `HttpRequest` / Service Bus body +
 * `InvocationContext` / Timer; HTTP POSTs to the Functions Framework: a signed webhook, a Pub/Sub
 * push envelope, a Cloud Scheduler call). Medians of BENCH_FUNCTIONS_RUNS (3) runs.
 *
 * The first event does the function's real work against local services: ingest verifies and
 * enqueues (moto SQS / the Service Bus AMQP test peer / the Pub/Sub emulator), the processor
 * stores and applies an inbox entry in PostgreSQL, the relay delivers one due outbox delivery to
 * a receiver on 127.0.0.1. It includes the cold start's own connections (pg, AMQP, HTTP clients)
 * and the migration check on an already-migrated database; all over loopback. When a queue
 * service is not answering, that cloud's ingest gets a request with a bad signature instead
 * (it stops at verification, 401), and the table says so. A second ingest row per cloud,
 * "ingest (claim-check)", sends a body over the queue's limit, so its first event also loads and
 * uses the claim-check store's SDK (S3 on moto, Blob on Azurite, Cloud Storage on the test peer).
 * On Azure a third, "ingest (claim-check, managed identity)", stores it with the managed identity
 * as the stack configures it (Azurite over HTTPS with `--oauth basic`, tokens from the identity
 * endpoint test peer, Azurite's certificate trusted through NODE_EXTRA_CA_CERTS), so that first
 * event also loads the credential and asks for its first token.
 *
 * With BENCH_FUNCTIONS_BASELINE=<commit>, that commit's functions are built too (its tree from
 * `git archive`, under dist/bench-baseline/, with this checkout's node_modules) and every run of
 * a function alternates between the two builds, so "before" and "after" share one machine load.
 *
 *   npm run bench:functions      # needs PostgreSQL at 127.0.0.1:5432; moto and the Pub/Sub emulator
 *                                # from `source .ci/services.sh && start_services`
 *   BENCH_FUNCTIONS_BASELINE=f89e08c npm run bench:functions
 *   BENCH_FUNCTIONS_ONLY=gcp/ingest npm run bench:functions    # the rows whose label contains it
 *   BENCH_FUNCTIONS_TELEMETRY=1 npm run bench:functions        # each row again with OpenTelemetry on
 * With BENCH_FUNCTIONS_TELEMETRY=1 every row has a twin, "<row> +otel", whose environment turns the
 * SDK on as the stacks do (functions/telemetry.ts): spans by OTLP/HTTP (protobuf) to a local
 * OtlpTestPeer, metrics by OTLP too (AWS: as EMF lines on stdout, the stack's setting; Azure:
 * Application Insights' exporter, the stack's, sending to the peer, which refuses it: loading and
 * one failed send are measured; GCP: plain OTLP, as the Telemetry API's token cannot be had
 * here), all flushed before the first event's answer: what configuring telemetry adds to a cold start.
 * Targets: what a bundle loads at import < 1 MiB, all its chunks < 4 MiB (test/functions/bundles.test.ts);
 * first event < 1 s.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { Webhook } from "standardwebhooks";
import { buildFunctions, type BuiltFunction } from "../functions/build.js";
import { inlineMessage } from "../shared/cloud/inboundMessage.js";
import { migrate } from "../shared/db/migrate.js";
import { openPostgres } from "../shared/db/postgres.js";
import type { Database } from "../shared/db/port.js";
import { createSubscription, enqueue } from "../shared/outbound/index.js";
import { startReceiver } from "../test/functions/receiver.js";
import { createServerDatabase, postgresAvailable } from "../test/support/databases.js";
import { createEmulatorTopics, MOTO_CLIENT_CONFIG, MOTO_URL, createMotoQueuePair, motoAvailable, PUBSUB_EMULATOR_HOST, pubsubEmulatorAvailable } from "../test/support/emulators.js";
import { startServiceBusTestPeer } from "../test/support/serviceBusTestPeer.js";
import { startAzurite } from "../test/support/azurite.js";
import { startGcsTestPeer } from "../test/support/gcsTestPeer.js";
import { startManagedIdentityTestPeer } from "../test/support/managedIdentityTestPeer.js";
import { makeCertificate } from "../test/wiring/support/certificates.js";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { BlobServiceClient } from "@azure/storage-blob";
import { useThrowawayEncryptionKey } from "./throwawayKey.js";
import { runBench } from "./runBench.js";
import { startOtlpTestPeer } from "../test/support/otlpTestPeer.js";

const ENCRYPTION_KEYS = useThrowawayEncryptionKey();

const RUNS = Number(process.env.BENCH_FUNCTIONS_RUNS ?? 3);
const IMPORT_TARGET_KIB = 1024;
const SIZE_TARGET_KIB = 4096;
const FIRST_EVENT_TARGET_MS = 1000;
const BASELINE = process.env.BENCH_FUNCTIONS_BASELINE;
/** Bodies over each queue's message limit (SQS and Service Bus 256 KiB, Pub/Sub 7.5 MB), under MAX_INBOUND_BODY_BYTES below. */
const CLAIM_CHECK_BODY_BYTES = { aws: 300 * 1024, azure: 300 * 1024, gcp: 8 * 1024 * 1024 } as const;
const root = fileURLToPath(new URL("..", import.meta.url));
const driver = join(root, "bench/functions/coldStart.mjs");
const run = promisify(execFile);

const SECRET = `whsec_${Buffer.from("bench-functions-secret-32-bytes!").toString("base64")}`;
const PARTNERS_JSON = JSON.stringify({ shop: { scheme: "standard-webhooks", secrets: [SECRET] } });
const signer = new Webhook(SECRET);
let counter = 0;
const nextId = (what: string) => `evt_bench_${what}_${Date.now().toString(36)}_${++counter}`;

function signed(id: string, body: string, valid: boolean): Record<string, string> {
  const at = new Date();
  return {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": valid ? signer.sign(id, at, body) : "v1,Zm9yZ2VkLXNpZ25hdHVyZS1mb3ItdGhlLWJlbmNoLW9ubHk=",
  };
}
const orderCreated = (id: string, padding = 0) => JSON.stringify({ type: "order.created", data: { order_id: `o-${id}`, ...(padding ? { note: "x".repeat(padding) } : {}) } });

/** The first event of one function, in its trigger's shape; `claimCheck`: an ingest body over the queue's limit. */
function eventFor(cloud: BuiltFunction["cloud"], name: BuiltFunction["name"], queueUp: boolean, claimCheck = false): { event: unknown; note: string } {
  const id = nextId(`${cloud}_${name}`);
  const body = orderCreated(id, claimCheck ? CLAIM_CHECK_BODY_BYTES[cloud] : 0);
  if (name === "ingest") {
    const headers = signed(id, body, queueUp);
    const note = !queueUp ? "bad signature → 401 (queue not answering)" : claimCheck ? `signed ${Math.round(Buffer.byteLength(body) / 1024)} KiB webhook → claim-check stored, reference queued` : "signed webhook → queued";
    if (cloud === "aws") {
      return { note, event: {
        version: "2.0", routeKey: "POST /webhooks/{partner}", rawPath: "/webhooks/shop", rawQueryString: "", headers,
        pathParameters: { partner: "shop" }, isBase64Encoded: false, body,
        requestContext: { accountId: "123456789012", apiId: "api", domainName: "api.example", domainPrefix: "api", requestId: id, routeKey: "POST /webhooks/{partner}", stage: "$default", time: "", timeEpoch: Date.now(), http: { method: "POST", path: "/webhooks/shop", protocol: "HTTP/1.1", sourceIp: "203.0.113.9", userAgent: "bench" } },
      } };
    }
    if (cloud === "azure") return { note, event: { method: "POST", url: "https://fn.azurewebsites.net/api/webhooks/shop", headers, body: { string: body }, params: { partner: "shop" } } };
    return { note, event: { path: "/webhooks/shop", headers, body } };
  }
  if (name === "processor") {
    const message = inlineMessage({ partner: "shop", eventId: id, eventType: "order.created", receivedAt: new Date() }, Buffer.from(body));
    const note = "inbox entry stored and applied";
    if (cloud === "aws") {
      const messageAttributes = Object.fromEntries(Object.entries(message.attributes ?? {}).map(([k, v]) => [k, { stringValue: v, dataType: "String", stringListValues: [], binaryListValues: [] }]));
      return { note, event: { Records: [{
        messageId: id, receiptHandle: `rh-${id}`, body: message.body, md5OfBody: "", eventSource: "aws:sqs",
        eventSourceARN: "arn:aws:sqs:us-east-1:123456789012:bench", awsRegion: "us-east-1", messageAttributes,
        attributes: { ApproximateReceiveCount: "1", SentTimestamp: String(Date.now()), SenderId: "AIDAEXAMPLE", ApproximateFirstReceiveTimestamp: String(Date.now()) },
      }] } };
    }
    if (cloud === "azure") {
      return { note, event: { body: JSON.parse(message.body), triggerMetadata: {
        deliveryCount: 1, messageId: id, contentType: "application/json", enqueuedTimeUtc: new Date().toISOString(),
        lockToken: "7c8b8a5e-1f0e-4a4b-9d6c-3e2f1a0b9c8d", sequenceNumber: 1, applicationProperties: message.attributes,
      } } };
    }
    const envelope = { message: { data: Buffer.from(message.body).toString("base64"), attributes: message.attributes, messageId: id, publishTime: new Date().toISOString() }, subscription: "projects/bench/subscriptions/inbound-push", deliveryAttempt: 1 };
    return { note, event: { path: "/", headers: { "content-type": "application/json" }, body: JSON.stringify(envelope) } };
  }
  if (cloud === "gcp") return { note: "one due delivery sent", event: { path: "/", headers: { "content-type": "application/json" }, body: "{}" } };
  return { note: "one due delivery sent", event: {} };
}

interface Measured { importMs: number; firstEventMs: number; result: string }
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function coldStart(dir: string, f: BuiltFunction, env: Record<string, string>, event: unknown): Promise<Measured> {
  const spec = join(dir, `${f.cloud}-${f.name}-${++counter}.json`);
  await writeFile(spec, JSON.stringify({ cloud: f.cloud, name: f.name, bundle: join(f.dir, "index.mjs"), event }));
  const { stdout } = await run(process.execPath, [driver, spec], {
    cwd: root, timeout: 60_000,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", NODE_ENV: "production", LOG_LEVEL: "error", ALLOWED_DESTINATIONS: "127.0.0.1", ENCRYPTION_KEYS, ...env },
  });
  return JSON.parse(stdout.trim().split("\n").pop()!) as Measured;
}

/** Largest packages in a bundle, from its esbuild metafile. */
async function topPackages(f: BuiltFunction, n = 5): Promise<string> {
  const meta = JSON.parse(await readFile(join(f.dir, "..", `${f.name}.meta.json`), "utf8")) as { outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }> };
  const by = new Map<string, number>();
  for (const output of Object.values(meta.outputs)) {
    for (const [file, { bytesInOutput }] of Object.entries(output.inputs)) {
      const key = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1] ?? "(our code)";
      by.set(key, (by.get(key) ?? 0) + bytesInOutput);
    }
  }
  return [...by].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${k} ${Math.round(v / 1024)}`).join(", ");
}

/** The baseline commit's functions, built from its own tree (git archive) with this checkout's node_modules. */
async function buildBaseline(commit: string): Promise<BuiltFunction[]> {
  const { stdout } = await run("git", ["rev-parse", "--verify", `${commit}^{commit}`], { cwd: root });
  const sha = stdout.trim();
  if (!/^[0-9a-f]{40}$/.test(sha)) throw new Error(`BENCH_FUNCTIONS_BASELINE=${commit} is not a commit`);
  const dir = join(root, "dist/bench-baseline", sha.slice(0, 12));
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  await run("sh", ["-c", `git archive ${sha} | tar -x -C '${dir}'`], { cwd: root, maxBuffer: 1 << 26 });
  await symlink(join(root, "node_modules"), join(dir, "node_modules"), "dir");
  const { buildFunctions: buildThen } = (await import(pathToFileURL(join(dir, "functions/build.ts")).href)) as { buildFunctions: typeof buildFunctions };
  return buildThen(join(dir, "dist/functions"));
}

interface Case { cloud: BuiltFunction["cloud"]; name: BuiltFunction["name"]; claimCheck: boolean; label: string; env?: Record<string, string> }
/** `base` with `extra` over it; an empty value removes the setting. */
function withEnv(base: Record<string, string>, extra: Record<string, string> = {}): Record<string, string> {
  return Object.fromEntries(Object.entries({ ...base, ...extra }).filter(([, v]) => v !== ""));
}

interface Row { c: Case; note: string; builds: { f: BuiltFunction; runs: Measured[] }[] }

async function main(): Promise<void> {
  if (!(await postgresAvailable())) throw new Error("PostgreSQL is not answering at 127.0.0.1:5432; the bench needs it.");
  console.log("building bundles…");
  // The request-path functions; `migrate` is a deploy step (once per deploy), not on a cold path.
  const onPath = (f: BuiltFunction) => f.name === "ingest" || f.name === "processor" || f.name === "relay";
  const variants = [...(BASELINE ? [(await buildBaseline(BASELINE)).filter(onPath)] : []), (await buildFunctions()).filter(onPath)];

  const database = await createServerDatabase();
  const db: Database = openPostgres({ connectionString: database.url, max: 2 });
  await migrate(db); // the functions' cold start then only checks
  const receiver = await startReceiver();
  await createSubscription(db, { url: `${receiver.url}/bench`, eventTypes: ["bench.*"] });
  const dueDelivery = () => db.transaction((tx) => enqueue(tx, { id: nextId("out"), type: "bench.done", data: { n: counter } }));

  const motoUp = await motoAvailable();
  const pubsubUp = await pubsubEmulatorAvailable();
  const sqs = motoUp ? await createMotoQueuePair(3) : undefined;
  const topics = pubsubUp ? await createEmulatorTopics(5) : undefined;
  const peer = await startServiceBusTestPeer();
  peer.createQueue("bench", { maxDeliveryCount: 3 });
  // The claim-check stores: S3 on moto, Blob on Azurite, Cloud Storage on the test peer.
  const bucket = `bench-claims-${Date.now()}`;
  if (motoUp) await new S3Client({ ...MOTO_CLIENT_CONFIG, forcePathStyle: true }).send(new CreateBucketCommand({ Bucket: bucket }));
  const azurite = await startAzurite();
  await BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient("claim-checks").createIfNotExists();
  // The managed-identity path: Azurite over HTTPS checking bearer tokens, and the identity endpoint's test peer.
  const certDir = await mkdtemp(join(tmpdir(), "bench-functions-tls-"));
  const tls = await makeCertificate(certDir, "IP:127.0.0.1");
  const azuriteTls = await startAzurite({ tls: { certPath: tls.certPath, keyPath: tls.keyPath } });
  const identity = await startManagedIdentityTestPeer();
  {
    const { AccountSASPermissions, generateAccountSASQueryParameters, StorageSharedKeyCredential } = await import("@azure/storage-blob");
    const { request } = await import("node:https");
    const key = /AccountKey=([^;]+)/.exec(azuriteTls.connectionString)![1]!;
    const sas = generateAccountSASQueryParameters({ expiresOn: new Date(Date.now() + 3_600_000), permissions: AccountSASPermissions.parse("c"), services: "b", resourceTypes: "c" }, new StorageSharedKeyCredential("devstoreaccount1", key)).toString();
    await new Promise<void>((resolve, reject) => {
      request(new URL(`${azuriteTls.blobEndpoint}/claim-checks?restype=container&${sas}`), { method: "PUT", headers: { "content-length": "0" }, ca: tls.ca }, (res) => { res.resume(); res.statusCode === 201 ? resolve() : reject(new Error(`container: ${res.statusCode}`)); }).on("error", reject).end();
    });
  }
  const managedIdentity = {
    WEBHOOKS_CLAIM_CHECK_CONNECTION: "", WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL: azuriteTls.blobEndpoint, AZURE_CLIENT_ID: identity.userAssignedClientId,
    ...identity.env, NODE_EXTRA_CA_CERTS: tls.caPath,
  };
  const gcs = await startGcsTestPeer();
  const claimChecks = { MAX_INBOUND_BODY_BYTES: String(16 * 1024 * 1024) };
  // BENCH_FUNCTIONS_ONLY=<text>: only the rows whose label contains it (e.g. "gcp/ingest").
  const only = process.env.BENCH_FUNCTIONS_ONLY;
  const otlp = process.env.BENCH_FUNCTIONS_TELEMETRY ? await startOtlpTestPeer() : undefined;
  const otel = (cloud: BuiltFunction["cloud"]): Record<string, string> => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp!.url, OTEL_SERVICE_NAME: `bench-${cloud}`, OTEL_METRIC_EXPORT_INTERVAL: "100",
    ...(cloud === "aws" ? { OTEL_METRICS_EXPORTER: "awsemf" } : {}),
    // Azure: the stack's exporter (Application Insights'), its ingestion endpoint the peer (which
    // answers 404 to its /v2.1/track: the load and one failed send are measured, not a success).
    ...(cloud === "azure" ? { OTEL_TRACES_EXPORTER: "azure_monitor", OTEL_METRICS_EXPORTER: "azure_monitor", APPLICATIONINSIGHTS_CONNECTION_STRING: `InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=${otlp!.url}/` } : {}),
  });
  const cases: Case[] = variants.at(-1)!.flatMap((f): Case[] => [
    { cloud: f.cloud, name: f.name, claimCheck: false, label: `${f.cloud}/${f.name}` },
    ...(otlp ? [{ cloud: f.cloud, name: f.name, claimCheck: false, label: `${f.cloud}/${f.name} +otel`, env: otel(f.cloud) }] : []),
    ...(f.name === "ingest" ? [{ cloud: f.cloud, name: f.name, claimCheck: true, label: `${f.cloud}/ingest (claim-check)` }] : []),
    ...(f.name === "ingest" && f.cloud === "azure" ? [{ cloud: f.cloud, name: f.name, claimCheck: true, label: "azure/ingest (claim-check, managed identity)", env: managedIdentity }] : []),
  ]);

  const envs: Record<BuiltFunction["cloud"], Record<string, string>> = {
    aws: {
      WEBHOOKS_QUEUE_URL: sqs?.queueUrl ?? `${MOTO_URL}/123456789012/absent`, WEBHOOKS_DEAD_LETTER_QUEUE_URL: sqs?.deadLetterQueueUrl ?? "",
      WEBHOOKS_PARTNERS: PARTNERS_JSON, WEBHOOKS_DATABASE_URL: database.url, WEBHOOKS_DATABASE_TLS: "disable",
      AWS_ENDPOINT_URL: MOTO_URL, AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: MOTO_CLIENT_CONFIG.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: MOTO_CLIENT_CONFIG.credentials.secretAccessKey,
      WEBHOOKS_CLAIM_CHECK_BUCKET: bucket, ...claimChecks,
    },
    azure: {
      WEBHOOKS_QUEUE_NAME: "bench", ServiceBusConnection: peer.connectionString, PARTNERS: PARTNERS_JSON, DATABASE_URL: database.url, WEBHOOKS_DATABASE_TLS: "disable",
      WEBHOOKS_CLAIM_CHECK_CONNECTION: azurite.connectionString, ...claimChecks,
    },
    gcp: {
      GOOGLE_CLOUD_PROJECT: topics?.projectId ?? "bench", WEBHOOKS_TOPIC: topics?.topic ?? "absent", PARTNERS: PARTNERS_JSON,
      DATABASE_URL: database.url, WEBHOOKS_DATABASE_TLS: "disable", PUBSUB_EMULATOR_HOST,
      WEBHOOKS_CLAIM_CHECK_BUCKET: "bench-claims", WEBHOOKS_STORAGE_API_ENDPOINT: gcs.endpoint, ...claimChecks,
    },
  };
  const queueUp = { aws: motoUp, azure: true, gcp: pubsubUp };

  const dir = await mkdtemp(join(tmpdir(), "bench-functions-"));
  const rows: Row[] = [];
  const reference: Measured[] = [];
  const loadBefore = loadavg()[0]!;
  try {
    for (let i = 0; i < RUNS; i++) {
      reference.push(await coldStart(dir, { cloud: "reference" as BuiltFunction["cloud"], name: "ingest", dir: root, bytes: 0, loadedBytes: 0 }, { DATABASE_URL: database.url }, {}));
    }
    for (const c of cases.filter((x) => !only || x.label.includes(only))) {
      const builds = variants.map((v) => ({ f: v.find((f) => f.cloud === c.cloud && f.name === c.name)!, runs: [] as Measured[] }));
      let note = "";
      // Runs alternate between the builds: both see the same moments of the machine's load.
      for (let i = 0; i < RUNS; i++) {
        for (const b of builds) {
          if (c.name === "relay") await dueDelivery();
          const { event, note: n } = eventFor(c.cloud, c.name, queueUp[c.cloud], c.claimCheck);
          note = n;
          b.runs.push(await coldStart(dir, b.f, withEnv(envs[c.cloud], c.env), event));
        }
      }
      rows.push({ c, note, builds });
      process.stdout.write(".");
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
    await peer.close();
    await sqs?.remove();
    await topics?.remove();
    await azurite.stop();
    await azuriteTls.stop();
    await identity.close();
    await rm(certDir, { recursive: true, force: true });
    await gcs.close();
    await otlp?.close();
    await receiver.close();
    await db.close();
    await database.drop();
  }

  const both = variants.length > 1;
  const pair = (values: string[]) => values.join(" → ");
  console.log(`\n\nCloud function bundles: size, and a cold start in a fresh Node ${process.version} process (median of ${RUNS})`);
  if (both) console.log(`before: ${BASELINE}'s functions; after: this checkout's (each cell: before → after; runs alternate)`);
  console.log(`targets: at import < ${IMPORT_TARGET_KIB} KiB, all chunks < ${SIZE_TARGET_KIB} KiB minified; first event < ${FIRST_EVENT_TARGET_MS} ms\n`);
  const header = ["function", "bundle KiB", "at import KiB", "import ms", "first event ms", ...(both ? ["first event after/before"] : []), "answer", "first event"];
  const lines = rows.map(({ c, note, builds }) => {
    const kib = builds.map(({ f }) => Math.round(f.bytes / 1024));
    const firsts = builds.map(({ runs }) => median(runs.map((r) => r.firstEventMs)));
    return [
      c.label,
      pair(kib.map((k) => `${k}${k > SIZE_TARGET_KIB ? " !" : ""}`)),
      pair(builds.map(({ f }) => { const k = Math.round(f.loadedBytes / 1024); return `${k}${k > IMPORT_TARGET_KIB ? " !" : ""}`; })),
      pair(builds.map(({ runs }) => median(runs.map((r) => r.importMs)).toFixed(0))),
      pair(firsts.map((first) => `${first.toFixed(0)}${first > FIRST_EVENT_TARGET_MS ? " !" : ""}`)),
      ...(both ? [`${(firsts[1]! / firsts[0]!).toFixed(1)}×`] : []),
      builds.at(-1)!.runs.map((r) => r.result).join("/"),
      note,
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  console.log(fmt(header));
  console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
  for (const l of lines) console.log(fmt(l));
  const ref = ["reference: pg only", "-", "-", median(reference.map((r) => r.importMs)).toFixed(0), median(reference.map((r) => r.firstEventMs)).toFixed(0), ...(both ? ["-"] : []), "SELECT 1", "import pg; connect; SELECT 1"];
  console.log(fmt(ref));
  if (otlp) console.log(`\nOpenTelemetry on (+otel rows): the test peer received ${otlp.spans.length} spans and ${otlp.metrics.length} metric points.`);
  console.log(`\nload average (1 min) ${loadBefore.toFixed(1)} before, ${loadavg()[0]!.toFixed(1)} after, on ${cpus().length} CPUs: compare the functions with the reference row of the same run.`);
  console.log("\n! = over target. GCP bundles leave the Functions Framework (and nothing else) to the buildpack's npm install (see functions/build.ts); their import time includes loading it.");
  console.log("\nLargest packages per bundle (KiB, from the esbuild metafile; this checkout's build):");
  for (const { f } of rows.filter((r) => !r.c.claimCheck).map((r) => r.builds.at(-1)!)) console.log(`  ${`${f.cloud}/${f.name}`.padEnd(16)} ${await topPackages(f)}`);
}

runBench("bench:functions", main);
