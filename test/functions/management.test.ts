/**
 * The management function of each cloud, driven with that cloud's real request shapes against
 * real PostgreSQL: API Gateway events (`@types/aws-lambda`, HTTP API 2.0 and REST 1.0, the admin
 * token read from Secrets Manager on moto), Azure Functions v4 `HttpRequest`s, the Functions
 * Framework's own server (as API Gateway calls it: its ID token in `Authorization`, the caller's in
 * `X-Forwarded-Authorization`). Each is mounted under `/api`, as the stacks mount it. The same
 * story on each: refused without a token configured, 401 without the caller's; a subscription
 * created and listed, an event sent and delivered by the scheduled relay, a dead letter replayed
 * and delivered; the error shapes; the OpenAPI document and the admin page under the prefix.
 */
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { APIGatewayProxyEvent, APIGatewayProxyEventV2, APIGatewayProxyResult } from "aws-lambda";
import { HttpRequest } from "@azure/functions";
import { http } from "@google-cloud/functions-framework";
import { getTestServer } from "@google-cloud/functions-framework/testing";
import { CreateSecretCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { handleManagement } from "../../functions/aws/management.js";
import { createAwsRuntime } from "../../functions/aws/runtime.js";
import { managementHttp as azureManagement, managementHttpWith as azureManagementWith } from "../../functions/azure/managementHttp.js";
import { createAzureRuntime } from "../../functions/azure/runtime.js";
import { managementHttp as gcpManagement, managementHttpWith as gcpManagementWith } from "../../functions/gcp/managementHttp.js";
import { createGcpRuntime } from "../../functions/gcp/runtime.js";
import { runScheduledRelay } from "../../shared/cloud/relay.js";
import { loadConfig } from "../../shared/config.js";
import { migrate } from "../../shared/db/migrate.js";
import { openPostgres } from "../../shared/db/postgres.js";
import type { Database } from "../../shared/db/port.js";
import { createLogger } from "../../shared/telemetry/log.js";
import { runCli } from "../../shared/cli/main.js";
import { managementRoutes } from "../../shared/server/management.js";
import { webhookRoute } from "../../shared/server/routes/inbound.js";
import { createApp } from "../../shared/server/core.js";
import { createServerDatabase, postgresAvailable } from "../support/databases.js";
import { MOTO_CLIENT_CONFIG, MOTO_URL, motoAvailable } from "../support/emulators.js";
import { startReceiver, type Receiver } from "../outbound/support/receiver.js";

const TOKEN = "management-function-test-token-0123456789";
const BASE = "/api";
const suffix = Date.now().toString(36);

interface Call { method: string; path: string; headers?: Record<string, string>; body?: string; base64?: boolean }
interface Answer { status: number; headers: Record<string, string>; text: string }
type Caller = (call: Call) => Promise<Answer>;
interface Cloud { name: string; call: Caller; withoutToken: Caller }

let skip: string | undefined;
let owner: Database;
let dropDatabase: (() => Promise<void>) | undefined;
let databaseUrl: string;
let receiver: Receiver;
const servers: Server[] = [];
const clouds: Record<"aws" | "azure" | "gcp", Cloud> = {} as never;
const baseEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("WEBHOOKS_") && k !== "ADMIN_TOKEN")) as Record<string, string>;
const tuning = { ALLOWED_DESTINATIONS: "127.0.0.1", LOG_LEVEL: "silent", MAX_PAYLOAD_BYTES: "1024" };

/** The relay's scheduled run, as each cloud's relay function makes it. */
const relayRun = () => runScheduledRelay(owner, loadConfig({ ADMIN_TOKEN: TOKEN, ...tuning }), createLogger({ level: "silent" }), () => 20_000);

function awsEvent(c: Call, stage = "$default"): APIGatewayProxyEventV2 {
  const [path, query = ""] = c.path.split("?");
  const rawPath = stage === "$default" ? path! : `/${stage}${path}`;
  return {
    version: "2.0", routeKey: "ANY /api/{proxy+}", rawPath, rawQueryString: query,
    headers: c.headers ?? {},
    pathParameters: { proxy: path!.replace(/^\/api\/?/, "") },
    isBase64Encoded: c.base64 === true,
    body: c.body === undefined ? undefined : c.base64 ? Buffer.from(c.body).toString("base64") : c.body,
    requestContext: {
      accountId: "123456789012", apiId: "api", domainName: "api.example", domainPrefix: "api",
      http: { method: c.method, path: rawPath, protocol: "HTTP/1.1", sourceIp: "203.0.113.9", userAgent: "cli" },
      requestId: "req", routeKey: "ANY /api/{proxy+}", stage, time: "", timeEpoch: Date.now(),
    },
  };
}

/** A REST API (payload 1.0) event: stage-less `path`, multi-value headers and query. */
function restEvent(c: Call): APIGatewayProxyEvent {
  const [path, query = ""] = c.path.split("?");
  const q = new URLSearchParams(query);
  const multiQuery: Record<string, string[]> = {};
  for (const [k, v] of q) (multiQuery[k] ??= []).push(v);
  const headers = c.headers ?? {};
  return {
    resource: "/api/{proxy+}", path: path!, httpMethod: c.method,
    headers, multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    queryStringParameters: query ? Object.fromEntries(q) : null, multiValueQueryStringParameters: query ? multiQuery : null,
    pathParameters: { proxy: path!.replace(/^\/api\/?/, "") }, stageVariables: null,
    body: c.body === undefined ? null : c.base64 ? Buffer.from(c.body).toString("base64") : c.body, isBase64Encoded: c.base64 === true,
    requestContext: { stage: "prod", path: `/prod${path}`, httpMethod: c.method } as APIGatewayProxyEvent["requestContext"],
  };
}

const fromAws = (r: APIGatewayProxyResult): Answer => ({
  status: r.statusCode,
  headers: Object.fromEntries(Object.entries(r.headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)])),
  text: r.isBase64Encoded ? Buffer.from(r.body, "base64").toString("utf8") : r.body,
});

function azureRequest(c: Call): HttpRequest {
  return new HttpRequest({
    method: c.method as "GET",
    url: `https://webhooks-management.azurewebsites.net${c.path}`,
    headers: c.headers ?? {},
    body: c.body === undefined ? undefined : { string: c.body },
    params: { path: c.path.split("?")[0]!.replace(/^\/api\/?/, "") },
  });
}

async function fromAzure(init: Awaited<ReturnType<typeof azureManagement>>): Promise<Answer> {
  const headers = Object.fromEntries(Object.entries((init.headers ?? {}) as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]));
  const body = init.body === undefined || init.body === null ? "" : Buffer.from(init.body as Uint8Array).toString("utf8");
  return { status: init.status ?? 200, headers, text: body };
}

/** A Functions Framework server for `name`, called as API Gateway calls it. */
async function gcpCaller(name: string): Promise<Caller> {
  const server = getTestServer(name);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return async (c) => {
    const headers: Record<string, string> = { authorization: "Bearer the-gateway-s-own-google-id-token" };
    for (const [k, v] of Object.entries(c.headers ?? {})) headers[k.toLowerCase() === "authorization" ? "x-forwarded-authorization" : k] = v;
    const r = await fetch(url + c.path, { method: c.method, headers, body: c.body });
    return { status: r.status, headers: Object.fromEntries(r.headers), text: await r.text() };
  };
}

beforeAll(async () => {
  if (!(await postgresAvailable())) {
    if (process.env.CI && process.env.CI !== "false") throw new Error("PostgreSQL is not answering at 127.0.0.1:5432; CI must run these tests.");
    skip = "PostgreSQL is not answering at 127.0.0.1:5432";
    console.warn(`\n!!! ${skip}: the management function tests are SKIPPED.\n`);
    return;
  }
  receiver = await startReceiver(() => ({ status: 200 }));
  const database = await createServerDatabase();
  dropDatabase = database.drop;
  databaseUrl = database.url;
  owner = openPostgres({ connectionString: database.url, max: 2 });
  // The deploy's migrate step (the functions never run DDL).
  await migrate(owner);
  const db = { WEBHOOKS_DATABASE_TLS: "disable", WEBHOOKS_MANAGEMENT_BASE_PATH: BASE, ...tuning };

  // AWS: the token in Secrets Manager (moto), named by WEBHOOKS_ADMIN_TOKEN_SECRET_ARN.
  if (await motoAvailable()) {
    Object.assign(process.env, {
      AWS_ENDPOINT_URL: MOTO_URL, AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: MOTO_CLIENT_CONFIG.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: MOTO_CLIENT_CONFIG.credentials.secretAccessKey,
    });
    const secret = await new SecretsManagerClient(MOTO_CLIENT_CONFIG).send(new CreateSecretCommand({ Name: `fn-admin-token-${suffix}`, SecretString: TOKEN }));
    const env = { ...baseEnv(), ...db, WEBHOOKS_DATABASE_URL: database.url };
    const aws = createAwsRuntime({ ...env, WEBHOOKS_ADMIN_TOKEN_SECRET_ARN: secret.ARN! });
    const awsNoToken = createAwsRuntime(env);
    clouds.aws = {
      name: "aws",
      call: async (c) => fromAws(await handleManagement(aws, awsEvent(c))),
      withoutToken: async (c) => fromAws(await handleManagement(awsNoToken, awsEvent(c))),
    };
  } else {
    console.warn(`\n!!! moto is not answering at ${MOTO_URL}: the AWS management function tests are SKIPPED.\n`);
  }

  // Azure: ADMIN_TOKEN as the platform leaves it once it resolved the Key Vault reference.
  const azureEnv = { ...baseEnv(), ...db, DATABASE_URL: database.url };
  const azure = createAzureRuntime({ ...azureEnv, ADMIN_TOKEN: TOKEN });
  const azureNoToken = createAzureRuntime(azureEnv);
  clouds.azure = {
    name: "azure",
    call: async (c) => fromAzure(await azureManagement(azure, azureRequest(c))),
    withoutToken: async (c) => fromAzure(await azureManagement(azureNoToken, azureRequest(c))),
  };

  // GCP: ADMIN_TOKEN mounted from Secret Manager.
  const gcpEnv = { ...baseEnv(), ...db, GOOGLE_CLOUD_PROJECT: "management-test", DATABASE_URL: database.url };
  const gcp = createGcpRuntime({ ...gcpEnv, ADMIN_TOKEN: TOKEN });
  const gcpNoToken = createGcpRuntime(gcpEnv);
  http(`management-${suffix}`, (req, res) => gcpManagement(gcp, req, res));
  http(`management-no-token-${suffix}`, (req, res) => gcpManagement(gcpNoToken, req, res));
  clouds.gcp = { name: "gcp", call: await gcpCaller(`management-${suffix}`), withoutToken: await gcpCaller(`management-no-token-${suffix}`) };
}, 120_000);

afterAll(async () => {
  for (const server of servers) await new Promise((resolve) => server.close(resolve));
  await receiver?.close();
  await owner?.close();
  await dropDatabase?.();
});

const auth = { authorization: `Bearer ${TOKEN}` };
const json = { ...auth, "content-type": "application/json" };
const parse = (a: Answer) => JSON.parse(a.text) as any;

describe.each(["aws", "azure", "gcp"] as const)("the %s management function", (name) => {
  const cloud = () => {
    if (skip) return undefined;
    return clouds[name];
  };
  const api = async (method: string, path: string, body?: unknown) => {
    const a = await cloud()!.call({ method, path: BASE + path, headers: body === undefined ? auth : json, body: body === undefined ? undefined : JSON.stringify(body) });
    if (a.status >= 300) throw new Error(`${method} ${path} → ${a.status} ${a.text}`);
    return parse(a);
  };

  it("refuses every request with 503 when no admin token is configured, public pages included, and says so", async (t) => {
    if (!cloud()) return t.skip();
    for (const path of ["/subscriptions", "/openapi.json", "/admin"]) {
      const a = await cloud()!.withoutToken({ method: "GET", path: BASE + path, headers: auth });
      expect(a.status, path).toBe(503);
      expect(parse(a).error.code).toBe("not_configured");
      expect(parse(a).error.message).toMatch(/admin token/);
    }
  });

  it("answers 401 without the caller's token or with a wrong one, with WWW-Authenticate", async (t) => {
    if (!cloud()) return t.skip();
    for (const headers of [{}, { authorization: "Bearer not-the-token-0123456789" }] as Record<string, string>[]) {
      const a = await cloud()!.call({ method: "GET", path: `${BASE}/subscriptions`, headers });
      expect(a.status).toBe(401);
      expect(a.headers["www-authenticate"]).toBe("Bearer");
      expect(parse(a).error.code).toBe("unauthorized");
    }
  });

  it("creates and lists a subscription, sends an event the scheduled relay delivers, and shows it delivered", async (t) => {
    if (!cloud()) return t.skip();
    const type = `${name}.order.created`;
    const sub = await api("POST", "/subscriptions", { url: `${receiver.url}/${name}/ok`, eventTypes: [type], description: `${name} test` });
    expect(sub.secrets[0]).toMatch(/^whsec_/);
    const list = await api("GET", "/subscriptions?limit=1000");
    expect(list.subscriptions.map((s: { id: string }) => s.id)).toContain(sub.id);
    const sent = await api("POST", "/events", { id: `evt-${name}-${suffix}`, type, data: { cloud: name } });
    expect(sent.deliveries).toHaveLength(1);
    // Committed to the outbox; the cloud relay delivers at its next scheduled run.
    expect((await api("GET", `/deliveries/${encodeURIComponent(sent.deliveries[0].id)}`)).status).toBe("pending");
    await relayRun();
    expect(receiver.received.some((r) => JSON.parse(r.body).data?.cloud === name && r.headers["webhook-id"])).toBe(true);
    expect((await api("GET", `/deliveries/${encodeURIComponent(sent.deliveries[0].id)}`)).status).toBe("delivered");
  });

  it("serves webhooks listen: a long poll gets the event, the answer is its attempt, the relay run sends the subscription nothing until the listener detaches", async (t) => {
    if (!cloud()) return t.skip();
    const type = `${name}.listened`;
    const sub = await api("POST", "/subscriptions", { url: `${receiver.url}/${name}/listened`, eventTypes: [type] });
    const listeners = `/subscriptions/${sub.id}/listeners`;
    const listener = await api("POST", listeners, { forwardTo: "http://localhost:3000/hooks" });
    expect(listener.maxWaitSeconds).toBe(25); // within API Gateway's 29-30 s (docs/listen.md)
    const pulling = api("POST", `${listeners}/${listener.id}/pull`, { waitSeconds: 10 });
    const first = (await api("POST", "/events", { id: `listened-1-${name}-${suffix}`, type, data: { n: 1 } })).deliveries[0].id;
    const { deliveries } = await pulling;
    expect(deliveries.map((d: { id: string }) => d.id)).toEqual([first]);
    expect(deliveries[0].headers["webhook-id"]).toBe(first);
    expect(deliveries[0].headers["webhook-signature"]).toMatch(/^v1,/);
    const { recorded } = await api("POST", `${listeners}/${listener.id}/answers`, { answers: [{ deliveryId: first, status: 200, durationMs: 4 }] });
    expect(recorded).toEqual([{ deliveryId: first, outcome: "delivered", retryInSeconds: null, deadReason: null }]);
    const [attempt] = (await api("GET", `/deliveries/${encodeURIComponent(first)}/attempts`)).attempts;
    expect(attempt).toMatchObject({ status: 200, result: "delivered", listenerId: listener.id });

    const second = (await api("POST", "/events", { id: `listened-2-${name}-${suffix}`, type, data: { n: 2 } })).deliveries[0].id;
    await relayRun();
    expect(receiver.received.some((r) => r.headers["webhook-id"] === second)).toBe(false); // left to the listener
    expect(await api("DELETE", `${listeners}/${listener.id}`)).toEqual({ detached: true, released: 0 });
    await relayRun();
    expect(receiver.received.some((r) => r.headers["webhook-id"] === second)).toBe(true);
    expect(receiver.received.some((r) => r.headers["webhook-id"] === first)).toBe(false);
  });

  it("replays a dead letter, which the next relay run delivers", async (t) => {
    if (!cloud()) return t.skip();
    const type = `${name}.order.doomed`;
    let broken = true;
    receiver.respond = (r) => ({ status: broken && JSON.parse(r.body).type === type ? 500 : 200 });
    try {
      const sub = await api("POST", "/subscriptions", { url: `${receiver.url}/${name}/flaky`, eventTypes: [type], maxAttempts: 1 });
      const sent = await api("POST", "/events", { id: `doomed-${name}-${suffix}`, type, data: { n: 1 } });
      const id: string = sent.deliveries[0].id;
      await relayRun();
      const dead = await api("GET", `/dead-letters?subscriptionId=${encodeURIComponent(sub.id)}`);
      expect(dead.deadLetters.map((d: { id: string }) => d.id)).toEqual([id]);
      broken = false;
      const replayed = await api("POST", `/dead-letters/${encodeURIComponent(id)}/replay`);
      expect(replayed.status).toBe("pending");
      await relayRun();
      expect((await api("GET", `/deliveries/${encodeURIComponent(id)}`)).status).toBe("delivered");
    } finally {
      receiver.respond = () => ({ status: 200 });
    }
  });

  it("answers 404, 405 (with Allow), 415 and 413 in the API's error shape", async (t) => {
    if (!cloud()) return t.skip();
    const c = cloud()!;
    const notFound = await c.call({ method: "GET", path: `${BASE}/nothing-here`, headers: auth });
    expect([notFound.status, parse(notFound).error.code]).toEqual([404, "not_found"]);
    const outside = await c.call({ method: "GET", path: "/subscriptions", headers: auth });
    expect([outside.status, parse(outside).error.code]).toEqual([404, "not_found"]);
    const wrongMethod = await c.call({ method: "DELETE", path: `${BASE}/events`, headers: auth });
    expect([wrongMethod.status, parse(wrongMethod).error.code]).toEqual([405, "method_not_allowed"]);
    expect(wrongMethod.headers.allow).toBe("GET, HEAD, POST");
    const notJson = await c.call({ method: "POST", path: `${BASE}/events`, headers: { ...auth, "content-type": "text/plain" }, body: "type=a" });
    expect([notJson.status, parse(notJson).error.code]).toEqual([415, "unsupported_media_type"]);
    // The limit: MAX_PAYLOAD_BYTES or 1 MiB, whichever is larger.
    const big = JSON.stringify({ type: "x.y", data: "a".repeat(1024 * 1024) });
    const tooLarge = await c.call({ method: "POST", path: `${BASE}/events`, headers: json, body: big });
    expect([tooLarge.status, parse(tooLarge).error.code]).toEqual([413, "payload_too_large"]);
    const invalid = await c.call({ method: "POST", path: `${BASE}/subscriptions`, headers: json, body: JSON.stringify({ url: "not a url" }) });
    expect([invalid.status, parse(invalid).error.code]).toEqual([400, "invalid_request"]);
    for (const a of [notFound, wrongMethod, notJson, tooLarge, invalid]) expect(a.text).not.toMatch(/\bat .+\.(ts|js|mjs):\d+/);
  });

  it("serves the OpenAPI document (naming /api as its server, the webhook route documented) and the admin page under /api", async (t) => {
    if (!cloud()) return t.skip();
    const c = cloud()!;
    const doc = await c.call({ method: "GET", path: `${BASE}/openapi.json` });
    expect(doc.status).toBe(200);
    expect(parse(doc)).toMatchObject({ openapi: "3.1.0", servers: [{ url: "/api" }] });
    expect(Object.keys(parse(doc).paths)).toEqual(expect.arrayContaining(["/subscriptions", "/dead-letters/{id}/replay", "/webhooks/{partner}"]));
    // Custom header values are answered in full: the document says they may be secret.
    const created = parse(doc).paths["/subscriptions"].post.responses["201"].content["application/json"].schema;
    expect(created.properties.headers.description).toMatch(/possibly secret/);
    const page = await c.call({ method: "GET", path: `${BASE}/admin` });
    expect(page.status).toBe(200);
    expect(page.headers["content-type"]).toMatch(/^text\/html/);
    expect(page.text).toContain('src="/api/admin/app.js"');
    expect(page.text).toContain('href="/api/admin/app.css"');
    const script = await c.call({ method: "GET", path: `${BASE}/admin/app.js` });
    expect([script.status, script.headers["content-type"]]).toEqual([200, "text/javascript; charset=utf-8"]);
    expect(script.text).toContain("API_BASE");
    const docs = await c.call({ method: "GET", path: `${BASE}/docs` });
    expect(docs.text).toContain('href="/api/openapi.json"');
    const noSuchFile = await c.call({ method: "GET", path: `${BASE}/admin/constructor` });
    expect(noSuchFile.status).toBe(404);
  });
});

describe("AWS request shapes", () => {
  it("a base64 body (as API Gateway sends binary media types) is decoded before it is read", async (t) => {
    if (skip || !clouds.aws) return t.skip();
    const a = await clouds.aws.call({ method: "POST", path: `${BASE}/subscriptions`, headers: json, body: JSON.stringify({ url: `${receiver.url}/b64`, eventTypes: ["b64.x"] }), base64: true });
    expect(a.status).toBe(201);
    expect(parse(a).url).toBe(`${receiver.url}/b64`);
  });

  it("a named stage's prefix is removed from an HTTP API rawPath; a REST (1.0) event routes and queries the same", async (t) => {
    if (skip || !clouds.aws) return t.skip();
    // The secret by name, as Secrets Manager also accepts.
    const runtime = createAwsRuntime({
      ...baseEnv(), WEBHOOKS_DATABASE_TLS: "disable", WEBHOOKS_MANAGEMENT_BASE_PATH: BASE, ...tuning,
      WEBHOOKS_DATABASE_URL: databaseUrl, WEBHOOKS_ADMIN_TOKEN_SECRET_ARN: `fn-admin-token-${suffix}`,
    });
    const staged = fromAws(await handleManagement(runtime, awsEvent({ method: "GET", path: `${BASE}/openapi.json` }, "prod")));
    expect(staged.status).toBe(200);
    const rest = fromAws(await handleManagement(runtime, restEvent({ method: "GET", path: `${BASE}/openapi.json` })));
    expect(rest.status).toBe(200);
    expect(JSON.parse(rest.text).openapi).toBe("3.1.0");
    const twice = fromAws(await handleManagement(runtime, restEvent({ method: "GET", path: `${BASE}/subscriptions?limit=1&limit=2`, headers: auth })));
    expect([twice.status, JSON.parse(twice.text).error.message]).toEqual([400, expect.stringMatching(/given twice/)]);
  });
});

describe("a token that cannot be used is no token", () => {
  const get = { method: "GET", path: `${BASE}/subscriptions`, headers: auth };

  it("Azure: an unresolved Key Vault reference, or a token under 16 characters, is refused (503), never compared", async (t) => {
    if (skip) return t.skip();
    const env = { ...baseEnv(), WEBHOOKS_DATABASE_TLS: "disable", WEBHOOKS_MANAGEMENT_BASE_PATH: BASE, ...tuning, DATABASE_URL: databaseUrl };
    const reference = "@Microsoft.KeyVault(SecretUri=https://vault.vault.azure.net/secrets/admin-token/)";
    const unresolved = createAzureRuntime({ ...env, ADMIN_TOKEN: reference });
    const a = await fromAzure(await azureManagement(unresolved, azureRequest({ ...get, headers: { authorization: `Bearer ${reference}` } })));
    expect([a.status, parse(a).error.code]).toEqual([503, "not_configured"]);
  });

  it("GCP: a token under 16 characters is refused (503), the reason only in the log", async (t) => {
    if (skip) return t.skip();
    // The tuning (shared/config.ts) refuses a short ADMIN_TOKEN when the runtime is made.
    const short = () => createGcpRuntime({ ...baseEnv(), GOOGLE_CLOUD_PROJECT: "p", DATABASE_URL: databaseUrl, ADMIN_TOKEN: "short" });
    http(`management-short-${suffix}`, (req, res) => gcpManagementWith(short, req, res));
    const a = await (await gcpCaller(`management-short-${suffix}`))({ ...get, headers: { authorization: "Bearer short" } });
    expect([a.status, parse(a).error.code]).toEqual([503, "not_configured"]);
  });

  it("the reason logged for a token the configuration refuses names the setting, never the token", () => {
    for (const [name, value] of [["ADMIN_TOKEN", "short-secret"], ["ALERT_WEBHOOK_SECRET", "whsec_not-base64!"], ["DATABASE_URL", "secret-password-not-a-url"]] as [string, string][]) {
      let message = "";
      try {
        loadConfig({ [name]: value });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message, name).toContain(`- ${name}:`);
      expect(message, name).not.toContain(value);
    }
  });

  it("AWS: a secret that cannot be read is refused (503), and the answer does not say why", async (t) => {
    if (skip || !clouds.aws) return t.skip();
    const runtime = createAwsRuntime({
      ...baseEnv(), WEBHOOKS_DATABASE_TLS: "disable", WEBHOOKS_MANAGEMENT_BASE_PATH: BASE, ...tuning,
      WEBHOOKS_DATABASE_URL: databaseUrl, WEBHOOKS_ADMIN_TOKEN_SECRET_ARN: `no-such-secret-${suffix}`,
    });
    const a = fromAws(await handleManagement(runtime, awsEvent(get)));
    expect([a.status, parse(a).error.code]).toEqual([503, "not_configured"]);
    expect(a.text).not.toContain(`no-such-secret-${suffix}`);
  });

  it("invalid settings: 503 not_configured, the reason in the log and not in the answer", async (t) => {
    if (skip) return t.skip();
    const bad = () => createAzureRuntime({ ...baseEnv(), WEBHOOKS_NO_SUCH_SETTING: "1", DATABASE_URL: databaseUrl, ADMIN_TOKEN: TOKEN });
    const a = await fromAzure(await azureManagementWith(bad, azureRequest(get)));
    expect([a.status, parse(a).error.code]).toEqual([503, "not_configured"]);
    expect(a.text).not.toContain("WEBHOOKS_NO_SUCH_SETTING");
  });
});

describe("the CLI against a management function", () => {
  it("`webhooks --url <management_url>` (…/api) creates, lists and replays through the GCP function, as against a local server", async (t) => {
    if (skip) return t.skip();
    const server = getTestServer(`management-${suffix}`);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    servers.push(server);
    const managementUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}${BASE}`;
    const cli = async (...args: string[]) => {
      let out = "";
      let err = "";
      const code = await runCli([...args, "--url", managementUrl, "--json"], { stdout: (s) => { out += s; }, stderr: (s) => { err += s; }, env: { ADMIN_TOKEN: TOKEN }, cwd: process.cwd() });
      if (code !== 0) throw new Error(`webhooks ${args.join(" ")} → ${code}: ${err}`);
      return JSON.parse(out) as any;
    };
    const created = await cli("subscriptions", "create", "--endpoint", `${receiver.url}/cli`, "--event", "cli.thing");
    expect((await cli("subscriptions", "list", "--limit", "1000")).map((s: { id: string }) => s.id)).toContain(created.id);
    expect(Array.isArray(await cli("dlq", "list"))).toBe(true);
  });
});

describe("one API everywhere", () => {
  it("each cloud's OpenAPI document is the local server's, operation for operation (only the server differs)", async (t) => {
    if (skip) return t.skip();
    const config = loadConfig({ ADMIN_TOKEN: TOKEN, ...tuning });
    const ctx = { config, db: owner, logger: createLogger({ level: "silent" }) };
    const local = createApp({ routes: managementRoutes(ctx, { ingest: webhookRoute(ctx) }), adminToken: TOKEN });
    const localDoc = (await local.handle({ method: "GET", url: "/openapi.json", headers: {} })).body as { paths: Record<string, Record<string, unknown>>; servers?: unknown };
    expect(localDoc.servers).toEqual([{ url: "/" }]);
    for (const name of ["aws", "azure", "gcp"] as const) {
      if (!clouds[name]) continue;
      const cloudDoc = parse(await clouds[name].call({ method: "GET", path: `${BASE}/openapi.json` }));
      expect(cloudDoc.servers, name).toEqual([{ url: "/api" }]);
      const ops = (doc: { paths: Record<string, Record<string, unknown>> }) => Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`)).sort();
      expect(ops(cloudDoc), name).toEqual(ops(localDoc));
      // Operation for operation: parameters, bodies, answers and errors alike.
      for (const [path, methods] of Object.entries(localDoc.paths)) expect(cloudDoc.paths[path], `${name} ${path}`).toEqual(methods);
    }
  });
});
