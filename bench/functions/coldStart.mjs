/**
 * One cold start of one function bundle, in the fresh Node process bench/functions.ts starts for
 * it (plain Node: no loader, nothing imported before the bundle but what builds the event).
 * Measures `import(bundle)` and the first event handled through the bundle's own entry point,
 * then prints one JSON line and exits (the bundle's pools would keep the process alive).
 *
 *   node bench/functions/coldStart.mjs <spec.json>
 * spec: { cloud, name, bundle, event } (the environment carries the function's settings).
 */
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
const require = createRequire(import.meta.url);

/** Builds the trigger's argument(s) before the clock starts: that is the platform's work. */
function prepare() {
  if (spec.cloud === "azure") {
    // Only to construct the host's objects; the bundle carries its own copy of @azure/functions.
    const { HttpRequest, InvocationContext, trigger } = require("@azure/functions");
    if (spec.name === "ingest") return () => [new HttpRequest(spec.event)];
    if (spec.name === "processor") {
      return () => [spec.event.body, new InvocationContext({
        invocationId: "bench", functionName: "processor", triggerMetadata: spec.event.triggerMetadata,
        options: { trigger: trigger.serviceBusQueue({ connection: "ServiceBusConnection", queueName: "bench" }) }, logHandler: () => {},
      })];
    }
    return () => [{ isPastDue: false, schedule: { adjustForDST: true }, scheduleStatus: { last: "", next: "", lastUpdated: "" } }];
  }
  if (spec.cloud === "aws" && spec.name === "relay") return () => [{}, { getRemainingTimeInMillis: () => 60_000 }];
  return () => [spec.event];
}

/** What the first event's answer says, in one word or number. */
function outcome(value) {
  if (value === undefined) return "completed";
  if (typeof value.statusCode === "number") return String(value.statusCode);
  if (typeof value.status === "number") return String(value.status);
  if (Array.isArray(value.batchItemFailures)) return `${value.batchItemFailures.length} failed`;
  if (typeof value.deliveriesAttempted === "number") return `${value.deliveriesAttempted} delivered`;
  return JSON.stringify(value).slice(0, 40);
}

async function gcpFirstEvent() {
  // The bundle registered its function with the framework installed next to it (external).
  const { getTestServer } = require("@google-cloud/functions-framework/testing");
  const server = getTestServer(spec.name);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  // node:http, not fetch: Node 20 loads its fetch implementation on first use (70–200 ms here),
  // the sender's cost, which must not count as the function's.
  const t = performance.now();
  const status = await new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: spec.event.path, method: "POST", headers: spec.event.headers }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode));
    });
    req.on("error", reject);
    req.end(spec.event.body);
  });
  return { ms: performance.now() - t, result: String(status) };
}

if (spec.cloud === "reference") {
  // The floor on this machine, now: a fresh process importing only pg, then one connection and one query.
  const t0 = performance.now();
  const { default: pg } = await import("pg");
  const importMs = performance.now() - t0;
  const t1 = performance.now();
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  await client.query("SELECT 1");
  const firstEventMs = performance.now() - t1;
  process.stdout.write(`${JSON.stringify({ importMs, firstEventMs, result: "SELECT 1" })}\n`);
  process.exit(0);
}

const args = prepare();
const t0 = performance.now();
const mod = await import(pathToFileURL(spec.bundle).href);
const importMs = performance.now() - t0;
let first;
if (spec.cloud === "gcp") {
  first = await gcpFirstEvent();
} else {
  const argv = args(); // the platform's objects, built before the clock like the import's
  const t1 = performance.now();
  const value = await mod.handler(...argv);
  first = { ms: performance.now() - t1, result: outcome(value) };
}
process.stdout.write(`${JSON.stringify({ importMs, firstEventMs: first.ms, result: first.result })}\n`);
process.exit(0);
