/**
 * Must-show 1, AWS: the stack's cdk.tf.json, synthesized from the real bundles, started as Lambda
 * would start it. Each Lambda function's bundle runs in its own Node 22 process with exactly the
 * environment the stack gives it and the handler its `handler` attribute names; every `${…}`
 * reference is resolved to a local stand-in (an unknown one fails the test):
 * - SQS, S3 and Secrets Manager: moto, in the stack's region, with the names the stack gives
 *   (AWS_ENDPOINT_URL points the SDKs there);
 * - Aurora: a TLS-only PostgreSQL 15 with a private CA, dialled as `localhost` with verify-full;
 *   the CA is what the stand-in for the runtime's Amazon CA bundle (`/var/runtime/ca-cert.pem`,
 *   which NODE_EXTRA_CA_CERTS names) holds, so a stack that stops setting it fails here;
 * - the Lambda runtime adds what it adds on AWS: region, credentials, the function's name.
 * Only the test adds ALLOWED_DESTINATIONS=127.0.0.1,::1,localhost to the relay and the management
 * function (the receivers are local; on AWS the SSRF policy refuses them, as it should). The admin
 * token and ENCRYPTION_KEYS are what `terraform console` evaluates the stack's write-only
 * expressions to (test/wiring/support/generatedSecrets.ts), put in moto's Secrets Manager.
 *
 * What it cannot reproduce: IAM evaluation (the roles' policies, rds-db:connect, the bucket
 * policy), the IAM token check itself (webhooks_app is let in without a password: the token the
 * function signs is sent, not checked), the VPC, NAT gateway and security groups, API Gateway
 * (its 10 MB limit, throttling, the route; the event is built here as payload 2.0), Lambda's
 * 6 MB invocation limit, the event source mapping (test/support/sqsEventSource.ts plays it),
 * EventBridge Scheduler (the relay is invoked as it would be), SNS e-mail, and Aurora itself.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createHttpServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CreateQueueCommand, GetQueueAttributesCommand, PurgeQueueCommand, ReceiveMessageCommand, SQSClient, type Message } from "@aws-sdk/client-sqs";
import { Webhook } from "standardwebhooks";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { CreateSecretCommand, PutSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import type { TerraformJson } from "../../stacks/app.js";
import { block, references, resourceAt, resourcesOf, type SynthResource } from "../../stacks/terraformJson.js";
import { testConfig } from "../stacks/synthFixture.js";
import { openPostgres } from "../../shared/db/postgres.js";
import type { Database } from "../../shared/db/port.js";
import { enqueue } from "../../shared/outbound/enqueue.js";
import { createSubscription } from "../../shared/outbound/subscriptions.js";
import { MOTO_CLIENT_CONFIG, MOTO_URL, motoAvailable, skipUnlessAvailable } from "../support/emulators.js";
import { pollOnce } from "../support/sqsEventSource.js";
import { apiGatewayEvent as apiEvent, inboxEntry, orderEvent, PARTNERS_JSON, signedDelivery } from "../functions/support.js";
import { startFunctionProcess, type FunctionProcess } from "./support/functionProcess.js";
import { wiringTeardown } from "./support/teardown.js";
import { skipUnlessNode22 } from "./support/node22.js";
import { parseReference, resolveRefs } from "./support/terraformRefs.js";
import { startTlsPostgres, tlsPostgresUnavailable, type TlsPostgres } from "./support/tlsPostgres.js";
import { BUNDLED_HANDLERS, synthBuilt, type BuiltStack } from "./support/builtStacks.js";
import { deployGuideSequence, outboundCausedBy, relayUntilReceived } from "./support/deployGuide.js";
import { makeCertificate } from "./support/certificates.js";
import { listenLocal, verifyingHandler, type Received } from "./support/receivers.js";
import { buildFunctions } from "../../functions/build.js";
import { answer, managementScenario, type ManagementCall } from "./support/managementScenario.js";
import { generatedValue } from "./support/generatedSecrets.js";
import { githubPush, SENDER_PARTNERS, stripeInvoiceEvent, writeSenderHandlers } from "../inbound/support/realSenders.js";
import { toSqsRecord } from "../support/sqsEventSource.js";
import { inlineMessage } from "../../shared/cloud/inboundMessage.js";
import { poisonEvent } from "../functions/support.js";
import { expectRealtime, FORWARD_PARTNER, inboxRetryScenario, ONE_DRAIN, realtimeScenario, SCALED_ATTEMPT_TIMEOUT, scaled, startRealtimeReceiver, TIME_SCALE, wakeScenario, type RealtimeReceiver } from "./support/realtime.js";
import { startLambdaInvokeTestPeer } from "../support/lambdaInvokeTestPeer.js";
import { startOtlpTestPeer } from "../support/otlpTestPeer.js";
import { SPANS } from "../../shared/telemetry/names.js";
import { randomBytes } from "node:crypto";

const DRIVER = fileURLToPath(new URL("./drivers/aws.mjs", import.meta.url));
/** The Lambda runtime's Amazon CA bundle; here, a file holding the stand-ins' private CAs. */
const LAMBDA_CA_BUNDLE = "/var/runtime/ca-cert.pem";
const ALERT_SECRET = `whsec_${Buffer.from("wiring-alert-secret-32-bytes!!!!").toString("base64")}`;
const SUBSCRIBER_SECRET = `whsec_${Buffer.from("wiring-subscriber-secret-32bytes").toString("base64")}`;
/**
 * Must-show 4 (issue 31): a customer's SQS queue the relay delivers to, named in the stack's
 * relayDestinations by the ARN it has on moto (moto's account, the stack's region).
 */
const DESTINATION_QUEUE = "customer-orders-wiring";
const DESTINATION_ARN = `arn:aws:sqs:${testConfig().awsRegion}:123456789012:${DESTINATION_QUEUE}`;


let skip: string | undefined;
let stack: BuiltStack;
let json: TerraformJson;
let pg: TlsPostgres;
let admin: Database;
let sqs: SQSClient;
let region: string;
let queueUrl: string;
let queueArn: string;
let caBundle: string;
let refs: Map<string, string>;
const { processes, closers } = wiringTeardown();
const received: Received[] = [];
const alerts: Received[] = [];
let subscriberUrl: string;
let realtime: RealtimeReceiver;
/** What the stack's generated secrets hold here: Terraform's own evaluation of the stack's expressions. */
let adminToken: string;

const functionAt = (suffix: string) => resourceAt(json, "aws_lambda_function", suffix);
const key = (r: SynthResource, attribute: string) => `${r.type}.${r.name}.${attribute}`;

/** The environment Lambda would give `fn`: the stack's variables resolved, plus what the runtime itself sets. */
function lambdaEnvironment(fn: SynthResource, variables = block(fn.body.environment).variables as Record<string, string>): Record<string, string> {
  const resolved = resolveRefs(variables, (expression) => {
    const ref = parseReference(expression);
    return ref ? refs.get(`${ref.type}.${ref.name}.${ref.path.join(".")}`) : undefined;
  }, `${fn.path} environment`);
  // The runtime's file system: its CA bundle is where the stand-ins' CAs are.
  if (resolved.NODE_EXTRA_CA_CERTS === LAMBDA_CA_BUNDLE) resolved.NODE_EXTRA_CA_CERTS = caBundle;
  return {
    ...resolved,
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
    AWS_ACCESS_KEY_ID: MOTO_CLIENT_CONFIG.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: MOTO_CLIENT_CONFIG.credentials.secretAccessKey,
    AWS_LAMBDA_FUNCTION_NAME: String(fn.body.function_name),
    AWS_ENDPOINT_URL: MOTO_URL,
  };
}

async function start(suffix: string, options: { extraEnv?: Record<string, string>; env?: Record<string, string>; handler?: string; timeoutSeconds?: number; stack?: BuiltStack } = {}): Promise<FunctionProcess> {
  const built = options.stack ?? stack;
  const fn = resourceAt(built.json, "aws_lambda_function", suffix);
  const name = suffix.split("/").at(-2)!;
  const fp = await startFunctionProcess({
    driver: DRIVER,
    bundleDir: built.bundleDir(name),
    env: { ...(options.env ?? lambdaEnvironment(fn)), ...options.extraEnv },
    args: [options.handler ?? String(fn.body.handler), String(options.timeoutSeconds ?? fn.body.timeout), String(fn.body.function_name)],
  });
  processes.push(fp);
  return fp;
}

beforeAll(async () => {
  skip = (await skipUnlessAvailable("moto_server", MOTO_URL, motoAvailable)) ?? tlsPostgresUnavailable() ?? (await skipUnlessNode22());
  if (skip) {
    if (process.env.CI && process.env.CI !== "false") throw new Error(`${skip}. CI must run the wiring tests.`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), "wiring-aws-"));
  const tls = await makeCertificate(dir, "DNS:localhost", "wiring alert receiver CA");
  const alertServer = await listenLocal(() => createHttpsServer({ key: tls.key, cert: tls.cert }, verifyingHandler(ALERT_SECRET, alerts, () => 204)) as unknown as ReturnType<typeof createHttpServer>);
  closers.push(alertServer.close);
  // The subscriber: /ok accepts, /broken answers 400 (a permanent failure: dead at once).
  const subscriber = await listenLocal(() => createHttpServer(verifyingHandler(SUBSCRIBER_SECRET, received, (path) => (path === "/broken" ? 400 : 200))));
  closers.push(subscriber.close);
  subscriberUrl = `http://127.0.0.1:${subscriber.port}`;
  realtime = await startRealtimeReceiver();
  closers.push(realtime.close);

  pg = await startTlsPostgres({ trustRoles: ["webhooks_app"], mimicAurora: true });
  closers.push(() => pg.stop());
  caBundle = join(dir, "ca-cert.pem");
  writeFileSync(caBundle, `${pg.caPem}\n${tls.ca}`);

  stack = await synthBuilt("aws", { alertWebhookUrl: `https://localhost:${alertServer.port}/alerts`, alertEmail: "ops@example.com", relayDestinations: [DESTINATION_ARN] });
  json = stack.json;
  region = String((json.provider as { aws: { region: string }[] }).aws[0]!.region);
  const client = { ...MOTO_CLIENT_CONFIG, region };
  sqs = new SQSClient(client);
  const secrets = new SecretsManagerClient(client);
  const putSecret = async (name: string, value: string) => {
    try {
      return (await secrets.send(new CreateSecretCommand({ Name: name, SecretString: value }))).ARN!;
    } catch {
      return (await secrets.send(new PutSecretValueCommand({ SecretId: name, SecretString: value }))).ARN!;
    }
  };
  const queueOf = async (r: SynthResource, attributes: Record<string, string> = {}) => {
    const url = (await sqs.send(new CreateQueueCommand({ QueueName: String(r.body.name), Attributes: attributes }))).QueueUrl!;
    await sqs.send(new PurgeQueueCommand({ QueueUrl: url })).catch(() => {});
    const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn"] }))).Attributes!.QueueArn!;
    return { url, arn };
  };

  const dlqResource = resourceAt(json, "aws_sqs_queue", "queue/dlq");
  const queueResource = resourceAt(json, "aws_sqs_queue", "queue/queue");
  const dlq = await queueOf(dlqResource);
  const redrive = String(queueResource.body.redrive_policy).replace(/\$\{[^}]+\}/, dlq.arn);
  const main = await queueOf(queueResource, { RedrivePolicy: redrive, VisibilityTimeout: "5" });
  queueUrl = main.url;
  queueArn = main.arn;
  const bucket = `${String(resourceAt(json, "aws_s3_bucket", "claim-checks/bucket").body.bucket_prefix)}${Date.now().toString(36)}`;
  await new S3Client({ ...client, forcePathStyle: true }).send(new CreateBucketCommand({ Bucket: bucket, CreateBucketConfiguration: { LocationConstraint: region as never } }));
  const partnerSecret = resourceAt(json, "aws_secretsmanager_secret", "secrets/partner-secrets");
  // The two secrets the stack generates (write-only), with the value its expression evaluates to.
  const generated = async (name: string) => {
    const secret = resourceAt(json, "aws_secretsmanager_secret", `secrets/${name}`);
    const version = resourcesOf(json, "aws_secretsmanager_secret_version").find((v) => String(v.body.secret_id).includes(`${secret.type}.${secret.name}.`))!;
    const value = generatedValue(String(version.body.secret_string_wo));
    // The rows this test writes itself (createSubscription in this process) are under the test suite's
    // key: the store holds it after the stack's, as a key rotation would (the first one encrypts).
    const stored = name === "encryption-keys" ? `${value},${process.env.ENCRYPTION_KEYS}` : value;
    return { key: key(secret, "arn"), value, arn: await putSecret(String(secret.body.name), stored) };
  };
  const token = await generated("admin-token");
  adminToken = token.value;
  const keys = await generated("encryption-keys");
  const alertSecret = resourceAt(json, "aws_secretsmanager_secret", "secrets/alert-webhook-secret");
  const cluster = resourceAt(json, "aws_rds_cluster", "database/cluster");
  // RDS keeps the master secret under its own name; its content is the admin's credentials.
  const masterSecretArn = await putSecret(`rds!cluster-wiring-${Date.now().toString(36)}`, JSON.stringify({ username: cluster.body.master_username, password: pg.adminPassword }));

  refs = new Map([
    [key(queueResource, "url"), main.url],
    [key(dlqResource, "url"), dlq.url],
    [key(resourceAt(json, "aws_s3_bucket", "claim-checks/bucket"), "bucket"), bucket],
    // The test partner, plus GitHub and Stripe for the handler module block (issue 16).
    [key(partnerSecret, "arn"), await putSecret(String(partnerSecret.body.name), JSON.stringify({ ...JSON.parse(PARTNERS_JSON), ...SENDER_PARTNERS, ...realtime.partners() }))],
    [key(alertSecret, "arn"), await putSecret(String(alertSecret.body.name), ALERT_SECRET)],
    [key(cluster, "endpoint"), "localhost"],
    [key(cluster, "port"), String(pg.port)],
    [key(cluster, "master_user_secret.0.secret_arn"), masterSecretArn],
    [token.key, token.arn],
    [keys.key, keys.arn],
  ]);
  admin = openPostgres({ connectionString: pg.adminUrl, ssl: pg.ssl, max: 2 });
  closers.push(() => admin.close());
}, 240_000);

const inbox = async (eventId: string) => (await inboxEntry(admin, eventId, null))?.status;

describe("AWS wiring: the synthesized stack's functions on Node 22 with local stand-ins", () => {
  let processor: FunctionProcess;
  let relay: FunctionProcess;
  const relayTick = () => relay.invoke<{ deliveriesAttempted: number; alertsRaised?: number; alertError?: string }>("invoke", {});

  it("migrate runs first, as the deploy's aws_lambda_invocation does, and prepares webhooks_app for IAM logins", async (t) => {
    if (skip) return t.skip();
    const invocation = resourceAt(json, "aws_lambda_invocation", "migration/run");
    const migrate = await start("migration/migrate/function");
    expect(migrate.version).toMatch(/^v22\./);
    const result = await migrate.invoke<{ applied: string[]; appRole: string }>("invoke", JSON.parse(String(invocation.body.input)));
    expect(result.appRole).toBe("webhooks_app");
    expect(result.applied.length).toBeGreaterThan(0);
    const role = await admin.query<{ iam: boolean; superuser: boolean }>(
      "SELECT pg_has_role('webhooks_app', 'rds_iam', 'MEMBER') AS iam, rolsuper AS superuser FROM pg_roles WHERE rolname = 'webhooks_app'");
    expect(role.rows[0]).toEqual({ iam: true, superuser: false });
    // Again, as a later deploy would: nothing left to apply.
    expect((await migrate.invoke<{ applied: string[] }>("invoke", {})).applied).toEqual([]);
  }, 120_000);

  it("a signed webhook: API Gateway event → ingest → SQS → processor (SQS event) → inbox processed, as webhooks_app over verified TLS", async (t) => {
    if (skip) return t.skip();
    const ingest = await start("ingress/ingest/function");
    processor = await start("workers/processor/function");
    const small = `evt_wiring_${Date.now()}`;
    const big = `evt_wiring_big_${Date.now()}`;
    const answer = await ingest.invoke<{ statusCode: number; body: string }>("invoke", apiEvent("shop", signedDelivery(small, orderEvent("o-wiring", "order.created"))));
    expect(answer.statusCode).toBe(202);
    // Above the queue's 256 KiB, under the stack's MAX_INBOUND_BODY_BYTES: by claim-check through S3.
    const large = await ingest.invoke<{ statusCode: number; body: string }>("invoke",
      apiEvent("shop", signedDelivery(big, orderEvent("o-wiring-big", "order.created", { note: "x".repeat(1024 * 1024) }))));
    expect(large.statusCode).toBe(202);
    expect(JSON.parse(large.body)).toMatchObject({ claimCheck: true });
    for (let i = 0; i < 50 && ((await inbox(small)) !== "processed" || (await inbox(big)) !== "processed"); i++) {
      const r = await pollOnce(sqs, queueUrl, queueArn, (event) => processor.invoke("invoke", event));
      expect(r.failed, processor.output().slice(-3000)).toEqual([]);
    }
    expect(await inbox(small)).toBe("processed");
    expect(await inbox(big)).toBe("processed");
    // The processor's pooled connections: the role the stack names, over TLS (seen by the superuser).
    const su = pg.superuser();
    await su.connect();
    try {
      const sessions = await su.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.usename = 'webhooks_app' AND s.ssl");
      expect(sessions.rows[0]!.n).toBeGreaterThan(0);
    } finally {
      await su.end();
    }
  }, 120_000);

  it("an outbox event → the relay (invoked as the scheduler does) → delivered to a receiver that verifies the signature", async (t) => {
    if (skip) return t.skip();
    // The receivers are on this machine: only here may the relay reach them.
    relay = await start("relay/relay/function", { extraEnv: { ALLOWED_DESTINATIONS: "127.0.0.1,::1,localhost", ...ONE_DRAIN } });
    await createSubscription(admin, { url: `${subscriberUrl}/ok`, eventTypes: ["order.shipped"], secrets: [SUBSCRIBER_SECRET] });
    const { eventId: id } = await enqueue(admin, { type: "order.shipped", data: { order_id: "o-wiring" } });
    const summary = await relayTick();
    expect(summary.deliveriesAttempted, relay.output().slice(-3000)).toBeGreaterThan(0);
    const delivered = received.filter((r) => r.path === "/ok" && r.type === "order.shipped");
    expect(delivered).toHaveLength(1);
    expect(delivered[0]!.verified).toBe(true);
    expect(delivered[0]!.body).toContain(id);
  }, 120_000);

  it("a dead letter → an alert delivered to ALERT_WEBHOOK_URL, signed with the secret from Secrets Manager", async (t) => {
    if (skip) return t.skip();
    await createSubscription(admin, { url: `${subscriberUrl}/broken`, eventTypes: ["order.refunded"], secrets: [SUBSCRIBER_SECRET] });
    await enqueue(admin, { type: "order.refunded", data: { order_id: "o-wiring" } });
    for (let i = 0; i < 5 && !alerts.some((a) => a.type === "alert.dead_letter"); i++) {
      const summary = await relayTick();
      expect(summary.alertError, relay.output().slice(-3000)).toBeUndefined();
    }
    const alert = alerts.find((a) => a.type === "alert.dead_letter");
    expect(alert, relay.output().slice(-3000)).toBeDefined();
    expect(alert!.path).toBe("/alerts");
    expect(alert!.verified).toBe(true);
  }, 120_000);

  it("Must-show 3: docs/deploy-aws.md's first delivered webhook as written: the handler module of its build, its subscription, its signed partner event → the outbound event it causes, delivered", async (t) => {
    if (skip) return t.skip();
    const guide = deployGuideSequence("aws");
    expect(guide.handlersModule).toBe(BUNDLED_HANDLERS);
    await createSubscription(admin, { url: `${subscriberUrl}/guide`, eventTypes: [guide.subscribedPattern], secrets: [SUBSCRIBER_SECRET] });
    const ingest = await start("ingress/ingest/function");
    const id = `msg_guide_${Date.now()}`;
    const answer = await ingest.invoke<{ statusCode: number; body: string }>("invoke", apiEvent(guide.partner, signedDelivery(id, guide.inboundBody)));
    expect(answer.statusCode, answer.body).toBe(202);
    for (let i = 0; i < 50 && (await inbox(id)) !== "processed"; i++) {
      const r = await pollOnce(sqs, queueUrl, queueArn, (event) => processor.invoke("invoke", event));
      expect(r.failed, processor.output().slice(-3000)).toEqual([]);
    }
    // Processed by the bundled order domain, not `ignored` as a build without handlers leaves it.
    expect(await inboxEntry(admin, id, guide.partner)).toMatchObject({ status: "processed" });
    const delivered = await relayUntilReceived("/guide", received, relayTick);
    expect(delivered, relay.output().slice(-3000)).toHaveLength(1);
    expect(delivered[0]!.verified).toBe(true);
    expect(JSON.parse(delivered[0]!.body)).toMatchObject(outboundCausedBy(guide));
  }, 120_000);
});

describe("AWS wiring: Must-show 4 (issue 31): the relay bundle delivers to an SQS destination", () => {
  it("relayDestinations grants the relay's role sqs:SendMessage on exactly the queue named; the relay bundle, with the stack's environment, sends the signed envelope there (moto), its Standard Webhooks headers as message attributes that standardwebhooks verifies", async (t) => {
    if (skip) return t.skip();
    const created = await sqs.send(new CreateQueueCommand({ QueueName: DESTINATION_QUEUE }));
    const destinationUrl = created.QueueUrl!;
    await sqs.send(new PurgeQueueCommand({ QueueUrl: destinationUrl })).catch(() => {});
    const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: destinationUrl, AttributeNames: ["QueueArn"] }))).Attributes!.QueueArn!;
    // What moto cannot evaluate, read from the stack: the one grant, on this queue's ARN, to the relay's role alone.
    expect(arn).toBe(DESTINATION_ARN);
    const grant = resourceAt(json, "aws_iam_role_policy", "identities/relay-destinations-policy");
    expect(references(grant.body.role, resourceAt(json, "aws_iam_role", "identities/relay-role"), "id")).toBe(true);
    expect(JSON.parse(String(grant.body.policy)).Statement).toEqual([{ Effect: "Allow", Action: ["sqs:SendMessage"], Resource: [arn] }]);
    expect(resourcesOf(json, "aws_iam_role_policy").filter((p) => String(p.body.policy).includes(DESTINATION_QUEUE)).map((p) => p.path)).toEqual([grant.path]);
    expect(functionAt("relay/relay/function").body.depends_on).toContain(`${grant.type}.${grant.name}`);

    // The relay as Lambda runs it: the stack's environment (no destination setting: the role's
    // credentials, as the runtime gives them, and the queue URL from the subscription).
    const relay = await start("relay/relay/function", { extraEnv: { ALLOWED_DESTINATIONS: "127.0.0.1,::1,localhost", ...ONE_DRAIN } });
    const sub = await createSubscription(admin, { destination: { kind: "sqs", queueUrl: destinationUrl, region }, eventTypes: ["order.packed"], secrets: [SUBSCRIBER_SECRET] });
    const { eventId } = await enqueue(admin, { type: "order.packed", data: { order_id: "o-destination" } });
    const messages: Message[] = [];
    for (let i = 0; i < 10 && messages.length === 0; i++) {
      const summary = await relay.invoke<{ deliveriesAttempted: number }>("invoke", {});
      expect(summary.deliveriesAttempted, relay.output().slice(-3000)).toBeGreaterThanOrEqual(0);
      const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: destinationUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: ["All"] }));
      messages.push(...(got.Messages ?? []));
    }
    expect(messages, relay.output().slice(-3000)).toHaveLength(1);
    const message = messages[0]!;
    const attribute = (name: string) => message.MessageAttributes?.[name]?.StringValue;
    const headers = { "webhook-id": attribute("webhook-id")!, "webhook-timestamp": attribute("webhook-timestamp")!, "webhook-signature": attribute("webhook-signature")! };
    expect(new Webhook(SUBSCRIBER_SECRET).verify(message.Body!, headers)).toMatchObject({ type: "order.packed", data: { order_id: "o-destination" } });
    const delivery = await admin.query<{ id: string; status: string }>("SELECT id, status FROM outbound_deliveries WHERE event_id = $1 AND subscription_id = $2", [eventId, sub.id]);
    expect(delivery.rows).toEqual([{ id: headers["webhook-id"], status: "delivered" }]);
  }, 120_000);
});

describe("AWS wiring: where the stack and a function disagree, the function refuses", () => {
  /** The relay's stack environment with one change, as a stack bug would make it. */
  const relayWith = (change: (variables: Record<string, string>) => void) => {
    const variables = { ...(block(functionAt("relay/relay/function").body.environment).variables as Record<string, string>) };
    change(variables);
    return lambdaEnvironment(functionAt("relay/relay/function"), variables);
  };
  const cases: [string, () => { env?: Record<string, string>; handler?: string }, RegExp][] = [
    ["a setting name the function does not know", () => ({ env: relayWith((v) => { v.WEBHOOKS_DATABASE_SSL = v.WEBHOOKS_DATABASE_TLS!; delete v.WEBHOOKS_DATABASE_TLS; }) }), /does not know WEBHOOKS_DATABASE_SSL/],
    ["no NODE_EXTRA_CA_CERTS (Amazon's CA bundle not loaded)", () => ({ env: relayWith((v) => { delete v.NODE_EXTRA_CA_CERTS; }) }), /self.signed|unable to (get|verify)/i],
    ["TLS off", () => ({ env: relayWith((v) => { v.WEBHOOKS_DATABASE_TLS = "disable"; }) }), /pg_hba|no encryption|reject/i],
    ["another role (not the one migrate prepared)", () => ({ env: relayWith((v) => { v.WEBHOOKS_DATABASE_USER = "webhooks_reader"; }) }), /password authentication failed|webhooks_reader/],
  ];
  for (const [what, variant, refusal] of cases) {
    it(`${what}`, async (t) => {
      if (skip) return t.skip();
      const fp = await start("relay/relay/function", variant());
      await expect(fp.invoke("invoke", {})).rejects.toThrow(refusal);
    }, 60_000);
  }

  it("a handler the bundle does not export", async (t) => {
    if (skip) return t.skip();
    await expect(start("relay/relay/function", { handler: "index.main" })).rejects.toThrow(/HandlerNotFound: index\.main/);
  }, 60_000);

});

describe("AWS wiring: a user's handler module outside the repository, bundled into the processor (issue 16)", () => {
  it("a GitHub push (octokit-signed) and Stripe events (stripe SDK test header): API Gateway → ingest → SQS → the processor built with INBOUND_HANDLERS", async (t) => {
    if (skip) return t.skip();
    const dir = mkdtempSync(join(tmpdir(), "wiring-aws-handlers-"));
    await buildFunctions(dir, { inboundHandlers: writeSenderHandlers() });
    const fn = functionAt("workers/processor/function");
    const userProcessor = await startFunctionProcess({
      driver: DRIVER, bundleDir: join(dir, "aws", "processor"), env: lambdaEnvironment(fn),
      args: [String(fn.body.handler), String(fn.body.timeout), String(fn.body.function_name)],
    });
    processes.push(userProcessor);
    const ingest = await start("ingress/ingest/function");
    const push = await githubPush();
    const invoice = `in_wiring_${Date.now()}`;
    const paid = stripeInvoiceEvent("invoice.paid", invoice);
    const created = stripeInvoiceEvent("invoice.created", invoice);
    for (const [partner, request] of [["github", push], ["stripe", paid], ["stripe", created]] as const) {
      const answer = await ingest.invoke<{ statusCode: number; body: string }>("invoke", apiEvent(partner, request));
      expect(answer.statusCode, answer.body).toBe(202);
    }
    const state = async () => (await admin.query<{ state: string }>("SELECT state FROM inbound_entities WHERE machine = 'invoice' AND entity_id = $1", [invoice])).rows[0]?.state;
    for (let i = 0; i < 50 && ((await inbox(push.delivery)) !== "processed" || (await state()) !== "paid"); i++) {
      const r = await pollOnce(sqs, queueUrl, queueArn, (event) => userProcessor.invoke("invoke", event));
      expect(r.failed, userProcessor.output().slice(-3000)).toEqual([]);
    }
    expect(await inbox(push.delivery)).toBe("processed");
    const pushed = await admin.query<{ type: string; body: string }>("SELECT type, body FROM outbound_events WHERE id = $1", [`gh-${push.delivery}`]);
    expect(pushed.rows[0]?.type).toBe("repo.pushed");
    expect(await state()).toBe("paid");
    const types = await admin.query<{ partner_event_id: string; event_type: string }>(
      "SELECT partner_event_id, event_type FROM inbox_entries WHERE partner_name IN ('github', 'stripe') AND partner_event_id = ANY($1::text[]) ORDER BY event_type",
      [[push.delivery, paid.eventId, created.eventId]]);
    expect(types.rows.map((r) => r.event_type)).toEqual(["invoice.created", "invoice.paid", "push"]);
  }, 180_000);
});

/** One request as API Gateway's HTTP API hands it to the route `ANY /api/{proxy+}` (payload 2.0, stage $default). */
const callManagement = (management: FunctionProcess): ManagementCall => async (method, path, options = {}) => {
  const route = resourceAt(json, "aws_apigatewayv2_route", "management/route").body.route_key as string;
  const base = new URL(String(json.output!.management_url!.value).replace(/^\$\{[^}]+\}/, "https://wiring.execute-api.eu-west-1.amazonaws.com/"));
  const url = new URL(`${base.pathname}${path}`, base);
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = { host: url.host, "user-agent": "webhooks-cli", ...(body ? { "content-type": "application/json" } : {}), ...(options.token ? { authorization: `Bearer ${options.token}` } : {}) };
  const event = {
    version: "2.0",
    routeKey: route,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    queryStringParameters: url.search ? Object.fromEntries(url.searchParams) : undefined,
    pathParameters: { proxy: url.pathname.replace(/^\/api\//, "") },
    isBase64Encoded: false,
    body,
    requestContext: {
      accountId: "123456789012", apiId: "wiring", domainName: url.host, domainPrefix: "wiring",
      http: { method, path: url.pathname, protocol: "HTTP/1.1", sourceIp: "203.0.113.9", userAgent: "webhooks-cli" },
      requestId: `req-${Date.now()}`, routeKey: route, stage: "$default", time: "", timeEpoch: Date.now(),
    },
  };
  const result = await management.invoke<{ statusCode: number; headers?: Record<string, string>; body?: string; isBase64Encoded?: boolean }>("invoke", event);
  const text = result.isBase64Encoded ? Buffer.from(result.body ?? "", "base64").toString("utf8") : (result.body ?? "");
  return answer(result.statusCode, Object.fromEntries(Object.entries(result.headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)])), text);
};


describe("AWS wiring: issue 13: the management function behind API Gateway", () => {
  it("with the token from Secrets Manager: 401 for a wrong one; create a subscription, send an event, see it delivered, replay a dead letter; the CLI against management_url", async (t) => {
    if (skip) return t.skip();
    // The receiver is on this machine: only here may a subscription name it (the SSRF policy, as the relay's).
    const management = await start("management/management/function", { extraEnv: { ALLOWED_DESTINATIONS: "127.0.0.1,::1,localhost" } });
    const relay = await start("relay/relay/function", { extraEnv: { ALLOWED_DESTINATIONS: "127.0.0.1,::1,localhost", ...ONE_DRAIN } });
    await managementScenario({
      call: callManagement(management),
      token: adminToken,
      relayTick: () => relay.invoke("invoke", {}),
      output: () => `${management.output()}\n--- relay ---\n${relay.output()}`,
    });
  }, 180_000);

  it("the admin page and the reference are served under management_url", async (t) => {
    if (skip) return t.skip();
    const management = await start("management/management/function");
    const page = await callManagement(management)("GET", "/admin");
    expect(page.status).toBe(200);
    expect(page.headers["content-type"]).toMatch(/^text\/html/);
    expect((await callManagement(management)("GET", "/docs")).status).toBe(200);
  }, 60_000);
});

describe("AWS wiring: issue 24, the listening relay as the stack schedules it", () => {
  it("EventBridge Scheduler's rate and the Lambda timeout played (overlapping runs): events from the API, from SQL and by inbound forwarding reach the receiver with p50 < 2 s and p99 < 5 s; across handovers nothing is lost or sent twice; retries on time; the inbox retries on INBOX_RETRY_SCHEDULE", async (t) => {
    if (skip) return t.skip();
    const schedule = resourceAt(json, "aws_scheduler_schedule", "relay/schedule").body;
    const rate = /^rate\((\d+) minutes?\)$/.exec(String(schedule.schedule_expression));
    expect(rate, String(schedule.schedule_expression)).not.toBeNull();
    const relayFn = functionAt("relay/relay/function");
    expect((block(relayFn.body.environment).variables as Record<string, string>).WEBHOOKS_RELAY_MODE).toBe("listening");
    const interval = Number(rate![1]) * 60;
    const timeout = Number(relayFn.body.timeout);
    expect(timeout).toBeGreaterThan(interval); // runs overlap
    // Test-only: the receivers are local; the inbox's schedule short (the stack leaves 60,300,900).
    const INBOX_STEPS = [2, 4];
    const tuning = { ALLOWED_DESTINATIONS: "127.0.0.1,::1,localhost", INBOX_RETRY_SCHEDULE: INBOX_STEPS.join(","), ...SCALED_ATTEMPT_TIMEOUT };
    // Lambda: an instance runs one invocation at a time; a tick while every instance is busy starts another.
    const idle: FunctionProcess[] = [];
    // Every relay instance this test starts: stopped at its end, as the runs still listening would
    // otherwise deliver what the next test writes (Lambda would cut them off at their timeout).
    const relays: FunctionProcess[] = [];
    const startRelay = async () => {
      const fp = await start("relay/relay/function", { extraEnv: tuning, timeoutSeconds: (timeout * TIME_SCALE) });
      relays.push(fp);
      return fp;
    };
    const runRelay = async () => {
      const fp = idle.pop() ?? (await startRelay());
      try {
        return await fp.invoke("invoke", {}, scaled(timeout) + 30_000);
      } finally {
        idle.push(fp);
      }
    };
    // In steady state the instances are warm (each serves a run every other interval; Lambda keeps
    // idle ones for minutes): started before the clock, so a cold start is not taken for a gap.
    for (let i = 0; i < Math.ceil(timeout / interval); i++) idle.push(await startRelay());
    const management = await start("management/management/function", { extraEnv: { ALLOWED_DESTINATIONS: "127.0.0.1,::1,localhost" } });
    const processor = await start("workers/processor/function", { extraEnv: { INBOX_RETRY_SCHEDULE: INBOX_STEPS.join(",") } });
    const api = callManagement(management);
    let n = 0;
    const handToProcessor = async (eventId: string, body: string, partner = FORWARD_PARTNER, eventType = "partner.thing") => {
      const message = inlineMessage({ partner, eventId, eventType, receivedAt: new Date() }, Buffer.from(body));
      const record = toSqsRecord({ MessageId: `rt-${++n}`, ReceiptHandle: `rt-${n}`, Body: message.body, MessageAttributes: Object.fromEntries(Object.entries(message.attributes ?? {}).map(([k, v]) => [k, { DataType: "String", StringValue: String(v) }])) }, queueArn);
      const answer = await processor.invoke<{ batchItemFailures: unknown[] }>("invoke", { Records: [record] });
      expect(answer.batchItemFailures).toEqual([]);
    };
    const poisoned = `evt_rt_poison_${Date.now()}`;
    await poisonEvent(admin, poisoned);
    try {
      const result = await realtimeScenario({
        db: admin,
        receiver: realtime,
        sendViaApi: async (type, data) => {
          const sent = await api("POST", "/events", { token: adminToken, body: { type, data } });
          expect(sent.status, sent.text).toBe(201);
        },
        forwardInbound: handToProcessor,
      }, [{ name: "relay", offsetMs: 0, intervalMs: scaled(interval), singleton: false, run: runRelay }], {
        cloud: "aws",
        during: async () => { await inboxRetryScenario(admin, poisoned, INBOX_STEPS, () => handToProcessor(poisoned, orderEvent(`o-${poisoned}`, "order.created"), "shop", "order.created")); },
      });
      expectRealtime(result, () => processes.map((p) => p.output().slice(-1500)).join("\n---\n"));
      // Concurrency: at most ceil(timeout / interval) runs at once.
      const most = Math.max(...result.runs.map((r) => result.runs.filter((o) => o.startedAt <= r.startedAt && (o.endedAt ?? Infinity) > r.startedAt).length));
      expect(most).toBeLessThanOrEqual(Math.ceil(timeout / interval));
    } finally {
      await admin.query("DROP TRIGGER IF EXISTS test_poison ON inbox_entries");
      await Promise.all(relays.map((fp) => fp.stop()));
    }
  }, 240_000);
});

describe("AWS wiring: issue 24, relayMode \"scheduled\": the management function wakes the relay", () => {
  it("an API send is delivered within seconds through an asynchronous Invoke of the relay ({\"wake\": true}); a write outside the API waits for the next scheduled run; the stack bounds the runs and drops stale wake-ups", async (t) => {
    if (skip) return t.skip();
    const scheduled = await synthBuilt("aws", { relayMode: "scheduled" });
    const at = (type: string, suffix: string) => resourceAt(scheduled.json, type, suffix);
    const relayFn = at("aws_lambda_function", "relay/relay/function");
    const managementFn = at("aws_lambda_function", "management/management/function");
    const relayName = String(relayFn.body.function_name);
    // What the stack says: the management function names the relay, may invoke it and nothing
    // else new; the relay's runs are bounded and a wake-up Lambda cannot start soon is dropped.
    const managementEnv = block(managementFn.body.environment).variables as Record<string, string>;
    expect(managementEnv.WEBHOOKS_RELAY_FUNCTION).toBe(`\${${key(relayFn, "function_name")}}`);
    const grant = resourcesOf(scheduled.json, "aws_iam_role_policy").find((p) => String(p.body.name) === "management-wake-relay")!;
    expect(JSON.parse(String(grant.body.policy)).Statement).toEqual([{ Effect: "Allow", Action: ["lambda:InvokeFunction"], Resource: `\${${key(relayFn, "arn")}}` }]);
    expect(managementFn.body.depends_on).toContain(`${grant.type}.${grant.name}`);
    expect(relayFn.body.reserved_concurrent_executions).toBe(2);
    const invokeConfig = at("aws_lambda_function_event_invoke_config", "relay/wake-ups").body;
    expect(invokeConfig).toMatchObject({ function_name: `\${${key(relayFn, "function_name")}}`, maximum_retry_attempts: 0, maximum_event_age_in_seconds: 60 });
    // Listening mode (the default stack) wakes nothing: it names no relay and grants no Invoke.
    expect((block(functionAt("management/management/function").body.environment).variables as Record<string, string>).WEBHOOKS_RELAY_FUNCTION).toBeUndefined();

    refs.set(key(relayFn, "function_name"), relayName);
    const local = { ALLOWED_DESTINATIONS: "127.0.0.1,::1,localhost" };
    const relayProcess = await start("relay/relay/function", { stack: scheduled, extraEnv: local });
    expect((block(relayFn.body.environment).variables as Record<string, string>).WEBHOOKS_RELAY_MODE).toBe("scheduled");
    const woken = new Set<Promise<unknown>>();
    const lambda = await startLambdaInvokeTestPeer(async (invocation) => {
      expect(invocation.functionName).toBe(relayName);
      const run = relayProcess.invoke("invoke", invocation.payload, 120_000);
      woken.add(run);
      return run.finally(() => woken.delete(run));
    });
    closers.push(lambda.close);
    const management = await start("management/management/function", { stack: scheduled, extraEnv: { ...local, AWS_ENDPOINT_URL_LAMBDA: lambda.url } });
    const api = callManagement(management);
    await wakeScenario({
      db: admin,
      receiver: realtime,
      sendViaApi: async (type, data) => {
        const sent = await api("POST", "/events", { token: adminToken, body: { type, data } });
        expect(sent.status, sent.text).toBe(201);
      },
      wakeUps: () => lambda.invocations.length,
      wokenRunsEnded: async () => { await Promise.all([...woken]); },
      scheduledRun: async () => { await relayProcess.invoke("invoke", {}, 120_000); },
    }, "aws");
    // Each wake-up was an asynchronous, signed Invoke with the payload the relay reads as woken.
    expect(lambda.invocations.map((i) => ({ type: i.invocationType, payload: i.payload, signed: i.signed }))).toEqual([{ type: "Event", payload: { wake: true }, signed: true }]);
    expect(relayProcess.output()).toMatch(/"woken":true/);
  }, 180_000);
});

describe("AWS wiring: issue 33, one trace through the bundles (must-show 1 in a cloud)", () => {
  it("a signed webhook with the sender's traceparent, turned into an outbound event by the bundled handlers: ingest → SQS (message attribute) → processor → inbox → outbox → relay → HTTP delivery is one trace at the OTLP test peer, and the receiver gets the attempt's traceparent", async (t) => {
    if (skip) return t.skip();
    const peer = await startOtlpTestPeer();
    closers.push(peer.close);
    // The stack's telemetry settings as they are; its X-Ray endpoint (SigV4, not reachable here)
    // resolved to the test peer, as AWS_ENDPOINT_URL resolves the SDKs' endpoints to moto.
    const otel = (suffix: string) => {
      const env = lambdaEnvironment(functionAt(suffix));
      expect(env).toMatchObject({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `https://xray.${region}.amazonaws.com/v1/traces`, OTEL_METRICS_EXPORTER: "awsemf", OTEL_SERVICE_NAME: String(functionAt(suffix).body.function_name) });
      return { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${peer.url}/v1/traces` };
    };
    const traced: { path: string; traceparent?: string }[] = [];
    const relayed: Received[] = [];
    const receiver = await listenLocal(() => createHttpServer((req, res) => {
      traced.push({ path: req.url ?? "", traceparent: req.headers.traceparent as string | undefined });
      verifyingHandler(SUBSCRIBER_SECRET, relayed, () => 200)(req, res);
    }));
    closers.push(receiver.close);
    const guide = deployGuideSequence("aws");
    await createSubscription(admin, { url: `http://127.0.0.1:${receiver.port}/traced`, eventTypes: [guide.subscribedPattern], secrets: [SUBSCRIBER_SECRET] });

    const ingest = await start("ingress/ingest/function", { extraEnv: otel("ingress/ingest/function") });
    const tracingProcessor = await start("workers/processor/function", { extraEnv: otel("workers/processor/function") });
    const tracingRelay = await start("relay/relay/function", { extraEnv: { ALLOWED_DESTINATIONS: "127.0.0.1,::1,localhost", ...ONE_DRAIN, ...otel("relay/relay/function") } });

    const senderTrace = randomBytes(16).toString("hex");
    const senderSpan = randomBytes(8).toString("hex");
    const id = `msg_trace_${Date.now()}`;
    // The guide's partner event, for an order of its own (the order domain ignores a state it has seen).
    const inbound = JSON.parse(guide.inboundBody) as { data: { order_id: string } };
    inbound.data.order_id = `o-trace-${Date.now()}`;
    const delivery = signedDelivery(id, JSON.stringify(inbound));
    const event = apiEvent(guide.partner, { ...delivery, headers: { ...delivery.headers, traceparent: `00-${senderTrace}-${senderSpan}-01` } });
    const answer = await ingest.invoke<{ statusCode: number; body: string }>("invoke", event);
    expect(answer.statusCode, answer.body).toBe(202);
    for (let i = 0; i < 50 && (await inboxEntry(admin, id, guide.partner))?.status !== "processed"; i++) {
      const r = await pollOnce(sqs, queueUrl, queueArn, (e) => tracingProcessor.invoke("invoke", e));
      expect(r.failed, tracingProcessor.output().slice(-3000)).toEqual([]);
    }
    expect(await inboxEntry(admin, id, guide.partner)).toMatchObject({ status: "processed" });
    for (let i = 0; i < 5 && !traced.some((r) => r.path === "/traced"); i++) await tracingRelay.invoke("invoke", {});
    const sent = traced.find((r) => r.path === "/traced");
    expect(sent, tracingRelay.output().slice(-3000)).toBeDefined();
    expect(relayed.find((r) => r.path === "/traced")?.verified).toBe(true);
    // The receiver can continue the trace: the sender's trace id, the attempt's own span id.
    expect(sent!.traceparent).toMatch(new RegExp(`^00-${senderTrace}-[0-9a-f]{16}-01$`));
    const attemptSpanId = sent!.traceparent!.split("-")[2]!;

    // Each function flushed its spans before its invocation returned.
    const inTrace = peer.spans.filter((s) => s.traceId === senderTrace);
    const one = (name: string, where: (s: (typeof inTrace)[number]) => boolean = () => true) => {
      const found = inTrace.filter((s) => s.name === name && where(s));
      expect(found.map((s) => `${s.name} (${s.serviceName})`), `${name} in ${JSON.stringify(inTrace.map((s) => s.name))}`).toHaveLength(1);
      return found[0]!;
    };
    const ingested = one(SPANS.inboxIngest);
    const processed = one(SPANS.inboxProcess);
    const enqueued = one(SPANS.outboxEnqueue);
    const attempt = one(SPANS.deliveryAttempt, (s) => s.spanId === attemptSpanId);
    // One chain: the sender → ingest → (the SQS message's attribute) → processing → the handler's enqueue → the relay's attempt.
    expect([ingested.parentSpanId, processed.parentSpanId, enqueued.parentSpanId, attempt.parentSpanId]).toEqual([senderSpan, ingested.spanId, processed.spanId, enqueued.spanId]);
    expect([ingested.kind, processed.kind, enqueued.kind, attempt.kind]).toEqual([2, 5, 4, 3]); // server, consumer, producer, client
    // Each hop from its own bundle, named as the stack names the function.
    const service = (suffix: string) => String(functionAt(suffix).body.function_name);
    expect([ingested.serviceName, processed.serviceName, enqueued.serviceName, attempt.serviceName])
      .toEqual([service("ingress/ingest/function"), service("workers/processor/function"), service("workers/processor/function"), service("relay/relay/function")]);
    expect(ingested.attributes).toMatchObject({ "webhooks.partner": guide.partner, "webhooks.outcome": "accepted", "http.response.status_code": 202 });
    expect(attempt.attributes).toMatchObject({ "webhooks.outcome": "success", "server.address": "127.0.0.1" });
    // The metrics went out as CloudWatch EMF lines on stdout (Lambda hands them to CloudWatch Logs),
    // in the namespace the stack's OTEL_RESOURCE_ATTRIBUTES name (its dashboard's and alarms').
    const namespace = /service\.namespace=([^,]+)/.exec(lambdaEnvironment(functionAt("relay/relay/function")).OTEL_RESOURCE_ATTRIBUTES ?? "")?.[1];
    expect(namespace).toBeTruthy();
    expect(tracingRelay.output()).toContain(`"_aws":{"Timestamp":`);
    expect(tracingRelay.output()).toContain(`"CloudWatchMetrics":[{"Namespace":"${namespace}","Dimensions":[["outcome"]],"Metrics":[{"Name":"webhooks.delivery.attempts","Unit":"Count"}]}]},"outcome":"success"`);
  }, 180_000);
});
