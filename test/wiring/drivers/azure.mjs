// The Azure wiring test's driver: plays the Azure Functions Node.js worker for one Function App's
// bundle (test/wiring/azure.test.ts). Plain JavaScript, run by Node 22 in the bundle's directory
// with exactly the app settings the test resolved from the stack.
//
// What the worker does, and so what this does:
// - it provides `@azure/functions-core` to the app (the worker's setupCoreModule intercepts
//   `Module.prototype.require`; the bundle `require`s it, the one package the build leaves
//   external). Ours records what the bundle registers: `setProgrammingModel(model)` and
//   `registerFunction(metadata, handler)`;
// - before any invocation the host indexes the registrations against the app settings: a
//   `%NAME%` binding expression must name an app setting, and a trigger's `connection` must have
//   its setting (`<connection>` or the identity-based `<connection>__fullyQualifiedNamespace`),
//   or the function does not start. `registrations` does the same check and reports what it found;
// - an invocation goes through the bundle's own programming model, as the worker's does:
//   `model.getInvocationModel(coreCtx)` → `getArguments()` (the RPC data turned into HttpRequest,
//   the Service Bus body and camel-cased triggerMetadata, the timer object) → `invokeFunction` →
//   `getResponse` (the HTTP response back as RPC data). The request is built in the host's RPC
//   shapes (RpcHttp, RpcTypedData), the HTTP route template matched against the URL as the host
//   matches it.
// Not modelled: the host's HTTP front end (body size limit, auth levels), binding extensions,
// retries, scale, host.json.
import Module from "node:module";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { serve } from "../support/rpc.mjs";

const bundleDir = process.argv[2];

/** What the bundle registered: name → { metadata, handler }. */
const registered = new Map();
let model;
const core = {
  version: "3.10.1",
  hostVersion: "4.1037.0.0",
  setProgrammingModel(m) { model = m; },
  getProgrammingModel() { return model; },
  registerFunction(metadata, handler) {
    if (registered.has(metadata.name)) throw new Error(`Function ${metadata.name} is registered twice`);
    registered.set(metadata.name, { metadata, handler });
    return { dispose() { registered.delete(metadata.name); } };
  },
  registerHook() { return { dispose() {} }; },
};
// As the worker's setupCoreModule does: intercept Module.prototype.require (the bundle's require,
// made by createRequire, goes through it).
Module.prototype.require = new Proxy(Module.prototype.require, {
  apply(target, thisArg, args) {
    return args[0] === "@azure/functions-core" ? core : Reflect.apply(target, thisArg, args);
  },
});

await import(pathToFileURL(join(bundleDir, "index.mjs")).href);
if (!model) throw new Error("The bundle never set a programming model: did it import @azure/functions and register a function?");

const triggerOf = (metadata) => Object.entries(metadata.bindings).find(([, b]) => b.direction === "in" && /Trigger$/.test(b.type));

/** `%NAME%` → the app setting's value, as the host resolves binding expressions; an unknown name stops the function. */
function resolveSetting(fn, field, value) {
  if (typeof value !== "string") return value;
  return value.replace(/%([^%]+)%/g, (_, name) => {
    const found = process.env[name];
    if (found === undefined || found === "") throw new Error(`Function ${fn}: ${field} "${value}" names app setting ${name}, which is not set`);
    return found;
  });
}

function indexed() {
  return [...registered.values()].map(({ metadata }) => {
    const [bindingName, binding] = triggerOf(metadata);
    const out = { name: metadata.name, bindingName, type: binding.type, raw: { ...binding } };
    if (binding.type === "httpTrigger") Object.assign(out, { route: binding.route, methods: binding.methods, authLevel: binding.authLevel });
    if (binding.type === "serviceBusTrigger") {
      const conn = binding.connection;
      if (!process.env[conn] && !process.env[`${conn}__fullyQualifiedNamespace`]) {
        throw new Error(`Function ${metadata.name}: connection "${conn}" has no app setting ${conn} or ${conn}__fullyQualifiedNamespace`);
      }
      Object.assign(out, { connection: conn, queueName: binding.queueName, resolvedQueueName: resolveSetting(metadata.name, "queueName", binding.queueName), cardinality: binding.cardinality ?? "one" });
    }
    if (binding.type === "timerTrigger") {
      const schedule = resolveSetting(metadata.name, "schedule", binding.schedule);
      if (schedule.trim().split(/\s+/).length !== 6) throw new Error(`Function ${metadata.name}: schedule "${schedule}" is not a six-field NCRONTAB expression`);
      Object.assign(out, { schedule: binding.schedule, resolvedSchedule: schedule, runOnStartup: binding.runOnStartup === true });
    }
    return out;
  });
}
// Index at start, as the host does: a registration the settings cannot satisfy fails the process.
indexed();

/**
 * Matches `/api/<route>` against the registered route template (the host's default route prefix
 * `api`); the route parameters, or undefined. `{name}` is one segment, `{*name}` the catch-all: the
 * rest of the path, slashes included, possibly empty (ASP.NET Core routing, which the host uses).
 */
function matchRoute(template, path) {
  const names = [];
  const pattern = template.split("/").map((part) => {
    const catchAll = /^\{\*(\w+)\}$/.exec(part);
    if (catchAll) { names.push(catchAll[1]); return "(.*)"; }
    const m = /^\{(\w+)\}$/.exec(part);
    if (m) { names.push(m[1]); return "([^/]+)"; }
    return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }).join("/");
  const m = new RegExp(`^/api/${pattern}$`).exec(path);
  return m ? Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(m[i + 1])])) : undefined;
}

/** Triggers metadata as the host sends it: each value as RPC typed data. */
function typed(value) {
  if (typeof value === "number" && Number.isInteger(value)) return { int: value };
  if (typeof value === "number") return { double: value };
  if (typeof value === "string") return { string: value };
  return { json: JSON.stringify(value) };
}

async function invoke(name, inputData, triggerMetadata) {
  const fn = registered.get(name);
  if (!fn) throw new Error(`No function ${name} is registered (registered: ${[...registered.keys()].join(", ")})`);
  const [bindingName] = triggerOf(fn.metadata);
  const coreCtx = {
    invocationId: randomUUID(),
    metadata: fn.metadata,
    request: { inputData: [{ name: bindingName, data: inputData }], triggerMetadata },
  };
  const invocation = model.getInvocationModel(coreCtx);
  const { context, inputs } = await invocation.getArguments();
  const result = await invocation.invokeFunction(context, inputs, fn.handler);
  return invocation.getResponse(context, result);
}

serve(async (kind, payload) => {
  if (kind === "registrations") return indexed();
  if (kind === "http") {
    // The one HTTP function whose route matches the URL, as the host routes.
    const url = new URL(payload.url);
    const match = indexed().filter((f) => f.type === "httpTrigger").map((f) => ({ f, params: matchRoute(f.route, url.pathname) })).find((m) => m.params);
    if (!match) return { status: 404, headers: {}, body: "" };
    if (!match.f.methods.includes(payload.method)) return { status: 405, headers: {}, body: "" };
    const response = await invoke(match.f.name, {
      http: { method: payload.method, url: payload.url, headers: payload.headers, query: Object.fromEntries(url.searchParams), params: match.params, body: { bytes: Buffer.from(payload.bodyBase64, "base64") } },
    });
    const http = response.returnValue.http;
    return { status: Number(http.statusCode), headers: http.headers, body: Buffer.from(http.body?.bytes ?? []).toString("utf8") };
  }
  if (kind === "serviceBus") {
    // The body as the host passes a text message (JSON text arrives parsed), the properties as trigger metadata.
    const f = indexed().find((x) => x.type === "serviceBusTrigger" && x.resolvedQueueName === payload.queueName);
    if (!f) throw new Error(`No Service Bus function listens on queue ${payload.queueName}`);
    const metadata = Object.fromEntries(Object.entries(payload.triggerMetadata).filter(([, v]) => v !== undefined).map(([k, v]) => [k, typed(v)]));
    await invoke(f.name, { string: payload.body }, metadata);
    return { completed: true };
  }
  if (kind === "timer") {
    const timer = { Schedule: { AdjustForDST: true }, ScheduleStatus: { Last: new Date(Date.now() - 60_000).toISOString(), Next: new Date(Date.now() + 60_000).toISOString(), LastUpdated: new Date().toISOString() }, IsPastDue: false };
    await invoke(payload.name, { json: JSON.stringify(timer) });
    return { ran: payload.name };
  }
  throw new Error(`azure driver: unknown kind ${kind}`);
});
