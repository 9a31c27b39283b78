/**
 * Must-show 1, GCP: the synthesized stack (`cdk.tf.json` from the real bundles) and the functions
 * fit together. Each Cloud Run function's bundle runs in its own Node 22 process under the
 * Functions Framework with `--target=<entry_point>` from the stack and exactly the environment the
 * stack gives it: its plain settings and its Secret Manager settings, every `${…}` reference
 * resolved to a local stand-in (an unknown reference fails the test):
 * - the Cloud SQL instance → the TLS-only PostgreSQL (test/wiring/support/tlsPostgres.ts); its
 *   private IP → 127.0.0.1, which the server certificate does not name (verify-full fails there,
 *   verify-ca passes); its server CA → the private CA's PEM; the URL's fixed Cloud SQL port 5432 →
 *   the stand-in's port (the one value rewritten, checked to be 5432 first);
 * - the passwords → what `TF_VAR_db_admin_password` / `TF_VAR_db_app_password` would hold;
 * - Secret Manager → each secret's first version as Terraform writes it, except the two the
 *   operator fills (`gcloud secrets versions add`): partners and the alert signing secret;
 * - Pub/Sub → the emulator, with the stack's project, topic and subscription names;
 *   Cloud Storage → the test peer (test/support/gcsTestPeer.ts), through
 *   `WEBHOOKS_STORAGE_API_ENDPOINT`; `PUBSUB_EMULATOR_HOST` likewise: both are test-only settings.
 * Added for the test only: ALLOWED_DESTINATIONS=127.0.0.1 on the relay and the management function
 * (its receivers are local), and ALERT_WEBHOOK_URL pointed at the local alert receiver (the stack
 * requires https). The admin token and ENCRYPTION_KEYS, whose first versions the stack generates
 * (write-only), are what `terraform console` evaluates their expressions to.
 *
 * Migrate runs first, as the deploy does; then each function is driven as Google would: ingest by
 * an HTTP POST (as API Gateway forwards it), the processor by Pub/Sub push envelopes pulled from
 * the stack's subscription, the relay and migrate by Cloud Scheduler's POST. A setting name, TLS
 * mode, role or entry point on which the stack and the bundle disagree fails here.
 *
 * What this cannot reproduce: IAM (run.invoker, secret accessors, topic publishers are not
 * evaluated), OIDC verification (the bearer tokens sent are unsigned stand-ins that only Cloud Run
 * would check), API Gateway (its OpenAPI routing and 32 MB limit), the VPC connector and Cloud NAT
 * (everything is on loopback), Cloud Scheduler's and Pub/Sub's own retries and backoff, and Cloud
 * Build's `npm install` (the framework is linked from this repository's node_modules).
 */
import { mkdirSync, mkdtempSync, symlinkSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import type { TerraformJson } from "../../stacks/app.js";
import { block, resourceAt, resourcesOf, type SynthResource } from "../../stacks/terraformJson.js";
import { createSubscription, enqueue } from "../../shared/outbound/index.js";
import { openPostgres } from "../../shared/db/postgres.js";
import type { Database } from "../../shared/db/port.js";
import { createPubSubQueue } from "../../shared/queue/pubsub.js";
import type { QueueAdapter } from "../../shared/queue/port.js";
import { PUBSUB_EMULATOR_HOST, pubsubEmulatorAvailable, skipUnlessAvailable } from "../support/emulators.js";
import { startGcsTestPeer, type GcsTestPeer } from "../support/gcsTestPeer.js";
import { startReceiver, type Receiver } from "../outbound/support/receiver.js";
import { eventually, inboxEntry, orderEvent, orderState, PARTNERS_JSON, signedDelivery } from "../functions/support.js";
import { buildFunctions } from "../../functions/build.js";
import { githubPush, SENDER_PARTNERS, stripeInvoiceEvent, writeSenderHandlers } from "../inbound/support/realSenders.js";
import { BUNDLED_HANDLERS, synthBuilt, type BuiltStack } from "./support/builtStacks.js";
import { deployGuideSequence, outboundCausedBy } from "./support/deployGuide.js";
import { inlineMessage } from "../../shared/cloud/inboundMessage.js";
import { poisonEvent } from "../functions/support.js";
import { expectRealtime, FORWARD_PARTNER, inboxRetryScenario, ONE_DRAIN, realtimeScenario, SCALED_ATTEMPT_TIMEOUT, scaled, startRealtimeReceiver, wakeScenario, type RealtimeReceiver } from "./support/realtime.js";
import { startFunctionProcess, type FunctionProcess } from "./support/functionProcess.js";
import { wiringTeardown } from "./support/teardown.js";
import { skipUnlessNode22 } from "./support/node22.js";
import { parseReference, resolveRefs, type RefResolver } from "./support/terraformRefs.js";
import { startTlsPostgres, tlsPostgresUnavailable, type TlsPostgres } from "./support/tlsPostgres.js";
import { answer, managementScenario, type ManagementCall } from "./support/managementScenario.js";
import { generatedValue } from "./support/generatedSecrets.js";

const DRIVER = fileURLToPath(new URL("./drivers/gcp.mjs", import.meta.url));
const REPO = fileURLToPath(new URL("../..", import.meta.url));
const APP_PASSWORD = "wiring-app-password-0123456789";
const ALERT_SECRET = `whsec_${Buffer.from("gcp-wiring-alert-signing-secret!").toString("base64")}`;
const PARTNER_RECEIVER_SECRET = `whsec_${Buffer.from("gcp-wiring-receiver-secret-0001").toString("base64")}`;
/** What Cloud Run would check and nothing here does: the shape of an OIDC bearer token, unsigned. */
const bearer = (audience: string, email: string) => {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
  return `Bearer ${part({ alg: "RS256", typ: "JWT" })}.${part({ iss: "https://accounts.google.com", aud: audience, email, exp: Math.floor(Date.now() / 1000) + 3600 })}.unsigned-stand-in`;
};

let skip: string | undefined;
let stack: BuiltStack;
let json: TerraformJson;
let db: TlsPostgres;
let owner: Database;
let gcs: GcsTestPeer;
let alerts: Receiver;
let partner: Receiver;
let processorSub: QueueAdapter;
/** The stack's GOOGLE_CLOUD_PROJECT, which the emulator's topics live under. */
let project: string;
let realtime: RealtimeReceiver;
let removeTopics: (() => Promise<void>) | undefined;
const { processes: running, closers } = wiringTeardown();
const url: Record<string, string> = {};

/** A function resource by the name of the bundle it runs (`hooktest-processor` → processor). */
const fnResource = (name: string): SynthResource => {
  const found = resourcesOf(json, "google_cloudfunctions2_function").filter((r) => r.body.name === `hooktest-${name}`);
  expect(found, `one function named hooktest-${name}`).toHaveLength(1);
  return found[0]!;
};
const body = (type: string, name: string) => (json.resource as Record<string, Record<string, Record<string, unknown>>>)[type]?.[name];

/** Every reference the functions' settings may hold, resolved to this test's stand-ins. */
function resolver(): RefResolver {
  const variables: Record<string, string> = { db_app_password: APP_PASSWORD, db_admin_password: db.adminPassword };
  return (expression) => {
    const call = /^urlencode\(var\.(\w+)\)$/.exec(expression.trim());
    if (call) return variables[call[1]!] === undefined ? undefined : encodeURIComponent(variables[call[1]!]!);
    const ref = parseReference(expression);
    if (!ref) return undefined;
    const path = ref.path.join(".");
    if (ref.type === "google_sql_database_instance" && path === "private_ip_address") return "127.0.0.1";
    if (ref.type === "google_sql_database_instance" && path === "server_ca_cert.0.cert") return db.caPem;
    if (ref.type === "google_cloudfunctions2_function" && path === "service_config.0.uri") return url[String(body(ref.type, ref.name)?.name)];
    // An argument the stack itself set to a plain value (a topic's, bucket's or database's name, a secret id).
    const literal = body(ref.type, ref.name)?.[path];
    return typeof literal === "string" && !literal.includes("${") ? literal : undefined;
  };
}

/** Secret Manager as a deploy leaves it: Terraform's first versions, and what the operator adds. */
function secretValue(secretId: string): string {
  const operatorFilled: Record<string, string> = {
    // The test partner, plus GitHub and Stripe for the handler module block (issue 16).
    "hooktest-partner-signing-secrets": JSON.stringify({ ...JSON.parse(PARTNERS_JSON), ...SENDER_PARTNERS, ...realtime.partners() }),
    "hooktest-alert-webhook-secret": ALERT_SECRET,
  };
  if (operatorFilled[secretId]) return operatorFilled[secretId]!;
  const secret = resourcesOf(json, "google_secret_manager_secret").find((s) => s.body.secret_id === secretId);
  if (!secret) throw new Error(`no Secret Manager secret ${secretId} in the stack`);
  const version = resourcesOf(json, "google_secret_manager_secret_version").find((v) => String(v.body.secret).includes(`${secret.type}.${secret.name}.id`));
  if (!version) throw new Error(`the secret ${secretId} has no version in the stack: the function would not deploy`);
  if (version.body.secret_data_wo !== undefined) return generatedSecret(secretId, String(version.body.secret_data_wo));
  return resolveRefs(String(version.body.secret_data), resolver(), `${secretId}'s version`);
}

/**
 * A first version the stack generates (write-only): what Terraform evaluates its expression to, once
 * per secret. The rows this test writes itself are under the test suite's key: the keys secret holds
 * it after the stack's, as a rotation would (the first encrypts).
 */
const generatedSecrets = new Map<string, string>();
function generatedSecret(secretId: string, expression: string): string {
  if (!generatedSecrets.has(secretId)) {
    const value = generatedValue(expression);
    generatedSecrets.set(secretId, secretId.endsWith("-encryption-keys") ? `${value},${process.env.ENCRYPTION_KEYS}` : value);
  }
  return generatedSecrets.get(secretId)!;
}

/** The Cloud SQL URL points at the private IP's port 5432; the stand-in listens elsewhere. */
function toStandInPort(value: string): string {
  if (!value.startsWith("postgres://")) return value;
  const parsed = new URL(value);
  expect(parsed.port, "Cloud SQL listens on 5432").toBe("5432");
  parsed.port = String(db.port);
  return parsed.toString();
}

/** Exactly what Cloud Run gives the function: its settings, its secrets, and Cloud Run's own variables. */
function environmentOf(name: string, extra: Record<string, string> = {}): { env: Record<string, string>; entryPoint: string } {
  const fn = fnResource(name);
  const service = block(fn.body.service_config);
  const entryPoint = String(block(fn.body.build_config).entry_point);
  const plain = resolveRefs((service.environment_variables ?? {}) as Record<string, string>, resolver(), `${name}'s environment_variables`);
  const secrets: Record<string, string> = {};
  for (const s of (service.secret_environment_variables ?? []) as { key: string; secret: string; version: string; project_id: string }[]) {
    expect(s.version, `${name}'s ${s.key} follows the latest version`).toBe("latest");
    expect(s.project_id).toBe(plain.GOOGLE_CLOUD_PROJECT);
    secrets[s.key] = toStandInPort(secretValue(resolveRefs(s.secret, resolver(), `${name}'s ${s.key}`)));
  }
  const env = {
    ...plain,
    ...secrets,
    // Set by Cloud Run functions on every instance.
    K_SERVICE: String(fn.body.name),
    FUNCTION_TARGET: entryPoint,
    FUNCTION_SIGNATURE_TYPE: "http",
    // The stand-ins for Google's APIs (test-only settings).
    PUBSUB_EMULATOR_HOST,
    WEBHOOKS_STORAGE_API_ENDPOINT: gcs.endpoint,
    ...extra,
  };
  return { env, entryPoint };
}

async function start(name: string, extra: Record<string, string> = {}): Promise<{ fp: FunctionProcess; url: string }> {
  const { env, entryPoint } = environmentOf(name, extra);
  const fp = await startFunctionProcess({ driver: DRIVER, bundleDir: stack.bundleDir(name), env, args: [entryPoint] });
  running.push(fp);
  const { url: base } = await fp.invoke<{ url: string }>("url");
  return { fp, url: base };
}

/** As Cloud Scheduler calls its target: POST with an OIDC token of the scheduler account. */
async function schedulerTick(name: string, jobPath: string) {
  const job = resourceAt(json, "google_cloud_scheduler_job", jobPath).body;
  const target = block(job.http_target);
  expect(target.http_method).toBe("POST");
  expect(String(target.uri)).toContain(`${fnResource(name).type}.${fnResource(name).name}.service_config[0].uri`);
  const r = await fetch(url[`hooktest-${name}`]!, { method: "POST", headers: { authorization: bearer(url[`hooktest-${name}`]!, "scheduler"), "user-agent": "Google-Cloud-Scheduler" } });
  return { status: r.status, body: await r.json() as Record<string, unknown> };
}

/** Pulls the next message of the push subscription and POSTs it to the processor as Pub/Sub push does; acks on 2xx. */
async function pushNext(eventId: string): Promise<number> {
  const sub = resourceAt(json, "google_pubsub_subscription", "queue/push").body;
  const message = await eventually(`the message of ${eventId} on the subscription`, async () => {
    const got = await processorSub.receive({ visibilitySeconds: 60, waitSeconds: 1, max: 10 });
    const mine = got.find((m) => m.attributes.eventId === eventId);
    for (const other of got.filter((m) => m !== mine)) await processorSub.ack(other);
    return mine;
  });
  const processorUrl = url["hooktest-processor"]!;
  const r = await fetch(`${processorUrl}/`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: bearer(processorUrl, "push"), "user-agent": "APIs-Google; (+https://developers.google.com/webmasters/APIs-Google.html)" },
    body: JSON.stringify({
      message: { data: Buffer.from(message.body).toString("base64"), attributes: message.attributes, messageId: message.id, publishTime: new Date().toISOString() },
      subscription: `projects/${project}/subscriptions/${String(sub.name)}`,
      deliveryAttempt: message.deliveryCount,
    }),
  });
  if (r.ok) await processorSub.ack(message);
  return r.status;
}

/** The stack's topics and subscriptions on the emulator, under the stack's project. */
async function createTopology(): Promise<() => Promise<void>> {
  const { PubSub } = await import("@google-cloud/pubsub");
  project = String(environmentOf("ingest").env.GOOGLE_CLOUD_PROJECT);
  const pubsub = new PubSub({ projectId: project, apiEndpoint: PUBSUB_EMULATOR_HOST, emulatorMode: true, universeDomain: "googleapis.com" });
  const topicBody = resourceAt(json, "google_pubsub_topic", "queue/topic").body;
  const dlqBody = resourceAt(json, "google_pubsub_topic", "queue/dlq-topic").body;
  const pushBody = resourceAt(json, "google_pubsub_subscription", "queue/push").body;
  const dlqSubBody = resourceAt(json, "google_pubsub_subscription", "queue/dlq-pull").body;
  const names = [pushBody.name, dlqSubBody.name].map(String);
  for (const n of names) await pubsub.subscription(n).delete().catch(() => {});
  for (const n of [topicBody.name, dlqBody.name].map(String)) await pubsub.topic(n).delete().catch(() => {});
  const [topic] = await pubsub.createTopic(String(topicBody.name));
  const [dlq] = await pubsub.createTopic(String(dlqBody.name));
  await dlq.createSubscription(String(dlqSubBody.name), { ackDeadlineSeconds: 10 });
  // Pulled by the test, which plays the push (the emulator's push sends no OIDC token).
  await topic.createSubscription(String(pushBody.name), {
    ackDeadlineSeconds: Number(pushBody.ack_deadline_seconds),
    deadLetterPolicy: { deadLetterTopic: dlq.name, maxDeliveryAttempts: Number(block(pushBody.dead_letter_policy).max_delivery_attempts) },
  });
  processorSub = await createPubSubQueue({ projectId: project, topic: String(topicBody.name), subscription: String(pushBody.name), deadLetterTopic: String(dlqBody.name), deadLetterSubscription: String(dlqSubBody.name) });
  return async () => {
    await processorSub?.close();
    for (const n of names) await pubsub.subscription(n).delete().catch(() => {});
    for (const n of [topicBody.name, dlqBody.name].map(String)) await pubsub.topic(n).delete().catch(() => {});
    await pubsub.close();
  };
}

beforeAll(async () => {
  skip = (await skipUnlessNode22()) ?? (await skipUnlessAvailable("the Pub/Sub emulator", PUBSUB_EMULATOR_HOST, pubsubEmulatorAvailable));
  const noDb = tlsPostgresUnavailable();
  if (!skip && noDb) {
    if (process.env.CI && process.env.CI !== "false") throw new Error(`${noDb}. CI must run the wiring tests.`);
    console.warn(`\n!!! ${noDb}: the GCP wiring test is SKIPPED.\n`);
    skip = noDb;
  }
  if (skip) return;
  process.env.PUBSUB_EMULATOR_HOST ??= PUBSUB_EMULATOR_HOST;
  [stack, db, gcs, alerts, partner] = await Promise.all([
    synthBuilt("gcp", { alertWebhookUrl: "https://alerts.example.com/webhooks-gcp" }),
    startTlsPostgres(),
    startGcsTestPeer(),
    startReceiver(() => ({ status: 204 })),
    startReceiver((r) => ({ status: r.body.includes("doomed") ? 400 : 204 })),
  ]);
  closers.push(() => db.stop(), () => gcs.close(), () => alerts.close(), () => partner.close());
  realtime = await startRealtimeReceiver();
  closers.push(realtime.close);
  json = stack.json;
  owner = openPostgres({ connectionString: db.adminUrl, ssl: db.ssl, max: 2 });
  closers.push(() => owner.close());
  // What Cloud Build's `npm install` would put next to each bundle: the framework it names.
  for (const fn of ["ingest", "processor", "relay", "migrate", "management"]) {
    const link = join(stack.bundleDir(fn), "node_modules/@google-cloud/functions-framework");
    if (existsSync(link)) continue;
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(join(REPO, "node_modules/@google-cloud/functions-framework"), link, "dir");
  }
  removeTopics = await createTopology();
  closers.push(removeTopics);
}, 300_000);


describe("GCP wiring: the synthesized stack and the real bundles on Node 22", () => {
  it("migrate runs first, as the deploy does: migrations as the owner, the role the other functions dial", async (t) => {
    if (skip) return t.skip();
    const migrate = await start("migrate");
    url["hooktest-migrate"] = migrate.url;
    expect(migrate.fp.version).toMatch(/^v22\./);
    const answer = await schedulerTick("migrate", "migrate/job");
    expect(answer, migrate.fp.output()).toMatchObject({ status: 200, body: { appRole: "webhooks_app", roleCreated: true } });
    expect((answer.body.applied as string[]).length).toBeGreaterThan(0);
    // Every other function's DATABASE_URL names that role, and none holds the owner's URL.
    for (const name of ["processor", "relay"]) {
      const { env } = environmentOf(name);
      expect(new URL(env.DATABASE_URL!).username).toBe("webhooks_app");
      expect(env.DATABASE_ADMIN_URL).toBeUndefined();
    }
    expect(environmentOf("migrate").env.DATABASE_ADMIN_URL).toMatch(/^postgres:\/\/webhooks_admin:/);
  }, 120_000);

  it("a signed inbound event → ingest → Pub/Sub → a push to the processor → inbox processed, as webhooks_app over verify-ca", async (t) => {
    if (skip) return t.skip();
    const [ingest, processor] = await Promise.all([start("ingest"), start("processor")]);
    url["hooktest-ingest"] = ingest.url;
    url["hooktest-processor"] = processor.url;
    const eventId = `evt_wiring_gcp_${Date.now()}`;
    const delivery = signedDelivery(eventId, orderEvent("o-wiring-gcp", "order.created"));
    // API Gateway appends the path to the backend address (APPEND_PATH_TO_ADDRESS) and signs in as its account.
    const r = await fetch(`${ingest.url}/webhooks/shop`, { method: "POST", headers: { ...delivery.headers, authorization: bearer(ingest.url, "gateway") }, body: delivery.body });
    expect(r.status, ingest.fp.output()).toBe(202);
    expect(await pushNext(eventId), processor.fp.output()).toBe(204);
    expect(await inboxEntry(owner, eventId)).toMatchObject({ status: "processed", outcome: "applied" });
    expect(await orderState(owner, "o-wiring-gcp")).toBe("created");
    // The processor's pool is still open: its sessions are the application role's, over TLS.
    const su = db.superuser();
    await su.connect();
    try {
      const sessions = await su.query<{ ssl: boolean }>("SELECT s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.usename = 'webhooks_app'");
      expect(sessions.rows.length).toBeGreaterThan(0);
      expect(sessions.rows.every((row) => row.ssl)).toBe(true);
    } finally {
      await su.end();
    }
  }, 120_000);

  it("a body over one publish goes by claim-check: ingest writes the stack's bucket, the processor reads it", async (t) => {
    if (skip) return t.skip();
    const eventId = `evt_wiring_gcp_big_${Date.now()}`;
    const big = orderEvent("o-wiring-gcp-big", "order.created", { note: "x".repeat(8 * 1024 * 1024) });
    const delivery = signedDelivery(eventId, big);
    const r = await fetch(`${url["hooktest-ingest"]}/webhooks/shop`, { method: "POST", headers: delivery.headers, body: delivery.body });
    expect(await r.json()).toMatchObject({ claimCheck: true });
    const bucket = String(resourceAt(json, "google_storage_bucket", "claim-checks/bucket").body.name);
    expect([...gcs.objects.keys()].some((k) => k.startsWith(`${bucket}/`))).toBe(true);
    expect(await pushNext(eventId)).toBe(204);
    expect(await inboxEntry(owner, eventId)).toMatchObject({ status: "processed" });
  }, 120_000);

  it("a message the processor gives up on reaches the stack's dead-letter subscription with its reason", async (t) => {
    if (skip) return t.skip();
    await processorSub.send({ body: "not an inbound message", attributes: { eventId: "evt_wiring_gcp_malformed" } });
    expect(await pushNext("evt_wiring_gcp_malformed")).toBe(204);
    const dead = await eventually("the dead letter", async () => {
      const got = (await processorSub.receiveDeadLetters({ waitSeconds: 1 })).filter((m) => m.attributes.eventId === "evt_wiring_gcp_malformed");
      return got.length > 0 && got;
    });
    expect(dead[0]!.reason).not.toMatch(/max delivery attempts/);
    for (const m of dead) await processorSub.ackDeadLetter(m);
  }, 60_000);

  it("an outbox event → the relay on a scheduler tick → delivered, with a Standard Webhooks signature the receiver verifies", async (t) => {
    if (skip) return t.skip();
    const relay = await start("relay", {
      ALLOWED_DESTINATIONS: "127.0.0.1",
      ALERT_WEBHOOK_URL: `${alerts.url}/alerts`,
      ...ONE_DRAIN,
    });
    url["hooktest-relay"] = relay.url;
    expect(environmentOf("relay").env.ALERT_WEBHOOK_URL).toBe("https://alerts.example.com/webhooks-gcp");
    const sub = await createSubscription(owner, { url: `${partner.url}/hooks`, eventTypes: ["invoice.*"], secrets: [PARTNER_RECEIVER_SECRET] });
    const eventId = `evt_wiring_gcp_out_${Date.now()}`;
    await owner.transaction((tx) => enqueue(tx, { id: eventId, type: "invoice.paid", data: { invoice: 7 } }));
    const tick = await schedulerTick("relay", "relay/job");
    expect(tick.status, relay.fp.output()).toBe(200);
    const got = partner.received.find((x) => x.webhookId === `${eventId}:${sub.id}`);
    expect(got, relay.fp.output()).toBeDefined();
    const verified = new Webhook(PARTNER_RECEIVER_SECRET).verify(got!.body, got!.headers as Record<string, string>) as { type: string };
    expect(verified.type).toBe("invoice.paid");
  }, 120_000);

  it("an outbound dead letter → an alert delivered to ALERT_WEBHOOK_URL, signed with the secret from Secret Manager", async (t) => {
    if (skip) return t.skip();
    await createSubscription(owner, { url: `${partner.url}/broken`, eventTypes: ["doomed.*"], maxAttempts: 1 });
    await owner.transaction((tx) => enqueue(tx, { id: `doomed_${Date.now()}`, type: "doomed.event", data: { n: 1 } }));
    const tick = await schedulerTick("relay", "relay/job");
    expect(tick.body).toMatchObject({ alertsRaised: expect.any(Number) });
    const alert = await eventually("the alert", async () => alerts.received.find((r) => JSON.parse(r.body).type === "alert.dead_letter"));
    const verified = new Webhook(ALERT_SECRET).verify(alert.body, alert.headers as Record<string, string>) as { data: { attempts: number } };
    expect(verified.data.attempts).toBe(1);
  }, 120_000);

  it("Must-show 3: docs/deploy-gcp.md's first delivered webhook as written: the handler module of its build, its subscription, its signed partner event → the outbound event it causes, delivered", async (t) => {
    if (skip) return t.skip();
    const guide = deployGuideSequence("gcp");
    expect(guide.handlersModule).toBe(BUNDLED_HANDLERS);
    const sub = await createSubscription(owner, { url: `${partner.url}/guide`, eventTypes: [guide.subscribedPattern], secrets: [PARTNER_RECEIVER_SECRET] });
    const id = `msg_guide_${Date.now()}`;
    const delivery = signedDelivery(id, guide.inboundBody);
    const r = await fetch(`${url["hooktest-ingest"]}/webhooks/${guide.partner}`, { method: "POST", headers: { ...delivery.headers, authorization: bearer(url["hooktest-ingest"]!, "gateway") }, body: delivery.body });
    expect(r.status).toBe(202);
    expect(await pushNext(id)).toBe(204);
    // Applied by the bundled order domain, not `ignored` as a build without handlers leaves it.
    expect(await inboxEntry(owner, id, guide.partner)).toMatchObject({ status: "processed", outcome: "applied" });
    const tick = await schedulerTick("relay", "relay/job");
    expect(tick.status).toBe(200);
    const got = partner.received.filter((x) => x.webhookId.endsWith(`:${sub.id}`));
    expect(got).toHaveLength(1);
    const verified = new Webhook(PARTNER_RECEIVER_SECRET).verify(got[0]!.body, got[0]!.headers as Record<string, string>);
    expect(verified).toMatchObject(outboundCausedBy(guide));
  }, 120_000);

  it("the TLS mode is the one that works here: the processor told verify-full refuses the certificate that names no IP", async (t) => {
    if (skip) return t.skip();
    const strict = await start("processor", { WEBHOOKS_DATABASE_TLS: "verify-full" });
    const r = await fetch(`${strict.url}/`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ subscription: "projects/p/subscriptions/s", message: { messageId: "m-strict", data: Buffer.from("{}").toString("base64") } }),
    });
    expect(r.status).toBe(500);
    // The function's log is written asynchronously (pino): it may trail the answer.
    await expect.poll(() => strict.fp.output(), { timeout: 10_000 }).toMatch(/IP: 127\.0\.0\.1 is not in the cert's list|altnames/i);
  }, 60_000);

  it("starts each function with the stack's entry point: a wrong one does not serve", async (t) => {
    if (skip) return t.skip();
    const { env } = environmentOf("ingest");
    await expect(startFunctionProcess({ driver: DRIVER, bundleDir: stack.bundleDir("ingest"), env, args: ["processor"] }))
      .rejects.toThrow(/exited|Could not load|not listen/);
  }, 60_000);
});

describe("GCP wiring: the stack's functions are the five bundles", () => {
  it("has no function this test does not start", (t) => {
    if (skip) return t.skip();
    expect(resourcesOf(json, "google_cloudfunctions2_function").map((f) => f.body.name).sort()).toEqual(["hooktest-ingest", "hooktest-management", "hooktest-migrate", "hooktest-processor", "hooktest-relay"]);
  });
});

describe("GCP wiring: a user's handler module outside the repository, bundled into the processor (issue 16)", () => {
  it("a GitHub push (octokit-signed) and Stripe events (stripe SDK test header): ingest → Pub/Sub → a push to the processor built with INBOUND_HANDLERS", async (t) => {
    if (skip) return t.skip();
    const dir = mkdtempSync(join(tmpdir(), "wiring-gcp-handlers-"));
    await buildFunctions(dir, { inboundHandlers: writeSenderHandlers() });
    const bundleDir = join(dir, "gcp", "processor");
    // What Cloud Build's `npm install` would put next to the bundle, as for the stack's own.
    mkdirSync(join(bundleDir, "node_modules/@google-cloud"), { recursive: true });
    symlinkSync(join(REPO, "node_modules/@google-cloud/functions-framework"), join(bundleDir, "node_modules/@google-cloud/functions-framework"), "dir");
    const { env, entryPoint } = environmentOf("processor");
    const fp = await startFunctionProcess({ driver: DRIVER, bundleDir, env, args: [entryPoint] });
    running.push(fp);
    const standard = url["hooktest-processor"];
    url["hooktest-processor"] = (await fp.invoke<{ url: string }>("url")).url;
    try {
      const push = await githubPush();
      const invoice = `in_wiring_gcp_${Date.now()}`;
      const paid = stripeInvoiceEvent("invoice.paid", invoice);
      const created = stripeInvoiceEvent("invoice.created", invoice);
      for (const [partner, request, id] of [["github", push, push.delivery], ["stripe", created, created.eventId], ["stripe", paid, paid.eventId]] as const) {
        const r = await fetch(`${url["hooktest-ingest"]}/webhooks/${partner}`, { method: "POST", headers: request.headers, body: request.body });
        expect(r.status, await r.text()).toBe(202);
        expect(await pushNext(id), fp.output().slice(-3000)).toBe(204);
      }
      const state = await owner.query<{ state: string }>("SELECT state FROM inbound_entities WHERE machine = 'invoice' AND entity_id = $1", [invoice]);
      expect(state.rows[0]?.state).toBe("paid");
      const entry = async (partner: string, id: string) =>
        (await owner.query("SELECT status, outcome, event_type FROM inbox_entries WHERE partner_name = $1 AND partner_event_id = $2", [partner, id])).rows[0];
      expect(await entry("stripe", paid.eventId)).toMatchObject({ status: "processed", outcome: "applied", event_type: "invoice.paid" });
      expect(await entry("github", push.delivery)).toMatchObject({ status: "processed", outcome: "applied", event_type: "push" });
      const pushed = await owner.query<{ type: string }>("SELECT type FROM outbound_events WHERE id = $1", [`gh-${push.delivery}`]);
      expect(pushed.rows[0]?.type).toBe("repo.pushed");
    } finally {
      url["hooktest-processor"] = standard!;
    }
  }, 180_000);
});

/**
 * One request as API Gateway forwards it on `/api/{path=**}` (APPEND_PATH_TO_ADDRESS): the path
 * appended to the function's URL, the gateway's own identity token in `Authorization`, the caller's
 * `Authorization` moved to `X-Forwarded-Authorization` (so "no token" is a request carrying only
 * the gateway's: it must be refused).
 */
const callManagement = (managementUrl: string): ManagementCall => async (method, path, options = {}) => {
  const prefix = new URL(String(json.output!.management_url!.value).replace(/^https:\/\/\$\{[^}]+\}/, "https://gateway.example")).pathname;
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = {
    authorization: bearer(managementUrl, "gateway"),
    ...(options.token ? { "x-forwarded-authorization": `Bearer ${options.token}` } : {}),
    ...(body ? { "content-type": "application/json" } : {}),
  };
  const r = await fetch(`${managementUrl}${prefix}${path}`, { method, headers, body });
  return answer(r.status, Object.fromEntries(r.headers), await r.text());
};


describe("GCP wiring: issue 13: the management function behind API Gateway", () => {
  it("routes /api/{path=**}, every method, to the management function in the gateway's document", (t) => {
    if (skip) return t.skip();
    const doc = String(block(block(resourcesOf(json, "google_api_gateway_api_config")[0]!.body.openapi_documents).document).contents);
    const management = fnResource("management");
    expect(doc).toContain(`${management.type}.${management.name}.service_config[0].uri`);
    expect(doc).toMatch(/"\/api\/\{path=\*\*\}"/);
  });

  it("with the token from Secret Manager (as X-Forwarded-Authorization): 401 for a wrong one; create a subscription, send an event, see it delivered, replay a dead letter; the CLI against management_url", async (t) => {
    if (skip) return t.skip();
    const management = await start("management", { ALLOWED_DESTINATIONS: "127.0.0.1" });
    url["hooktest-management"] = management.url;
    const relay = await start("relay", { ALLOWED_DESTINATIONS: "127.0.0.1", ALERT_WEBHOOK_URL: `${alerts.url}/alerts`, ...ONE_DRAIN });
    url["hooktest-relay"] = relay.url;
    const token = environmentOf("management").env.ADMIN_TOKEN!;
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    await managementScenario({
      call: callManagement(management.url),
      token,
      relayTick: async () => {
        const tick = await schedulerTick("relay", "relay/job");
        expect(tick.status, relay.fp.output().slice(-3000)).toBe(200);
      },
      output: () => `${management.fp.output()}\n--- relay ---\n${relay.fp.output()}`,
    });
  }, 180_000);
});

describe("GCP wiring: issue 24, the listening relay as the stack schedules it", () => {
  it("Cloud Scheduler's cron and the relay's timeout and max instances played (overlapping runs): events from the API, from SQL and by inbound forwarding reach the receiver with p50 < 2 s and p99 < 5 s; across handovers nothing is lost or sent twice; retries on time; the inbox retries on INBOX_RETRY_SCHEDULE", async (t) => {
    if (skip) return t.skip();
    const job = resourceAt(json, "google_cloud_scheduler_job", "relay/job").body;
    const cron = /^\*\/(\d+) \* \* \* \*$/.exec(String(job.schedule));
    expect(cron, String(job.schedule)).not.toBeNull();
    const interval = Number(cron![1]) * 60;
    const service = block(fnResource("relay").body.service_config);
    const variables = service.environment_variables as Record<string, string>;
    expect(variables.WEBHOOKS_RELAY_MODE).toBe("listening");
    const maxInstances = Number(service.max_instance_count);
    const budget = Number(variables.WEBHOOKS_RELAY_BUDGET_SECONDS);
    expect(Number(service.timeout_seconds)).toBeGreaterThan(interval); // runs overlap
    expect(service.max_instance_request_concurrency ?? 1).toBe(1);
    const INBOX_STEPS = [2, 4];
    const tuning = {
      ALLOWED_DESTINATIONS: "127.0.0.1", INBOX_RETRY_SCHEDULE: INBOX_STEPS.join(","), ...SCALED_ATTEMPT_TIMEOUT,
      // The clock's scale (support/realtime.ts), applied to the stack's budget.
      WEBHOOKS_RELAY_BUDGET_SECONDS: String(Math.ceil(scaled(budget) / 1000)),
    };
    // Cloud Run: one request per instance, at most max_instance_count instances; a tick finding none free is refused (429).
    const idle: { url: string }[] = [];
    // Every relay instance this test starts: stopped at its end, as the runs still listening would
    // otherwise deliver what the next test writes (Cloud Run would cut them off at their timeout).
    const relays: FunctionProcess[] = [];
    const startRelay = async () => {
      const instance = await start("relay", tuning);
      relays.push(instance.fp);
      return instance;
    };
    let instances = 0;
    const runRelay = async () => {
      let instance = idle.pop();
      if (!instance) {
        if (instances >= maxInstances) throw new Error("429: every relay instance is busy");
        instances++;
        instance = await startRelay();
      }
      try {
        const r = await fetch(instance.url, { method: "POST", headers: { authorization: bearer(instance.url, "scheduler"), "user-agent": "Google-Cloud-Scheduler" } });
        expect(r.status).toBe(200);
        return await r.json();
      } finally {
        idle.push(instance);
      }
    };
    // In steady state both instances are warm (each serves a run every other interval; Cloud Run keeps
    // idle instances far longer): started before the clock, so a cold start is not taken for a gap.
    for (let i = 0; i < maxInstances; i++, instances++) idle.push(await startRelay());
    const management = await start("management", { ALLOWED_DESTINATIONS: "127.0.0.1" });
    const processor = await start("processor", { INBOX_RETRY_SCHEDULE: INBOX_STEPS.join(",") });
    const api = callManagement(management.url);
    let n = 0;
    const push = async (eventId: string, body: string, partner = FORWARD_PARTNER, eventType = "partner.thing") => {
      const message = inlineMessage({ partner, eventId, eventType, receivedAt: new Date() }, Buffer.from(body));
      const sub = resourceAt(json, "google_pubsub_subscription", "queue/push").body;
      const r = await fetch(`${processor.url}/`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: bearer(processor.url, "push") },
        body: JSON.stringify({
          message: { data: Buffer.from(message.body).toString("base64"), attributes: message.attributes, messageId: `rt-${++n}`, publishTime: new Date().toISOString() },
          subscription: `projects/${project}/subscriptions/${String(sub.name)}`,
          deliveryAttempt: 1,
        }),
      });
      expect(r.status, await r.text()).toBe(204);
    };
    const poisoned = `evt_rt_poison_${Date.now()}`;
    await poisonEvent(owner, poisoned);
    try {
      const result = await realtimeScenario({
        db: owner,
        receiver: realtime,
        sendViaApi: async (type, data) => {
          const sent = await api("POST", "/events", { token: environmentOf("management").env.ADMIN_TOKEN!, body: { type, data } });
          expect(sent.status, sent.text).toBe(201);
        },
        forwardInbound: push,
      }, [{ name: "relay", offsetMs: 0, intervalMs: scaled(interval), singleton: false, run: runRelay }], {
        cloud: "gcp",
        during: async () => { await inboxRetryScenario(owner, poisoned, INBOX_STEPS, () => push(poisoned, orderEvent(`o-${poisoned}`, "order.created"), "shop", "order.created")); },
      });
      expectRealtime(result, () => running.map((p) => p.output().slice(-1500)).join("\n---\n"));
      expect(instances).toBeLessThanOrEqual(maxInstances);
    } finally {
      await owner.query("DROP TRIGGER IF EXISTS test_poison ON inbox_entries");
      await Promise.all(relays.map((fp) => fp.stop()));
    }
  }, 240_000);
});

describe("GCP wiring: issue 24, relayMode \"scheduled\": the management function wakes the relay", () => {
  it("an API send is delivered within seconds through the wake-up topic (published by the management function, pushed to the relay); a write outside the API waits for the next Cloud Scheduler run", async (t) => {
    if (skip) return t.skip();
    const scheduled = await synthBuilt("gcp", { alertWebhookUrl: "https://alerts.example.com/webhooks-gcp", relayMode: "scheduled" });
    const listening = { stack, json, relayUrl: url["hooktest-relay"] };
    // The helpers read the stack under test from these.
    stack = scheduled;
    json = scheduled.json;
    const { PubSub } = await import("@google-cloud/pubsub");
    const pubsub = new PubSub({ projectId: project, apiEndpoint: PUBSUB_EMULATOR_HOST, emulatorMode: true, universeDomain: "googleapis.com" });
    try {
      // What the stack says: a topic, pushed to the relay with the push account's token; the
      // management function may publish to it and names it; the listening stack has none.
      const topic = resourceAt(json, "google_pubsub_topic", "relay-wake/topic");
      const push = resourceAt(json, "google_pubsub_subscription", "relay-wake/push").body;
      expect(push.topic).toBe(`\${${topic.type}.${topic.name}.id}`);
      const relayFn = fnResource("relay");
      const pushConfig = block(push.push_config);
      expect(String(pushConfig.push_endpoint)).toContain(`${relayFn.type}.${relayFn.name}.service_config[0].uri`);
      expect(String(block(pushConfig.oidc_token).service_account_email)).toContain("push");
      expect(Number(push.ack_deadline_seconds)).toBeGreaterThanOrEqual(Number(block(relayFn.body.service_config).timeout_seconds));
      const publisher = resourcesOf(json, "google_pubsub_topic_iam_member").find((m) => String(m.body.topic).includes(`${topic.type}.${topic.name}.`))!;
      expect(publisher.body.role).toBe("roles/pubsub.publisher");
      expect(String(publisher.body.member)).toContain("management");
      const variables = block(fnResource("management").body.service_config).environment_variables as Record<string, string>;
      expect(variables.WEBHOOKS_RELAY_WAKE_TOPIC).toBe(`\${${topic.type}.${topic.name}.name}`);
      expect((block(fnResource("relay").body.service_config).environment_variables as Record<string, string>).WEBHOOKS_RELAY_MODE).toBe("scheduled");
      expect((block(resourcesOf(listening.json, "google_cloudfunctions2_function").find((r) => r.body.name === "hooktest-management")!.body.service_config).environment_variables as Record<string, string>).WEBHOOKS_RELAY_WAKE_TOPIC).toBeUndefined();

      // The topic on the emulator; the test pulls its subscription and plays the push (the emulator's push sends no OIDC token).
      const topicName = String(topic.body.name);
      await pubsub.subscription(String(push.name)).delete().catch(() => {});
      await pubsub.topic(topicName).delete().catch(() => {});
      const [created] = await pubsub.createTopic(topicName);
      const [subscription] = await created.createSubscription(String(push.name), { ackDeadlineSeconds: Number(push.ack_deadline_seconds) });
      const relay = await start("relay", { ALLOWED_DESTINATIONS: "127.0.0.1" });
      url["hooktest-relay"] = relay.url;
      const management = await start("management", { ALLOWED_DESTINATIONS: "127.0.0.1" });
      const woken = new Set<Promise<void>>();
      let wakeUps = 0;
      subscription.on("message", (m: { data: Buffer; id: string; attributes: Record<string, string>; ack(): void }) => {
        wakeUps++;
        const run = (async () => {
          const r = await fetch(relay.url, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: bearer(relay.url, "push"), "user-agent": "APIs-Google; (+https://developers.google.com/webmasters/APIs-Google.html)" },
            body: JSON.stringify({ message: { data: m.data.toString("base64"), attributes: m.attributes, messageId: m.id, publishTime: new Date().toISOString() }, subscription: `projects/${project}/subscriptions/${String(push.name)}`, deliveryAttempt: 1 }),
          });
          const summary = await r.json() as { deliveriesAttempted: number };
          expect(r.status, JSON.stringify(summary)).toBe(200);
          m.ack();
        })();
        woken.add(run);
        void run.finally(() => woken.delete(run));
      });
      const api = callManagement(management.url);
      await wakeScenario({
        db: owner,
        receiver: realtime,
        sendViaApi: async (type, data) => {
          const sent = await api("POST", "/events", { token: environmentOf("management").env.ADMIN_TOKEN!, body: { type, data } });
          expect(sent.status, sent.text).toBe(201);
        },
        wakeUps: () => wakeUps,
        wokenRunsEnded: async () => { await Promise.all([...woken]); },
        scheduledRun: async () => {
          const r = await fetch(relay.url, { method: "POST", headers: { authorization: bearer(relay.url, "scheduler"), "user-agent": "Google-Cloud-Scheduler" } });
          expect(r.status).toBe(200);
          await r.json();
        },
      }, "gcp");
      await subscription.close();
      expect(relay.fp.output()).toMatch(/"woken":true/);
    } finally {
      stack = listening.stack;
      json = listening.json;
      if (listening.relayUrl) url["hooktest-relay"] = listening.relayUrl;
      await pubsub.close();
    }
  }, 180_000);
});
