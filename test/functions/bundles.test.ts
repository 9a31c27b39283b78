/**
 * The function bundles of a real `buildFunctions` run, from their esbuild metafiles: sizes (a
 * deterministic check, unlike the cold-start times, which are the benchmark's business:
 * bench/functions.ts) and, per cloud, that each function carries only what it can reach, with
 * the SDKs that only some paths need in chunks loaded on first use, not in what its import loads.
 *
 * The budgets (figures: docs/functions.md "Bundling" and the README):
 * - what importing a bundle loads (index.mjs and its static chunks): under 1 MiB, as before the
 *   official SDKs: that is what every cold start pays;
 * - all chunks (what is zipped): under 4 MiB. The platforms allow far more (Lambda 50 MB zipped,
 *   Azure Functions zip deploy and Cloud Functions 100 MB of source); the cap catches a bundle
 *   that grows by whole SDKs unnoticed. The largest today are GCP ingest and processor, about
 *   2.7 MiB: the Pub/Sub client (google-gax, gRPC, protobuf, google-auth-library; about 1.5 MiB
 *   minified, loaded on the first publish) and the Cloud Storage client (about 0.8 MiB, loaded
 *   only for a claim-check), each with its own google-auth-library major version.
 * - the relays: under 5 MiB. Since issue 31 every cloud's relay carries every destination kind (a
 *   customer's queue may be in any cloud), each SDK a chunk loaded on its first destination of that
 *   kind, never at import: the Pub/Sub client again (about 1.4 MiB), Service Bus with rhea (about
 *   0.2 MiB, narrowed to ServiceBusClient), SQS, SNS and EventBridge (smithy shared), amqplib (about
 *   0.12 MiB), and on Azure MSAL's managed-identity client. 3.8 MiB on AWS and GCP, 4.3 MiB on Azure
 *   when they came in.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateSecretCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { buildFunctions, CLOUDS, type BuiltFunction } from "../../functions/build.js";
import { migrate } from "../../shared/db/migrate.js";
import { openPostgres } from "../../shared/db/postgres.js";
import { createSubscription, enqueue, listAttempts } from "../../shared/outbound/index.js";
import { startReceiver } from "../outbound/support/receiver.js";
import { createServerDatabase, postgresAvailable } from "../support/databases.js";
import { MOTO_CLIENT_CONFIG, MOTO_URL, motoAvailable } from "../support/emulators.js";
import { startFunctionProcess, type FunctionProcess } from "../wiring/support/functionProcess.js";
import { node22 } from "../wiring/support/node22.js";

const IMPORT_BUDGET = 1024 * 1024;
const ZIP_BUDGET = 4 * 1024 * 1024;
const RELAY_ZIP_BUDGET = 5 * 1024 * 1024;

interface Output { imports: { path: string; kind: string; external?: boolean }[]; inputs: Record<string, unknown> }
let outDir: string;
let built: BuiltFunction[];
const metas = new Map<string, Record<string, Output>>();

beforeAll(async () => {
  outDir = await mkdtemp(join(tmpdir(), "function-bundles-"));
  built = await buildFunctions(outDir);
  for (const cloud of CLOUDS) {
    for (const name of ["ingest", "processor", "relay", "migrate", "management"]) {
      const meta = JSON.parse(await readFile(join(outDir, cloud, `${name}.meta.json`), "utf8")) as { outputs: Record<string, Output> };
      metas.set(`${cloud}/${name}`, meta.outputs);
    }
  }
}, 180_000);
afterAll(async () => { await rm(outDir, { recursive: true, force: true }); });

/** Input files of every output (`all`), or of index.mjs and the chunks it imports statically (`atImport`). */
function inputsOf(fn: string, which: "all" | "atImport"): string[] {
  const outputs = metas.get(fn)!;
  if (which === "all") return Object.values(outputs).flatMap((o) => Object.keys(o.inputs));
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file) || !outputs[file]) return;
    seen.add(file);
    for (const i of outputs[file]!.imports) if (i.kind === "import-statement" && !i.external) visit(i.path);
  };
  visit(Object.keys(outputs).find((file) => /(^|[\\/])index\.mjs$/.test(file))!);
  return [...seen].flatMap((file) => Object.keys(outputs[file]!.inputs));
}
const has = (fn: string, pattern: RegExp, which: "all" | "atImport" = "all") => inputsOf(fn, which).some((file) => pattern.test(file));

describe("every function bundle", () => {
  it("loads under 1 MiB at import, and all its chunks (what is zipped) stay under 4 MiB (a relay, with every destination kind's SDK, 5 MiB)", () => {
    expect(built.map((f) => `${f.cloud}/${f.name}`).sort()).toEqual(
      ["aws/ingest", "aws/management", "aws/migrate", "aws/processor", "aws/relay", "azure/ingest", "azure/management", "azure/migrate", "azure/processor", "azure/relay",
        "gcp/ingest", "gcp/management", "gcp/migrate", "gcp/processor", "gcp/relay"],
    );
    for (const f of built) {
      expect(f.loadedBytes, `${f.cloud}/${f.name} at import`).toBeLessThan(IMPORT_BUDGET);
      expect(f.bytes, `${f.cloud}/${f.name} in all`).toBeLessThan(f.name === "relay" ? RELAY_ZIP_BUDGET : ZIP_BUDGET);
    }
  });
});

describe("the OpenTelemetry SDK in the bundles (issue 33, functions/telemetry.ts)", () => {
  const SDK = /node_modules\/(@opentelemetry\/(sdk-|exporter-|resources|otlp-)|@azure\/monitor-opentelemetry-exporter|google-auth-library)|shared\/telemetry\/sdk\.ts$|functions\/(aws|azure|gcp)\/telemetryExporters\.ts$/;
  const EXPORTERS: Record<string, RegExp> = {
    aws: /functions\/aws\/telemetryExporters\.ts$/,
    azure: /node_modules\/@azure\/monitor-opentelemetry-exporter\//,
    gcp: /functions\/gcp\/telemetryExporters\.ts$/,
  };
  it("no bundle loads the SDK or an exporter at import (unconfigured cold starts load none of it); each request-path bundle carries them in chunks, with its cloud's exporter and no other cloud's", () => {
    for (const cloud of CLOUDS) {
      for (const name of ["ingest", "processor", "relay", "migrate", "management"]) {
        expect(inputsOf(`${cloud}/${name}`, "atImport").filter((file) => SDK.test(file)), `${cloud}/${name} at import`).toEqual([]);
      }
      for (const name of ["ingest", "processor", "relay", "management"]) {
        const fn = `${cloud}/${name}`;
        expect(has(fn, /node_modules\/@opentelemetry\/sdk-trace-node\//), fn).toBe(true);
        expect(has(fn, /functions\/telemetry\.ts$/, "atImport"), fn).toBe(true);
        for (const [other, exporter] of Object.entries(EXPORTERS)) expect(has(fn, exporter), `${fn}: ${other}'s exporter`).toBe(other === cloud);
      }
    }
  });
});

describe("QuickJS's WebAssembly file (transformations, docs/transformations.md)", () => {
  const LOADER = /node_modules\/@jitl\/quickjs-wasmfile-release-sync\/dist\/emscripten-module\.mjs$/;
  it("sits beside the chunk that loads it (it reads the file relative to itself), in every bundle that carries the engine, the relay and management functions at least", () => {
    for (const f of built) {
      const loaders = Object.entries(metas.get(`${f.cloud}/${f.name}`)!).filter(([, o]) => Object.keys(o.inputs).some((i) => LOADER.test(i))).map(([file]) => file);
      if (f.name === "relay" || f.name === "management") expect(loaders, `${f.cloud}/${f.name}`).toHaveLength(1);
      for (const file of loaders) expect(existsSync(join(dirname(resolve(file)), "emscripten-module.wasm")), `${f.cloud}/${f.name}: ${file}`).toBe(true);
    }
  });
});

/**
 * The built AWS relay in a Node 22 process (the wiring tests' Lambda driver), one drain: a
 * delivery whose subscription has a transformation reaches the receiver transformed, as the
 * bundle's own QuickJS ran it.
 */
describe("the built relay bundle runs a transformation", () => {
  const REPO = fileURLToPath(new URL("../..", import.meta.url));
  it("AWS: the delivery arrives transformed", async (t) => {
    if (!(await postgresAvailable())) return t.skip();
    if (!(await node22())) return t.skip();
    const database = await createServerDatabase();
    const receiver = await startReceiver();
    let fp: FunctionProcess | undefined;
    try {
      const db = openPostgres({ connectionString: database.url, max: 2 });
      try {
        await migrate(db);
        await createSubscription(db, { url: `${receiver.url}/t`, eventTypes: ["bundle.test"], transformation: "(e) => ({ body: { doubled: e.data.n * 2 }, headers: { 'x-bundle': 'relay' } })" });
        await enqueue(db, { id: "bundle-t1", type: "bundle.test", data: { n: 21 } });
      } finally { await db.close(); }
      fp = await startFunctionProcess({
        driver: join(REPO, "test/wiring/drivers/aws.mjs"), bundleDir: join(outDir, "aws", "relay"), args: ["index.handler", "60", "relay"],
        env: { WEBHOOKS_DATABASE_URL: database.url, WEBHOOKS_DATABASE_TLS: "disable", WEBHOOKS_RELAY_MODE: "scheduled", LOG_LEVEL: "warn", ALLOWED_DESTINATIONS: "127.0.0.1", ENCRYPTION_KEYS: process.env.ENCRYPTION_KEYS ?? "" },
      });
      const summary = await fp.invoke<{ deliveriesAttempted: number }>("invoke", {}, 60_000);
      expect(summary.deliveriesAttempted, fp.output().slice(-3000)).toBe(1);
      expect(receiver.received.map((r) => [r.body, r.headers["x-bundle"]]), fp.output().slice(-3000)).toEqual([['{"doubled":42}', "relay"]]);
    } finally {
      await fp?.stop();
      await receiver.close();
      await database.drop();
    }
  }, 120_000);
});

/**
 * Issue 31: off Azure, a Service Bus destination without a connection string cannot send as an
 * Azure identity; the built AWS relay says what to give instead, in the attempt log.
 */
describe("the built AWS relay and a Service Bus destination without a connection string", () => {
  const REPO = fileURLToPath(new URL("../..", import.meta.url));
  it("records the attempt's refusal: give destination.credentials.connectionString", async (t) => {
    if (!(await postgresAvailable())) return t.skip();
    if (!(await node22())) return t.skip();
    const database = await createServerDatabase();
    let fp: FunctionProcess | undefined;
    const db = openPostgres({ connectionString: database.url, max: 2 });
    try {
      await migrate(db);
      const sub = await createSubscription(db, { destination: { kind: "servicebus", queue: "orders", namespace: "acme.servicebus.windows.net" }, eventTypes: ["bundle.sb"] });
      await enqueue(db, { id: "bundle-sb1", type: "bundle.sb", data: {} });
      fp = await startFunctionProcess({
        driver: join(REPO, "test/wiring/drivers/aws.mjs"), bundleDir: join(outDir, "aws", "relay"), args: ["index.handler", "60", "relay"],
        env: { WEBHOOKS_DATABASE_URL: database.url, WEBHOOKS_DATABASE_TLS: "disable", WEBHOOKS_RELAY_MODE: "scheduled", LOG_LEVEL: "warn", ENCRYPTION_KEYS: process.env.ENCRYPTION_KEYS ?? "" },
      });
      const summary = await fp.invoke<{ deliveriesAttempted: number }>("invoke", {}, 60_000);
      expect(summary.deliveriesAttempted, fp.output().slice(-3000)).toBe(1);
      const attempts = await listAttempts(db, `bundle-sb1:${sub.id}`);
      expect(attempts.map((a) => a.responseExcerpt), fp.output().slice(-3000)).toEqual([expect.stringContaining("a relay running on AWS does not have: give destination.credentials.connectionString")]);
    } finally {
      await fp?.stop();
      await db.close();
      await database.drop();
    }
  }, 120_000);
});

describe("the management function bundles", () => {
  it("carry the admin page's files (embedded, no folder to read at run time) and no storage, PGlite or delivery transport (undici) code; the queue client only for the relay's wake-up, loaded on first use; only they carry the page", async () => {
    for (const cloud of CLOUDS) {
      const index = await readFile(join(outDir, cloud, "management", "index.mjs"), "utf8");
      // A piece of each file, as the browser gets it: index.html, app.js, app.css, client.js.
      expect(index, cloud).toContain("<title>webhooks admin</title>");
      expect(index, cloud).toContain("webhooks.adminToken");
      expect(index, cloud).toContain("--fg: #1d2430");
      // …and client.js, the page's calls on the generated client (shared/admin/client.ts, bundled).
      expect(index, cloud).toContain("Generated from shared/admin/client.ts");
      // …and the customer portal's (shared/portal/): index.html, portal.js, portal.css, in a chunk
      // loaded when the portal is first served (not at a cold start).
      const chunks = await Promise.all((await readdir(join(outDir, cloud, "management", "chunks"))).filter((f) => f.endsWith(".mjs")).map((f) => readFile(join(outDir, cloud, "management", "chunks", f), "utf8")));
      const portal = chunks.find((c) => c.includes("The customer portal: plain browser JavaScript"));
      expect(portal, cloud).toBeDefined();
      expect(portal, cloud).toContain("{{base}}/portal/assets/portal.js");
      expect(portal, cloud).toContain("--accent: #0b7285");
      expect(index, cloud).not.toContain("The customer portal: plain browser JavaScript");
      expect(has(`${cloud}/management`, /node_modules\/(@aws-sdk\/client-sqs|@aws-sdk\/client-s3|@azure\/storage-blob|@google-cloud\/storage|@electric-sql)\//), cloud).toBe(false);
      // The API sends no deliveries: listeners.ts takes two helpers of transport.ts, not its undici
      // pool (~280 KiB at import when the build kept it: functions/build.ts, trims).
      expect(has(`${cloud}/management`, /node_modules\/undici\//), cloud).toBe(false);
      // relayMode "scheduled" (issue 24): the management function wakes the relay through the
      // cloud's own client (Lambda Invoke, the wake-up topic, the wake-up queue), imported when the
      // first wake-up is sent: a cold start of the API does not load it.
      expect(has(`${cloud}/management`, /node_modules\/(@aws-sdk\/client-lambda|@azure\/service-bus|@google-cloud\/pubsub)\//, "atImport"), cloud).toBe(false);
      for (const name of ["ingest", "processor", "relay", "migrate"]) expect(has(`${cloud}/${name}`, /shared\/(admin|portal)\/assetFiles\.ts$|shared\/admin\/app\.js$/), `${cloud}/${name}`).toBe(false);
    }
  });
});

/**
 * Issue 31: destinations beyond HTTP. Each cloud's relay can deliver to every kind (a customer's
 * queue may be in any cloud), each kind's SDK loaded on its first destination of that kind; what
 * cannot run in a cloud is left out there (functions/build.ts, destinationTrims).
 */
describe("destination senders in the relay bundles", () => {
  const KINDS: Record<string, RegExp> = {
    sqs: /node_modules\/@aws-sdk\/client-sqs\//,
    sns: /node_modules\/@aws-sdk\/client-sns\//,
    eventbridge: /node_modules\/@aws-sdk\/client-eventbridge\//,
    servicebus: /node_modules\/@azure\/service-bus\//,
    pubsub: /node_modules\/@google-cloud\/pubsub\//,
    rabbitmq: /node_modules\/amqplib\//,
  };
  /** Like `has`, counting only the files whose code is in the output (esbuild lists a module it dropped with 0 bytes). */
  const bytesOf = (fn: string, pattern: RegExp) =>
    Object.values(metas.get(fn)!).reduce((sum, o) => sum + Object.entries(o.inputs as Record<string, { bytesInOutput: number }>).reduce((n, [file, i]) => n + (pattern.test(file) ? i.bytesInOutput : 0), 0), 0);
  const carries = (fn: string, pattern: RegExp) => bytesOf(fn, pattern) > 0;
  const SENDER = (kind: string) => new RegExp(`shared/outbound/destinations/${{ servicebus: "serviceBus", rabbitmq: "rabbitmq" }[kind] ?? kind}\\.ts$`);

  it("every cloud's relay carries each kind's sender and SDK, none of them loaded at import", () => {
    for (const cloud of CLOUDS) {
      for (const [kind, sdk] of Object.entries(KINDS)) {
        expect(has(`${cloud}/relay`, SENDER(kind)), `${cloud}/relay: the ${kind} sender`).toBe(true);
        expect(has(`${cloud}/relay`, sdk), `${cloud}/relay: the ${kind} SDK`).toBe(true);
        expect(has(`${cloud}/relay`, sdk, "atImport"), `${cloud}/relay: the ${kind} SDK at import`).toBe(false);
      }
    }
  });

  it("no other function carries a destination sender", () => {
    for (const cloud of CLOUDS) {
      for (const name of ["ingest", "processor", "migrate", "management"]) {
        // (senders.ts's own code is dropped; its kinds there resolve to a line that says the relay sends.)
        expect(carries(`${cloud}/${name}`, /^shared\/outbound\/destinations\/(senders|sqs|sns|eventbridge|serviceBus|pubsub|rabbitmq)\.ts$/), `${cloud}/${name}`).toBe(false);
        expect(carries(`${cloud}/${name}`, /node_modules\/(@aws-sdk\/client-sns|@aws-sdk\/client-eventbridge|amqplib)\//), `${cloud}/${name}`).toBe(false);
      }
    }
  });

  it("Service Bus is narrowed to ServiceBusClient; its Entra ID sign-in is the managed identity alone on Azure and absent elsewhere", () => {
    for (const cloud of CLOUDS) expect(has(`${cloud}/relay`, /node_modules\/@azure\/service-bus\/.*serviceBusAtomManagementClient\.js$/), cloud).toBe(false);
    for (const cloud of ["aws", "gcp"]) expect(carries(`${cloud}/relay`, /node_modules\/@azure\/(identity|msal-node|msal-common)\//), cloud).toBe(false);
    expect(carries("azure/relay", /@azure\/identity\/dist\/esm\/credentials\/managedIdentityCredential\/index\.js$/)).toBe(true);
    // DefaultAzureCredential's chain (the CLI, PowerShell, VS Code, developer CLI, environment credentials) is
    // not bundled: of those modules only their logger lines remain (tens of bytes each).
    expect(bytesOf("azure/relay", /@azure\/identity\/dist\/esm\/credentials\/(defaultAzureCredential|azureCliCredential|azurePowerShellCredential|visualStudioCodeCredential|azureDeveloperCliCredential|environmentCredential)\.js$/)).toBeLessThan(1024);
  });
});

describe("Azure function bundles", () => {
  const IDENTITY = /node_modules\/@azure\/(identity|msal-node|msal-common)\//;
  const BLOB = /node_modules\/@azure\/(storage-blob|storage-common)\//;

  it("ingest and the processor carry @azure/identity's ManagedIdentityCredential and @azure/storage-blob, in chunks loaded on first use", () => {
    for (const name of ["ingest", "processor"]) {
      expect(has(`azure/${name}`, /@azure\/identity\/dist\/esm\/credentials\/managedIdentityCredential\/index\.js$/), name).toBe(true);
      expect(has(`azure/${name}`, BLOB), name).toBe(true);
      expect(has(`azure/${name}`, IDENTITY, "atImport"), name).toBe(false);
      expect(has(`azure/${name}`, BLOB, "atImport"), name).toBe(false);
    }
  });

  it("migrate carries no Service Bus, AMQP, identity or Blob code, the relay no Blob code and the others (its Service Bus destinations') only in chunks loaded on first use; ingest and the processor carry Service Bus without its management client", () => {
    expect(has("azure/migrate", /node_modules\/(@azure\/service-bus|@azure\/core-amqp|rhea)\//)).toBe(false);
    expect(has("azure/migrate", IDENTITY)).toBe(false);
    for (const name of ["relay", "migrate"]) expect(has(`azure/${name}`, BLOB), name).toBe(false);
    expect(has("azure/relay", /node_modules\/(@azure\/service-bus|@azure\/core-amqp|rhea)\//, "atImport")).toBe(false);
    expect(has("azure/relay", IDENTITY, "atImport")).toBe(false);
    for (const name of ["ingest", "processor"]) {
      expect(has(`azure/${name}`, /node_modules\/@azure\/service-bus\/.*serviceBusClient\.js$/), name).toBe(true);
      expect(has(`azure/${name}`, /node_modules\/@azure\/service-bus\/.*serviceBusAtomManagementClient\.js$/), name).toBe(false);
    }
  });
});

describe("GCP function bundles", () => {
  const PUBSUB = /node_modules\/(@google-cloud\/pubsub|google-gax|@grpc\/grpc-js)\//;
  const STORAGE = /node_modules\/@google-cloud\/storage\//;

  it("ingest and the processor carry @google-cloud/pubsub and @google-cloud/storage, in chunks loaded on first use", () => {
    for (const name of ["ingest", "processor"]) {
      expect(has(`gcp/${name}`, PUBSUB), name).toBe(true);
      expect(has(`gcp/${name}`, STORAGE), name).toBe(true);
      expect(has(`gcp/${name}`, PUBSUB, "atImport"), name).toBe(false);
      expect(has(`gcp/${name}`, STORAGE, "atImport"), name).toBe(false);
    }
  });

  it("migrate carries neither client; the relay no Cloud Storage, and Pub/Sub (its Pub/Sub destinations') only in a chunk loaded on first use", () => {
    expect(has("gcp/migrate", PUBSUB)).toBe(false);
    expect(has("gcp/migrate", /node_modules\/(google-auth-library|gaxios)\//)).toBe(false);
    for (const name of ["relay", "migrate"]) expect(has(`gcp/${name}`, STORAGE), name).toBe(false);
    expect(has("gcp/relay", PUBSUB, "atImport")).toBe(false);
    expect(has("gcp/relay", /node_modules\/(google-auth-library|gaxios)\//, "atImport")).toBe(false);
  });
});

/**
 * The built management bundles themselves, each in a Node 22 process with only its settings (the
 * wiring tests' drivers play Lambda and the Functions Framework): the admin page and its files come
 * from the bundle (no folder beside it), and the API answers under /api.
 */
describe("the built management bundles serve the API and the page from their own files", () => {
  const REPO = fileURLToPath(new URL("../..", import.meta.url));
  const TOKEN = "bundle-management-test-token-0123456789";
  let skip: string | undefined;
  let database: { url: string; drop(): Promise<void> } | undefined;
  const running: FunctionProcess[] = [];
  const common = () => ({
    WEBHOOKS_MANAGEMENT_BASE_PATH: "/api", WEBHOOKS_DATABASE_TLS: "disable", LOG_LEVEL: "warn",
    ALLOWED_DESTINATIONS: "127.0.0.1", ENCRYPTION_KEYS: process.env.ENCRYPTION_KEYS ?? "",
  });

  beforeAll(async () => {
    if (!(await postgresAvailable())) skip = "PostgreSQL is not answering";
    else if (!(await node22())) skip = "Node 22 is not available (npx -p node@22)";
    if (skip) { console.warn(`\n!!! ${skip}: the built management bundles are not run.\n`); return; }
    database = await createServerDatabase();
    const owner = openPostgres({ connectionString: database.url, max: 1 });
    await migrate(owner);
    await owner.close();
  }, 240_000);
  afterAll(async () => {
    for (const fp of running) await fp.stop();
    await database?.drop();
  });

  const checkPageAndApi = async (call: (method: string, path: string, headers?: Record<string, string>, body?: string) => Promise<{ status: number; text: string; type?: string }>) => {
    const page = await call("GET", "/api/admin");
    expect(page.status).toBe(200);
    expect(page.text).toContain('src="/api/admin/app.js"');
    for (const [file, type] of [["app.js", "text/javascript"], ["app.css", "text/css"], ["client.js", "text/javascript"]]) {
      const asset = await call("GET", `/api/admin/${file}`);
      expect([asset.status, asset.type?.split(";")[0]], file).toEqual([200, type]);
    }
    expect(JSON.parse((await call("GET", "/api/openapi.json")).text).servers).toEqual([{ url: "/api" }]);
    const created = await call("POST", "/api/subscriptions", { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, JSON.stringify({ url: "http://127.0.0.1:9/x", eventTypes: ["bundle.test"] }));
    expect(created.status, created.text).toBe(201);
    expect((await call("GET", "/api/subscriptions")).status).toBe(401);
    // A transformation, compiled and run in the bundle's own QuickJS (its .wasm beside the chunk).
    const tested = await call("POST", "/api/transformations/test", { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      JSON.stringify({ transformation: "(e) => ({ body: { n: e.data.n * 2 } })", event: { type: "bundle.test", data: { n: 21 } } }));
    expect(tested.status, tested.text).toBe(200);
    expect(JSON.parse(tested.text)).toMatchObject({ result: { body: '{"n":42}' }, error: null });
    const transformed = await call("POST", "/api/subscriptions", { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      JSON.stringify({ url: "http://127.0.0.1:9/x", eventTypes: ["bundle.test"], transformation: "(e) => ({ body: e.data })" }));
    expect(transformed.status, transformed.text).toBe(201);
  };

  it("AWS: index.handler with API Gateway 2.0 events, the token from Secrets Manager", async (t) => {
    if (skip) return t.skip();
    if (!(await motoAvailable())) return t.skip();
    const secret = await new SecretsManagerClient(MOTO_CLIENT_CONFIG).send(new CreateSecretCommand({ Name: `bundle-admin-token-${Date.now().toString(36)}`, SecretString: TOKEN }));
    const fp = await startFunctionProcess({
      driver: join(REPO, "test/wiring/drivers/aws.mjs"), bundleDir: join(outDir, "aws", "management"), args: ["index.handler", "30", "management"],
      env: {
        ...common(), WEBHOOKS_DATABASE_URL: database!.url, WEBHOOKS_ADMIN_TOKEN_SECRET_ARN: secret.ARN!,
        AWS_ENDPOINT_URL: MOTO_URL, AWS_REGION: "us-east-1", AWS_ACCESS_KEY_ID: MOTO_CLIENT_CONFIG.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: MOTO_CLIENT_CONFIG.credentials.secretAccessKey,
      },
    });
    running.push(fp);
    expect(fp.version).toMatch(/^v22\./);
    await checkPageAndApi(async (method, path, headers = {}, body) => {
      const r = await fp.invoke<{ statusCode: number; headers: Record<string, string>; body: string }>("invoke", {
        version: "2.0", routeKey: "ANY /api/{proxy+}", rawPath: path, rawQueryString: "", headers, body, isBase64Encoded: false,
        requestContext: { http: { method, path }, stage: "$default" },
      });
      return { status: r.statusCode, text: r.body, type: r.headers["content-type"] };
    });
  }, 120_000);

  it("Azure: the bundle registers one anonymous HTTP function, management, on the catch-all route for every method", async (t) => {
    if (skip) return t.skip();
    const fp = await startFunctionProcess({
      driver: join(REPO, "test/wiring/drivers/azure.mjs"), bundleDir: join(outDir, "azure", "management"),
      env: { ...common(), DATABASE_URL: database!.url, ADMIN_TOKEN: TOKEN },
    });
    running.push(fp);
    const registrations = await fp.invoke<{ name: string; type: string; route: string; methods: string[]; authLevel: string }[]>("registrations");
    expect(registrations.map(({ name, type, route, authLevel }) => ({ name, type, route, authLevel }))).toEqual([{ name: "management", type: "httpTrigger", route: "{*path}", authLevel: "anonymous" }]);
    expect(registrations[0]!.methods).toEqual(expect.arrayContaining(["GET", "HEAD", "POST", "PATCH", "DELETE"]));
  }, 120_000);

  it("GCP: entry point management under the Functions Framework, the token from ADMIN_TOKEN", async (t) => {
    if (skip) return t.skip();
    const bundleDir = join(outDir, "gcp", "management");
    // What the buildpack installs from the bundle's package.json.
    await mkdir(join(bundleDir, "node_modules/@google-cloud"), { recursive: true });
    await symlink(join(REPO, "node_modules/@google-cloud/functions-framework"), join(bundleDir, "node_modules/@google-cloud/functions-framework"), "dir");
    const fp = await startFunctionProcess({
      driver: join(REPO, "test/wiring/drivers/gcp.mjs"), bundleDir, args: ["management"],
      // No NODE_ENV: the entry sets it, so the framework's own error pages carry no stack trace.
      env: { ...common(), GOOGLE_CLOUD_PROJECT: "bundle-test", DATABASE_URL: database!.url, ADMIN_TOKEN: TOKEN },
    });
    running.push(fp);
    const { url } = await fp.invoke<{ url: string }>("url");
    await checkPageAndApi(async (method, path, headers, body) => {
      const r = await fetch(url + path, { method, headers, body });
      return { status: r.status, text: await r.text(), type: r.headers.get("content-type") ?? undefined };
    });
    // A body sent as JSON that is not: the framework's parser answers before the function (docs/functions.md).
    const notJson = await fetch(`${url}/api/events`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: "{nope" });
    expect(notJson.status).toBe(400);
    expect(await notJson.text()).not.toMatch(/JSON\.parse|node_modules|\bat \S+:\d+/);
  }, 120_000);
});
