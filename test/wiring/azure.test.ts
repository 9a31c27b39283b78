/**
 * Must-show 1, Azure: the stack's cdk.tf.json, synthesized from the real bundles, started as the
 * Functions host would start it. Each Function App's bundle runs in its own Node 22 process
 * (test/wiring/drivers/azure.mjs plays the Node worker: it provides `@azure/functions-core`,
 * records what the bundle registers, checks it against the app settings as the host's indexing
 * does, and invokes through the bundle's own programming model) with exactly the app settings the
 * stack gives that app, where every `${…}` reference and every `@Microsoft.KeyVault(...)`
 * reference is resolved to a local stand-in (an unknown one fails the test):
 * - Service Bus: the Service Bus TEST PEER (test/support/serviceBusTestPeer.ts, real AMQP driven
 *   by the real SDK), with the queue's name, lock and max delivery count from the stack. It speaks
 *   only plain TCP with SASL ANONYMOUS, so the stack's identity-based connection
 *   (`ServiceBusConnection__fullyQualifiedNamespace`/`__credential`/`__clientId`, checked here to
 *   name the namespace and the app's own identity) is replaced by a `ServiceBusConnection`
 *   connection string to the peer: Entra ID tokens for Service Bus are not exercised. The test
 *   plays the host's trigger (receive, hand the message to the processor, complete or abandon);
 * - Blob claim-checks: Azurite over HTTPS with bearer tokens (`--oauth basic`), reached with the
 *   tokens of the managed-identity TEST PEER (test/support/managedIdentityTestPeer.ts), one per app
 *   with the platform's IDENTITY_ENDPOINT/IDENTITY_HEADER: an app given another app's identity
 *   client id is refused by its own endpoint;
 * - Key Vault references: the value of the secret the reference names, but only when the app's
 *   identity holds "Key Vault Secrets User" on that secret in the stack (the check the platform
 *   makes with RBAC, evaluated here from the JSON);
 * - Flexible Server: a TLS-only PostgreSQL 15 with a private CA (test/wiring/support/tlsPostgres.ts),
 *   dialled as `localhost` with verify-full as webhooks_app with the password the test gives
 *   `db_app_password`. The private CA reaches the functions through NODE_EXTRA_CA_CERTS, the
 *   stand-in for the public roots (DigiCert Global Root G2, Microsoft RSA Root CA 2017) that Node
 *   already trusts for the real server; the URL's fixed port 5432 is replaced by the stand-in's.
 * Only the test adds ALLOWED_DESTINATIONS=127.0.0.1,::1,localhost to the relay and the management
 * app (the receivers are local; on Azure the SSRF policy refuses them, as it should). The admin
 * token and ENCRYPTION_KEYS in the stand-in vault are what `terraform console` evaluates the stack's
 * write-only expressions to (test/wiring/support/generatedSecrets.ts).
 *
 * What it cannot reproduce: RBAC evaluation by Azure and its propagation delay (the stack waits
 * for it: rbacPropagation.ts), Key Vault reference resolution by the platform (and its refresh),
 * the VNet, its NAT gateway and private DNS, the Functions host itself (its HTTP front end and
 * 100 MB body limit, host.json, scale, the real trigger and its lock renewal), Service Bus's own
 * size accounting, Application Insights, and Flexible Server itself.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer as createHttpsServer, request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ServiceBusClient, type ServiceBusReceivedMessage, type ServiceBusReceiver } from "@azure/service-bus";
import type { TerraformJson } from "../../stacks/app.js";
import { allResources, resourceAt, resourcesOf, type SynthResource } from "../../stacks/terraformJson.js";
import type { Database } from "../../shared/db/port.js";
import { openPostgres } from "../../shared/db/postgres.js";
import { AccountSASPermissions, generateAccountSASQueryParameters, StorageSharedKeyCredential } from "@azure/storage-blob";
import { enqueue } from "../../shared/outbound/enqueue.js";
import { createSubscription } from "../../shared/outbound/subscriptions.js";
import { DEAD_LETTER_REASON } from "../../functions/azure/failedMessages.js";
import { startAzurite, type Azurite } from "../support/azurite.js";
import { startManagedIdentityTestPeer, type ManagedIdentityTestPeer } from "../support/managedIdentityTestPeer.js";
import { startServiceBusTestPeer, type ServiceBusTestPeer } from "../support/serviceBusTestPeer.js";
import { inboxEntry, orderEvent, PARTNERS_JSON, signedDelivery } from "../functions/support.js";
import { buildFunctions } from "../../functions/build.js";
import { githubPush, SENDER_PARTNERS, stripeInvoiceEvent, writeSenderHandlers } from "../inbound/support/realSenders.js";
import { inlineMessage } from "../../shared/cloud/inboundMessage.js";
import { expectRealtime, FORWARD_PARTNER, ONE_DRAIN, realtimeScenario, SCALED_ATTEMPT_TIMEOUT, scaled, startRealtimeReceiver, wakeScenario, type RealtimeReceiver } from "./support/realtime.js";
import { startFunctionProcess, type FunctionProcess } from "./support/functionProcess.js";
import { wiringTeardown } from "./support/teardown.js";
import { skipUnlessNode22 } from "./support/node22.js";
import { parseReference, resolveRefs } from "./support/terraformRefs.js";
import { startTlsPostgres, tlsPostgresUnavailable, type TlsPostgres } from "./support/tlsPostgres.js";
import { BUNDLED_HANDLERS, synthBuilt, type BuiltStack } from "./support/builtStacks.js";
import { deployGuideSequence, outboundCausedBy, relayUntilReceived } from "./support/deployGuide.js";
import { makeCertificate } from "./support/certificates.js";
import { listenLocal, verifyingHandler, type Received } from "./support/receivers.js";
import { answer, managementScenario, type ManagementCall } from "./support/managementScenario.js";
import { generatedValue } from "./support/generatedSecrets.js";

const DRIVER = fileURLToPath(new URL("./drivers/azure.mjs", import.meta.url));
const APP_PASSWORD = "wiring app password: with / and @ and spaces";
const ALERT_SECRET = `whsec_${Buffer.from("wiring-alert-secret-32-bytes!!!!").toString("base64")}`;
const SUBSCRIBER_SECRET = `whsec_${Buffer.from("wiring-subscriber-secret-32bytes").toString("base64")}`;
const VAULT = "wiring-kv";
/** Function App (construct id) → the function it runs. */
const APPS = { ingress: "ingest", workers: "processor", relay: "relay", migrate: "migrate", management: "management" } as const;
type AppId = keyof typeof APPS;

let skip: string | undefined;
let stack: BuiltStack;
let json: TerraformJson;
let pg: TlsPostgres;
let admin: Database;
let azurite: Azurite;
let peer: ServiceBusTestPeer;
let sbClient: ServiceBusClient;
let receiver: ServiceBusReceiver;
let queueName: string;
let realtime: RealtimeReceiver;
let caBundle: string;
const identityPeers = {} as Record<AppId, ManagedIdentityTestPeer>;
const vault = new Map<string, string>();
const { processes, closers } = wiringTeardown();
const received: Received[] = [];
const alerts: Received[] = [];
let subscriberUrl: string;

const appResource = (id: AppId) => resourceAt(json, "azurerm_linux_function_app", `${id}/app`);
const identityOf = (id: AppId) => resourceAt(json, "azurerm_user_assigned_identity", `identities/${APPS[id]}-identity`);
const key = (r: SynthResource, attribute: string) => `${r.type}.${r.name}.${attribute}`;

/** What each `${…}` in an app's settings stands for here. */
function refValue(expression: string): string | undefined {
  if (expression === "urlencode(var.db_app_password)") return encodeURIComponent(APP_PASSWORD);
  if (expression === "urlencode(var.db_admin_password)") return encodeURIComponent(pg.adminPassword);
  const ref = parseReference(expression);
  if (!ref) return undefined;
  const resource = allResources(json).find((r) => r.type === ref.type && r.name === ref.name);
  if (!resource) return undefined;
  const attribute = ref.path.join(".");
  const app = (Object.keys(APPS) as AppId[]).find((id) => identityOf(id).name === ref.name);
  switch (`${ref.type}.${attribute}`) {
    case "azurerm_key_vault.name": return VAULT;
    case "azurerm_servicebus_queue.name": return String(resource.body.name);
    case "azurerm_servicebus_namespace.name": return String(resource.body.name);
    case "azurerm_postgresql_flexible_server.fqdn": return "localhost";
    case "azurerm_postgresql_flexible_server_database.name": return String(resource.body.name);
    case "azurerm_storage_account.primary_blob_endpoint": return resource.component === "claim-checks" ? azurite.blobEndpoint : undefined;
    case "azurerm_user_assigned_identity.client_id": return app ? identityPeers[app].userAssignedClientId : undefined;
    default: return undefined;
  }
}

/** Whether `app`'s identity holds Key Vault Secrets User on the secret named `secretName` (the RBAC check, read from the stack). */
function mayRead(app: AppId, secretName: string): boolean {
  const secret = resourcesOf(json, "azurerm_key_vault_secret").find((s) => s.body.name === secretName);
  if (!secret) return false;
  return resourcesOf(json, "azurerm_role_assignment").some((g) =>
    g.body.role_definition_name === "Key Vault Secrets User"
    && String(g.body.principal_id).includes(key(identityOf(app), "principal_id"))
    && String(g.body.scope).includes(key(secret, "resource_versionless_id")));
}

/** The environment the platform gives `app`: its settings resolved, the Service Bus connection to the peer, the platform's own variables. */
function appEnvironment(app: AppId, change: (settings: Record<string, string>) => void = () => {}): Record<string, string> {
  const settings = { ...(appResource(app).body.app_settings as Record<string, string>) };
  change(settings);
  const resolved = resolveRefs(settings, refValue, `${app} app_settings`);
  for (const [name, value] of Object.entries(resolved)) {
    const kv = /^@Microsoft\.KeyVault\(VaultName=([^;]+);SecretName=([^)]+)\)$/.exec(value);
    if (!kv) continue;
    expect(kv[1], `${app} ${name}`).toBe(VAULT);
    if (!mayRead(app, kv[2]!)) throw new Error(`${app}: ${name} refers to secret ${kv[2]}, which its identity may not read`);
    const secret = vault.get(kv[2]!);
    if (secret === undefined) throw new Error(`${app}: ${name} refers to secret ${kv[2]}, which the test has no value for`);
    resolved[name] = secret;
  }
  if (resolved.ServiceBusConnection__fullyQualifiedNamespace !== undefined) {
    // The stack's identity-based connection, checked, then pointed at the peer (see the header).
    expect(resolved.ServiceBusConnection__fullyQualifiedNamespace).toMatch(/^[a-z0-9-]+\.servicebus\.windows\.net$/);
    expect(resolved.ServiceBusConnection__credential).toBe("managedidentity");
    expect(resolved.ServiceBusConnection__clientId).toBe(identityPeers[app].userAssignedClientId);
    delete resolved.ServiceBusConnection__fullyQualifiedNamespace;
    delete resolved.ServiceBusConnection__credential;
    delete resolved.ServiceBusConnection__clientId;
    resolved.ServiceBusConnection = peer.connectionString;
  }
  return { ...resolved, ...identityPeers[app].env, NODE_EXTRA_CA_CERTS: caBundle };
}

async function start(app: AppId, options: { extraEnv?: Record<string, string>; env?: Record<string, string> } = {}): Promise<FunctionProcess> {
  const fp = await startFunctionProcess({ driver: DRIVER, bundleDir: stack.bundleDir(APPS[app]), env: { ...(options.env ?? appEnvironment(app)), ...options.extraEnv } });
  processes.push(fp);
  return fp;
}

/** The host's trigger: receive one message, hand it to the processor as the host does, complete or abandon. */
async function trigger(processor: FunctionProcess): Promise<"none" | "completed" | "abandoned"> {
  const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 500 });
  if (!m) return "none";
  try {
    await processor.invoke("serviceBus", { queueName, body: bodyText(m), triggerMetadata: bindingData(m) });
  } catch {
    await receiver.abandonMessage(m);
    return "abandoned";
  }
  await receiver.completeMessage(m);
  return "completed";
}
const bodyText = (m: ServiceBusReceivedMessage) => (Buffer.isBuffer(m.body) ? m.body.toString("utf8") : typeof m.body === "string" ? m.body : JSON.stringify(m.body));
/** The trigger metadata the host sends (the .NET SDK's names; its delivery count starts at 1). */
const bindingData = (m: ServiceBusReceivedMessage) => ({
  DeliveryCount: (m.deliveryCount ?? 0) + 1,
  MessageId: m.messageId,
  ContentType: m.contentType,
  EnqueuedTimeUtc: m.enqueuedTimeUtc?.toISOString(),
  LockToken: m.lockToken,
  SequenceNumber: m.sequenceNumber?.toNumber(),
  ApplicationProperties: m.applicationProperties ?? {},
});

/** A POST the way the host's front end hands it over, to the ingest URL the stack outputs. */
function post(ingest: FunctionProcess, partner: string, delivery: { headers: Record<string, string>; body: string }) {
  const url = String(json.output!.ingest_url!.value).replace(/^https:\/\/\$\{[^}]+\}/, "https://wiring-ingest.azurewebsites.net").replace("{partner}", partner);
  return ingest.invoke<{ status: number; body: string }>("http", { method: "POST", url, headers: delivery.headers, bodyBase64: Buffer.from(delivery.body).toString("base64") });
}

beforeAll(async () => {
  skip = tlsPostgresUnavailable() ?? (await skipUnlessNode22());
  if (skip) {
    if (process.env.CI && process.env.CI !== "false") throw new Error(`${skip}. CI must run the wiring tests.`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), "wiring-azure-"));
  const alertTls = await makeCertificate(mkdtempSync(join(dir, "alert-")), "DNS:localhost");
  const alertServer = await listenLocal(() => createHttpsServer({ key: alertTls.key, cert: alertTls.cert }, verifyingHandler(ALERT_SECRET, alerts, () => 204)) as unknown as ReturnType<typeof createHttpServer>);
  closers.push(alertServer.close);
  // The subscriber: /ok accepts, /broken answers 400 (a permanent failure: dead at once).
  const subscriber = await listenLocal(() => createHttpServer(verifyingHandler(SUBSCRIBER_SECRET, received, (path) => (path === "/broken" ? 400 : 200))));
  closers.push(subscriber.close);
  realtime = await startRealtimeReceiver();
  closers.push(realtime.close);
  subscriberUrl = `http://127.0.0.1:${subscriber.port}`;

  pg = await startTlsPostgres();
  closers.push(() => pg.stop());
  const blobTls = await makeCertificate(mkdtempSync(join(dir, "blob-")), "IP:127.0.0.1");
  azurite = await startAzurite({ tls: { certPath: blobTls.certPath, keyPath: blobTls.keyPath } });
  closers.push(() => azurite.stop());
  caBundle = join(dir, "ca-bundle.pem");
  writeFileSync(caBundle, `${pg.caPem}\n${alertTls.ca}\n${blobTls.ca}`);
  for (const app of Object.keys(APPS) as AppId[]) {
    identityPeers[app] = await startManagedIdentityTestPeer();
    closers.push(() => identityPeers[app].close());
  }
  peer = await startServiceBusTestPeer();
  closers.push(() => peer.close());

  stack = await synthBuilt("azure", { alertWebhookUrl: `https://localhost:${alertServer.port}/alerts`, alertEmail: "ops@example.com" });
  json = stack.json;
  const queue = resourcesOf(json, "azurerm_servicebus_queue")[0]!;
  queueName = String(queue.body.name);
  // The queue as the stack makes it, but a short lock: an abandoned message comes back quickly either way.
  peer.createQueue(queueName, { lockDurationMs: 5_000, maxDeliveryCount: Number(queue.body.max_delivery_count) });
  sbClient = new ServiceBusClient(peer.connectionString);
  receiver = sbClient.createReceiver(queueName, { receiveMode: "peekLock", maxAutoLockRenewalDurationInMs: 0, skipParsingBodyAsJson: true });
  closers.push(async () => { await receiver.close(); await sbClient.close(); });

  // The container, created as Terraform would (here with Azurite's development key over HTTPS).
  const container = String(resourcesOf(json, "azurerm_storage_container")[0]!.body.name);
  const accountKey = /AccountKey=([^;]+)/.exec(azurite.connectionString)![1]!;
  // A SAS signed by the SDK, sent over this request's TLS with the test CA (the SDK's own HTTPS
  // agents would need NODE_EXTRA_CA_CERTS, which this process was not started with).
  const sas = generateAccountSASQueryParameters({
    expiresOn: new Date(Date.now() + 3_600_000), permissions: AccountSASPermissions.parse("c"), services: "b", resourceTypes: "c",
  }, new StorageSharedKeyCredential("devstoreaccount1", accountKey)).toString();
  const status = await new Promise<number>((resolve, reject) => {
    httpsRequest(new URL(`${azurite.blobEndpoint}/${container}?restype=container&${sas}`), { method: "PUT", headers: { "content-length": "0" }, ca: blobTls.ca }, (res) => { res.resume(); resolve(res.statusCode ?? 0); }).on("error", reject).end();
  });
  expect(status).toBe(201);

  // Key Vault: what Terraform writes (the URL secrets, their `${…}` resolved) and what the operator sets.
  for (const secret of resourcesOf(json, "azurerm_key_vault_secret")) {
    const name = String(secret.body.name);
    if (name === "database-url" || name === "database-admin-url") {
      vault.set(name, resolveRefs(String(secret.body.value), refValue, `secret ${name}`).replace(/^(postgres:\/\/[^@]+@localhost):5432\//, `$1:${pg.port}/`));
    }
  }
  // The test partner, plus GitHub and Stripe for the handler module block (issue 16).
  vault.set("partner-signing-secrets", JSON.stringify({ ...JSON.parse(PARTNERS_JSON), ...SENDER_PARTNERS, ...realtime.partners() }));
  vault.set("alert-webhook-secret", ALERT_SECRET);
  // The two secrets the stack generates (write-only): what Terraform evaluates their expressions to.
  // The rows this test writes itself are under the test suite's key: the keys secret holds it after
  // the stack's, as a rotation would (the first encrypts).
  const generated = (name: string) => generatedValue(String(resourcesOf(json, "azurerm_key_vault_secret").find((k) => k.body.name === name)!.body.value_wo));
  vault.set("admin-token", generated("admin-token"));
  vault.set("encryption-keys", `${generated("encryption-keys")},${process.env.ENCRYPTION_KEYS}`);
  admin = openPostgres({ connectionString: pg.adminUrl, ssl: pg.ssl, max: 2 });
  closers.push(() => admin.close());
}, 300_000);

const inbox = async (eventId: string) => (await inboxEntry(admin, eventId, null))?.status;

interface Registration { name: string; type: string; route?: string; methods?: string[]; connection?: string; queueName?: string; resolvedQueueName?: string; cardinality?: string; schedule?: string; resolvedSchedule?: string; runOnStartup?: boolean }

describe("Azure wiring: the synthesized stack's Function Apps on Node 22 with local stand-ins", () => {
  let ingest: FunctionProcess;
  let processor: FunctionProcess;
  let relay: FunctionProcess;
  const relayTick = () => relay.invoke("timer", { name: "relay" }, 120_000);

  it("migrate runs first (its timer runs on start-up, as each deploy restarts the app) and makes webhooks_app with the stack's password", async (t) => {
    if (skip) return t.skip();
    const migrate = await start("migrate");
    expect(migrate.version).toMatch(/^v22\./);
    const [registration] = await migrate.invoke<Registration[]>("registrations");
    expect(registration).toMatchObject({ name: "migrate", type: "timerTrigger", schedule: "%WEBHOOKS_MIGRATE_SCHEDULE%", runOnStartup: true });
    await migrate.invoke("timer", { name: "migrate" });
    // The role logs in with the password Terraform put in database-url, over verified TLS.
    const asApp = openPostgres({ connectionString: `postgres://webhooks_app:${encodeURIComponent(APP_PASSWORD)}@localhost:${pg.port}/webhooks`, ssl: pg.ssl, max: 1 });
    try {
      const who = await asApp.query<{ user: string; ssl: boolean }>("SELECT current_user AS user, (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()) AS ssl");
      expect(who.rows[0]).toEqual({ user: "webhooks_app", ssl: true });
      await expect(asApp.query("CREATE TABLE not_allowed (id int)")).rejects.toThrow(/permission denied/);
    } finally {
      await asApp.close();
    }
    await migrate.invoke("timer", { name: "migrate" }); // the next tick: idempotent
    // The deploy's call (stacks/postDeploy.ts): the same step, answering what it did, master key only.
    expect(await migrate.invoke<Registration[]>("registrations")).toContainEqual(expect.objectContaining({ name: "migrate-now", type: "httpTrigger", route: "migrate", methods: ["POST"], authLevel: "admin" }));
    const called = await migrate.invoke<{ status: number; body: string }>("http", { method: "POST", url: "https://wiring-migrate.azurewebsites.net/api/migrate", headers: { "content-type": "application/json" }, bodyBase64: "" });
    expect(called.status).toBe(200);
    expect(JSON.parse(called.body)).toEqual({ applied: [], appRole: "webhooks_app", roleCreated: false });
  }, 120_000);

  it("registers what the stack's settings expect: names, triggers, route, queue, connection, schedule", async (t) => {
    if (skip) return t.skip();
    ingest = await start("ingress");
    processor = await start("workers");
    relay = await start("relay", { extraEnv: { ALLOWED_DESTINATIONS: "127.0.0.1,::1,localhost", ...ONE_DRAIN } });
    const route = /\/api\/(.+)$/.exec(String(json.output!.ingest_url!.value))![1];
    expect(await ingest.invoke("registrations")).toEqual([expect.objectContaining({ name: "ingest", type: "httpTrigger", route, methods: ["POST"] })]);
    expect(await processor.invoke("registrations")).toEqual([expect.objectContaining({
      name: "processor", type: "serviceBusTrigger", connection: "ServiceBusConnection", queueName: "%WEBHOOKS_QUEUE_NAME%", resolvedQueueName: queueName, cardinality: "one",
    })]);
    const settings = appResource("relay").body.app_settings as Record<string, string>;
    // Two timers half an interval apart (issue 24: Azure never overlaps one timer's runs).
    expect(await relay.invoke("registrations")).toEqual([expect.objectContaining({
      name: "relay", type: "timerTrigger", schedule: "%WEBHOOKS_RELAY_SCHEDULE%", resolvedSchedule: settings.WEBHOOKS_RELAY_SCHEDULE, runOnStartup: false,
    }), expect.objectContaining({
      name: "relayOffset", type: "timerTrigger", schedule: "%WEBHOOKS_RELAY_OFFSET_SCHEDULE%", resolvedSchedule: settings.WEBHOOKS_RELAY_OFFSET_SCHEDULE, runOnStartup: false,
    })]);
  }, 120_000);

  it("a signed webhook: HTTP → ingest → Service Bus → processor (as the trigger invokes it) → inbox processed; a large one by claim-check", async (t) => {
    if (skip) return t.skip();
    const small = `evt_wiring_${Date.now()}`;
    const big = `evt_wiring_big_${Date.now()}`;
    const answer = await post(ingest, "shop", signedDelivery(small, orderEvent("o-wiring", "order.created")));
    expect(answer.status, ingest.output().slice(-3000)).toBe(202);
    // Above a Service Bus Standard message, under the stack's MAX_INBOUND_BODY_BYTES: by claim-check
    // through Blob Storage, written with ingest's identity and read with the processor's.
    const large = await post(ingest, "shop", signedDelivery(big, orderEvent("o-wiring-big", "order.created", { note: "x".repeat(1024 * 1024) })));
    expect(large.status, ingest.output().slice(-3000)).toBe(202);
    expect(JSON.parse(large.body)).toMatchObject({ claimCheck: true });
    expect(identityPeers.ingress.requests.some((r) => r.resource === "https://storage.azure.com/" || r.resource === "https://storage.azure.com")).toBe(true);
    for (let i = 0; i < 20 && ((await inbox(small)) !== "processed" || (await inbox(big)) !== "processed"); i++) {
      expect(await trigger(processor), processor.output().slice(-3000)).not.toBe("abandoned");
    }
    expect(await inbox(small)).toBe("processed");
    expect(await inbox(big)).toBe("processed");
    expect(identityPeers.workers.requests.length).toBeGreaterThan(0);
    // The processor's pooled connections: webhooks_app over TLS (seen by the superuser).
    const su = pg.superuser();
    await su.connect();
    try {
      const sessions = await su.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.usename = 'webhooks_app' AND s.ssl");
      expect(sessions.rows[0]!.n).toBeGreaterThan(0);
    } finally {
      await su.end();
    }
  }, 120_000);

  it("a malformed message reaches the dead-letter subqueue with its reason", async (t) => {
    if (skip) return t.skip();
    const sender = sbClient.createSender(queueName);
    await sender.sendMessages({ body: Buffer.from(JSON.stringify({ not: "an inbound message" })), applicationProperties: { partner: "shop" } });
    await sender.close();
    for (let i = 0; i < 20 && peer.stats(queueName).deadLettered === 0; i++) await trigger(processor);
    const dead = sbClient.createReceiver(queueName, { subQueueType: "deadLetter", receiveMode: "peekLock", skipParsingBodyAsJson: true });
    const [m] = await dead.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    expect(m?.applicationProperties?.[DEAD_LETTER_REASON], processor.output().slice(-3000)).toMatch(/\S/);
    await dead.completeMessage(m!);
    await dead.close();
  }, 120_000);

  it("an outbox event → the relay's timer → delivered to a receiver that verifies the signature", async (t) => {
    if (skip) return t.skip();
    await createSubscription(admin, { url: `${subscriberUrl}/ok`, eventTypes: ["order.shipped"], secrets: [SUBSCRIBER_SECRET] });
    const { eventId: id } = await enqueue(admin, { type: "order.shipped", data: { order_id: "o-wiring" } });
    await relayTick();
    const delivered = received.filter((r) => r.path === "/ok" && r.type === "order.shipped");
    expect(delivered, relay.output().slice(-3000)).toHaveLength(1);
    expect(delivered[0]!.verified).toBe(true);
    expect(delivered[0]!.body).toContain(id);
  }, 120_000);

  it("a dead letter → an alert delivered to ALERT_WEBHOOK_URL, signed with the Key Vault alert secret", async (t) => {
    if (skip) return t.skip();
    await createSubscription(admin, { url: `${subscriberUrl}/broken`, eventTypes: ["order.refunded"], secrets: [SUBSCRIBER_SECRET] });
    await enqueue(admin, { type: "order.refunded", data: { order_id: "o-wiring" } });
    for (let i = 0; i < 5 && !alerts.some((a) => a.type === "alert.dead_letter"); i++) await relayTick();
    const alert = alerts.find((a) => a.type === "alert.dead_letter");
    expect(alert, relay.output().slice(-3000)).toBeDefined();
    expect(alert!.path).toBe("/alerts");
    expect(alert!.verified).toBe(true);
    expect(JSON.parse(alert!.body)).toMatchObject({ type: "alert.dead_letter", data: expect.objectContaining({ eventType: "order.refunded" }) });
  }, 180_000);

  it("Must-show 3: docs/deploy-azure.md's first delivered webhook as written: the handler module of its build, its subscription, its signed partner event → the outbound event it causes, delivered", async (t) => {
    if (skip) return t.skip();
    const guide = deployGuideSequence("azure");
    expect(guide.handlersModule).toBe(BUNDLED_HANDLERS);
    await createSubscription(admin, { url: `${subscriberUrl}/guide`, eventTypes: [guide.subscribedPattern], secrets: [SUBSCRIBER_SECRET] });
    const id = `msg_guide_${Date.now()}`;
    const answer = await post(ingest, guide.partner, signedDelivery(id, guide.inboundBody));
    expect(answer.status, ingest.output().slice(-3000)).toBe(202);
    for (let i = 0; i < 20 && (await inbox(id)) !== "processed"; i++) {
      expect(await trigger(processor), processor.output().slice(-3000)).not.toBe("abandoned");
    }
    // Applied by the bundled order domain, not `ignored` as a build without handlers leaves it.
    expect(await inboxEntry(admin, id, guide.partner)).toMatchObject({ status: "processed", outcome: "applied" });
    const delivered = await relayUntilReceived("/guide", received, relayTick);
    expect(delivered, relay.output().slice(-3000)).toHaveLength(1);
    expect(delivered[0]!.verified).toBe(true);
    expect(JSON.parse(delivered[0]!.body)).toMatchObject(outboundCausedBy(guide));
  }, 120_000);
});

describe("Azure wiring: where the stack and a function disagree, the function refuses", () => {
  const cases: [string, AppId, (s: Record<string, string>) => void, RegExp][] = [
    ["a setting name the function does not know", "relay", (s) => { s.WEBHOOKS_DATABASE_SSL = s.WEBHOOKS_DATABASE_TLS!; delete s.WEBHOOKS_DATABASE_TLS; }, /does not know WEBHOOKS_DATABASE_SSL/],
    ["the queue setting the trigger names is missing", "workers", (s) => { s.WEBHOOKS_QUEUE = s.WEBHOOKS_QUEUE_NAME!; delete s.WEBHOOKS_QUEUE_NAME; }, /WEBHOOKS_QUEUE_NAME/],
    ["the schedule setting the relay's timer names is missing", "relay", (s) => { delete s.WEBHOOKS_RELAY_SCHEDULE; }, /names app setting WEBHOOKS_RELAY_SCHEDULE, which is not set/],
    ["TLS off", "relay", (s) => { s.WEBHOOKS_DATABASE_TLS = "disable"; }, /pg_hba|no encryption|reject/i],
  ];
  for (const [what, app, change, refusal] of cases) {
    it(what, async (t) => {
      if (skip) return t.skip();
      const started = start(app, { env: appEnvironment(app, change), extraEnv: { ALLOWED_DESTINATIONS: "127.0.0.1" } });
      const outcome = started.then((fp) => (app === "relay" ? fp.invoke("timer", { name: "relay" }) : fp.invoke("registrations")));
      await expect(outcome).rejects.toThrow(refusal);
    }, 60_000);
  }

  it("no private CA for the database (NODE_EXTRA_CA_CERTS stands in for the public roots)", async (t) => {
    if (skip) return t.skip();
    const { NODE_EXTRA_CA_CERTS: _, ...env } = appEnvironment("relay");
    const fp = await start("relay", { env });
    await expect(fp.invoke("timer", { name: "relay" })).rejects.toThrow(/self.signed|unable to (get|verify)/i);
  }, 60_000);

  it("an app whose identity may not read a secret it refers to", (t) => {
    if (skip) return t.skip();
    expect(() => appEnvironment("ingress", (s) => { s.DATABASE_URL = s.PARTNERS!.replace("partner-signing-secrets", "database-admin-url"); })).toThrow(/may not read/);
  });

  it("another app's identity for the claim-check store", async (t) => {
    if (skip) return t.skip();
    const env = appEnvironment("ingress");
    const fp = await start("ingress", { env: { ...env, AZURE_CLIENT_ID: identityPeers.workers.userAssignedClientId } });
    const answer = await post(fp, "shop", signedDelivery(`evt_wrong_identity_${Date.now()}`, orderEvent("o-x", "order.created", { note: "y".repeat(300 * 1024) })));
    expect(answer.status).toBeGreaterThanOrEqual(500);
    // The function's log is written asynchronously (pino): it may trail the answer.
    await expect.poll(() => fp.output(), { timeout: 10_000 }).toMatch(/Unable to load the proper Managed Identity/);
  }, 60_000);
});

describe("Azure wiring: a user's handler module outside the repository, bundled into the processor (issue 16)", () => {
  it("a GitHub push (octokit-signed) and Stripe events (stripe SDK test header): HTTP → ingest → Service Bus → the processor built with INBOUND_HANDLERS", async (t) => {
    if (skip) return t.skip();
    const dir = mkdtempSync(join(tmpdir(), "wiring-azure-handlers-"));
    await buildFunctions(dir, { inboundHandlers: writeSenderHandlers() });
    const userProcessor = await startFunctionProcess({ driver: DRIVER, bundleDir: join(dir, "azure", "processor"), env: appEnvironment("workers") });
    processes.push(userProcessor);
    const ingest = await start("ingress");
    const push = await githubPush();
    const invoice = `in_wiring_azure_${Date.now()}`;
    const paid = stripeInvoiceEvent("invoice.paid", invoice);
    const created = stripeInvoiceEvent("invoice.created", invoice);
    for (const [partner, request] of [["github", push], ["stripe", created], ["stripe", paid]] as const) {
      const answer = await post(ingest, partner, request);
      expect(answer.status, ingest.output().slice(-3000)).toBe(202);
    }
    const state = async () => (await admin.query<{ state: string }>("SELECT state FROM inbound_entities WHERE machine = 'invoice' AND entity_id = $1", [invoice])).rows[0]?.state;
    for (let i = 0; i < 20 && ((await inbox(push.delivery)) !== "processed" || (await state()) !== "paid"); i++) {
      expect(await trigger(userProcessor), userProcessor.output().slice(-3000)).not.toBe("abandoned");
    }
    expect(await inbox(push.delivery)).toBe("processed");
    expect(await state()).toBe("paid");
    const pushed = await admin.query<{ type: string }>("SELECT type FROM outbound_events WHERE id = $1", [`gh-${push.delivery}`]);
    expect(pushed.rows[0]?.type).toBe("repo.pushed");
    const types = await admin.query<{ event_type: string }>("SELECT event_type FROM inbox_entries WHERE partner_event_id = ANY($1::text[]) ORDER BY event_type", [[push.delivery, paid.eventId, created.eventId]]);
    expect(types.rows.map((r) => r.event_type)).toEqual(["invoice.created", "invoice.paid", "push"]);
  }, 180_000);
});

/** One request as the Functions host's front end hands it to the app at management_url. */
const callManagement = (management: FunctionProcess): ManagementCall => async (method, path, options = {}) => {
  const base = String(json.output!.management_url!.value).replace(/^https:\/\/\$\{[^}]+\}/, "https://wiring-management.azurewebsites.net");
  const body = options.body === undefined ? "" : JSON.stringify(options.body);
  const headers: Record<string, string> = { host: new URL(base).host, ...(body ? { "content-type": "application/json" } : {}), ...(options.token ? { authorization: `Bearer ${options.token}` } : {}) };
  const r = await management.invoke<{ status: number; headers: Record<string, string>; body: string }>("http", { method, url: `${base}${path}`, headers, bodyBase64: Buffer.from(body).toString("base64") });
  return answer(r.status, Object.fromEntries(Object.entries(r.headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)])), r.body);
};


describe("Azure wiring: issue 13: the management Function App", () => {
  it("registers one anonymous catch-all HTTP function under the host's api prefix, every method", async (t) => {
    if (skip) return t.skip();
    const management = await start("management");
    expect(await management.invoke("registrations")).toEqual([expect.objectContaining({ name: "management", type: "httpTrigger", route: "{*path}", authLevel: "anonymous" })]);
    const [registration] = await management.invoke<Registration[]>("registrations");
    expect(registration!.methods).toEqual(expect.arrayContaining(["GET", "POST", "PATCH", "DELETE"]));
  }, 60_000);

  it("with the token from Key Vault: 401 for a wrong one; create a subscription, send an event, see it delivered, replay a dead letter; the CLI against management_url", async (t) => {
    if (skip) return t.skip();
    // The receiver is on this machine: only here may a subscription name it (the SSRF policy, as the relay's).
    const management = await start("management", { extraEnv: { ALLOWED_DESTINATIONS: "127.0.0.1,::1,localhost" } });
    const relay = await start("relay", { extraEnv: { ALLOWED_DESTINATIONS: "127.0.0.1,::1,localhost", ...ONE_DRAIN } });
    await managementScenario({
      call: callManagement(management),
      token: vault.get("admin-token")!,
      relayTick: () => relay.invoke("timer", { name: "relay" }, 120_000),
      output: () => `${management.output()}\n--- relay ---\n${relay.output()}`,
    });
  }, 180_000);
});

describe("Azure wiring: issue 24, the listening relay as the stack schedules it", () => {
  it("the two timers' NCRONTAB schedules and budget played (singleton timers, overlapping each other): events from the API, from SQL and by inbound forwarding reach the receiver with p50 < 2 s and p99 < 5 s; across handovers nothing is lost or sent twice; retries on time", async (t) => {
    if (skip) return t.skip();
    const settings = appResource("relay").body.app_settings as Record<string, string>;
    expect(settings.WEBHOOKS_RELAY_MODE).toBe("listening");
    // Six-field NCRONTAB: "<second> <minutes> * * * *"; the two timers as the host would fire them.
    const timerOf = (expression: string) => {
      const m = /^(\d+) (?:\*\/(\d+)|(\d+)-59\/(\d+)) \* \* \* \*$/.exec(expression);
      expect(m, expression).not.toBeNull();
      const every = Number(m![2] ?? m![4]);
      return { intervalSeconds: every * 60, offsetSeconds: Number(m![1]) + Number(m![3] ?? 0) * 60 };
    };
    const relayTimer = timerOf(settings.WEBHOOKS_RELAY_SCHEDULE!);
    const offsetTimer = timerOf(settings.WEBHOOKS_RELAY_OFFSET_SCHEDULE!);
    expect(offsetTimer.intervalSeconds).toBe(relayTimer.intervalSeconds);
    expect(offsetTimer.offsetSeconds - relayTimer.offsetSeconds).toBe(relayTimer.intervalSeconds / 2);
    const budget = Number(settings.WEBHOOKS_RELAY_BUDGET_SECONDS);
    expect(budget).toBeLessThan(relayTimer.intervalSeconds); // a timer's run ends before its next tick
    const tuning = {
      ALLOWED_DESTINATIONS: "127.0.0.1,::1,localhost", ...SCALED_ATTEMPT_TIMEOUT,
      // The clock's scale (support/realtime.ts), applied to the stack's budget.
      WEBHOOKS_RELAY_BUDGET_SECONDS: String(Math.ceil(scaled(budget) / 1000)),
    };
    // One Function App instance runs both timers (each a singleton across instances).
    const relay = await start("relay", { extraEnv: tuning });
    const management = await start("management", { extraEnv: { ALLOWED_DESTINATIONS: "127.0.0.1,::1,localhost" } });
    const processor = await start("workers");
    const api = callManagement(management);
    const token = vault.get("admin-token")!;
    let n = 0;
    const result = await realtimeScenario({
      db: admin,
      receiver: realtime,
      sendViaApi: async (type, data) => {
        const sent = await api("POST", "/events", { token, body: { type, data } });
        expect(sent.status, sent.text).toBe(201);
      },
      forwardInbound: async (eventId, body) => {
        const message = inlineMessage({ partner: FORWARD_PARTNER, eventId, eventType: "partner.thing", receivedAt: new Date() }, Buffer.from(body));
        const id = `rt-${++n}`;
        await processor.invoke("serviceBus", { queueName, body: message.body, triggerMetadata: {
          DeliveryCount: 1, MessageId: id, ContentType: "application/json", EnqueuedTimeUtc: new Date().toISOString(), LockToken: id, SequenceNumber: n, ApplicationProperties: message.attributes ?? {},
        } });
      },
    }, [
      { name: "relay", offsetMs: 0, intervalMs: scaled(relayTimer.intervalSeconds), singleton: true, run: () => relay.invoke("timer", { name: "relay" }, 120_000) },
      { name: "relayOffset", offsetMs: scaled(offsetTimer.offsetSeconds - relayTimer.offsetSeconds), intervalMs: scaled(offsetTimer.intervalSeconds), singleton: true, run: () => relay.invoke("timer", { name: "relayOffset" }, 120_000) },
    ], { cloud: "azure" });
    expectRealtime(result, () => `${relay.output().slice(-3000)}\n---\n${processor.output().slice(-1500)}`);
  }, 240_000);
});

describe("Azure wiring: issue 24, relayMode \"scheduled\": the management app wakes the relay", () => {
  it("an API send is delivered within seconds through the wake-up queue (sent by the management app, read by the relay app's relayWake trigger); a write outside the API waits for the next timer run", async (t) => {
    if (skip) return t.skip();
    const scheduled = await synthBuilt("azure", { relayMode: "scheduled" });
    const listening = { stack, json };
    // The helpers read the stack under test from these.
    stack = scheduled;
    json = scheduled.json;
    try {
      // What the stack says: a short-lived queue; the management identity may send to it and the
      // relay's receive from it, nothing more; both apps name it; the relay runs one message at a time.
      const wake = resourceAt(json, "azurerm_servicebus_queue", "queue/relay-wake");
      expect(wake.body).toMatchObject({ default_message_ttl: "PT1M", max_delivery_count: 1, dead_lettering_on_message_expiration: false });
      const grantsOn = (queue: SynthResource) => resourcesOf(json, "azurerm_role_assignment").filter((g) => String(g.body.scope).includes(key(queue, "id")))
        .map((g) => ({ role: g.body.role_definition_name, app: (Object.keys(APPS) as AppId[]).find((id) => String(g.body.principal_id).includes(key(identityOf(id), "principal_id"))) }));
      expect(grantsOn(wake)).toEqual(expect.arrayContaining([{ role: "Azure Service Bus Data Sender", app: "management" }, { role: "Azure Service Bus Data Receiver", app: "relay" }]));
      expect(grantsOn(wake)).toHaveLength(2);
      const settingsOf = (id: AppId) => appResource(id).body.app_settings as Record<string, string>;
      for (const id of ["management", "relay"] as const) expect(settingsOf(id).WEBHOOKS_RELAY_WAKE_QUEUE).toBe(`\${${key(wake, "name")}}`);
      expect(settingsOf("relay").AzureFunctionsJobHost__extensions__serviceBus__maxConcurrentCalls).toBe("1");
      expect(settingsOf("relay").WEBHOOKS_RELAY_MODE).toBe("scheduled");
      expect((resourceAt(listening.json, "azurerm_linux_function_app", "management/app").body.app_settings as Record<string, string>).WEBHOOKS_RELAY_WAKE_QUEUE).toBeUndefined();

      const wakeName = String(wake.body.name);
      peer.createQueue(wakeName, { maxDeliveryCount: Number(wake.body.max_delivery_count) });
      const local = { ALLOWED_DESTINATIONS: "127.0.0.1,::1,localhost" };
      const relay = await start("relay", { extraEnv: local });
      const management = await start("management", { extraEnv: local });
      // The host's trigger on the wake-up queue: receive, run relayWake, complete.
      const wakeReceiver = sbClient.createReceiver(wakeName, { receiveMode: "peekLock", maxAutoLockRenewalDurationInMs: 0, skipParsingBodyAsJson: true });
      const woken = new Set<Promise<unknown>>();
      let wakeUps = 0;
      let pumping = true;
      const pump = (async () => {
        while (pumping) {
          const [m] = await wakeReceiver.receiveMessages(1, { maxWaitTimeInMs: 200 });
          if (!m) continue;
          wakeUps++;
          expect(JSON.parse(bodyText(m))).toEqual({ wake: true });
          const run = relay.invoke("serviceBus", { queueName: wakeName, body: bodyText(m), triggerMetadata: bindingData(m) }, 120_000)
            .then(() => wakeReceiver.completeMessage(m));
          woken.add(run);
          void run.finally(() => woken.delete(run));
        }
      })();
      const api = callManagement(management);
      const token = vault.get("admin-token")!;
      try {
        await wakeScenario({
          db: admin,
          receiver: realtime,
          sendViaApi: async (type, data) => {
            const sent = await api("POST", "/events", { token, body: { type, data } });
            expect(sent.status, sent.text).toBe(201);
          },
          wakeUps: () => wakeUps,
          wokenRunsEnded: async () => { await Promise.all([...woken]); },
          scheduledRun: async () => { await relay.invoke("timer", { name: "relay" }, 120_000); },
        }, "azure");
      } finally {
        pumping = false;
        await pump;
        await wakeReceiver.close();
      }
      expect(relay.output()).toMatch(/"woken":true/);
      expect(peer.stats(wakeName)).toMatchObject({ active: 0, locked: 0 });
    } finally {
      stack = listening.stack;
      json = listening.json;
    }
  }, 180_000);
});
