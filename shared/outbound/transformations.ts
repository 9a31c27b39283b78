/**
 * Transformations (issue 30 item 3, docs/transformations.md): a subscription's JavaScript function
 * `(event) => ({ body, headers?, url? } | null)` that rewrites each delivery before it is signed
 * and sent (null: skip it). It runs in QuickJS compiled to WebAssembly (quickjs-emscripten): its
 * own heap with a memory limit, an interrupt deadline, no I/O, no host objects (nothing of Node's
 * is passed in: no `process`, `require`, `fetch`, `console`), and its built-ins frozen before the
 * function is defined, so one run cannot plant something for the next (prototype pollution throws).
 *
 * One sandbox per transformation text (SHA-256), compiled once and kept (LRU); a run that fails
 * on a limit disposes it (its heap may be spent) and the next run compiles afresh. The event goes
 * in as JSON text and the result comes out as JSON text: no handle of the host crosses over.
 */
import { createHash } from "node:crypto";
import { newQuickJSWASMModuleFromVariant, shouldInterruptAfterDeadline, type QuickJSContext, type QuickJSHandle, type QuickJSRuntime, type QuickJSWASMModule } from "quickjs-emscripten-core";
import releaseSync from "@jitl/quickjs-wasmfile-release-sync";
import { OutboundValidationError } from "./errors.js";
import { headersSchema } from "./subscriptionHeaders.js";
import { safeParse } from "../safeParse.js";

export interface TransformationLimits {
  /** Longest one run may take, in ms (the relay's event loop waits for it). Default: 100. */
  timeoutMs?: number;
  /** Heap of one transformation's sandbox, in bytes. Default: 16 MiB. */
  memoryBytes?: number;
  /** Largest result (its JSON text), in bytes. Default: 1 MiB. */
  maxOutputBytes?: number;
}
export const DEFAULT_TRANSFORMATION_LIMITS: Required<TransformationLimits> = { timeoutMs: 100, memoryBytes: 16 * 1024 * 1024, maxOutputBytes: 1024 * 1024 };
/** Longest transformation source accepted, in characters. */
export const MAX_TRANSFORMATION_LENGTH = 64 * 1024;

/** What a transformation made of a delivery: what to send instead, or skip it. */
export type TransformationResult = { skip: true } | { skip: false; body: string; headers?: Record<string, string>; url?: string };

/** The transformation failed (threw, ran out of time or memory, returned something invalid): that delivery fails permanently. */
export class TransformationError extends Error {
  override name = "TransformationError";
}

/**
 * A WebAssembly instance of QuickJS of its own for each sandbox: a sandbox that failed is dropped
 * whole (its linear memory with it) rather than freed, since QuickJS asserts (and aborts the
 * instance) when a runtime is freed with objects still alive, as a run cut off by a limit leaves.
 * Nothing is instantiated in a process without transformations.
 */
const engine = (): Promise<QuickJSWASMModule> => newQuickJSWASMModuleFromVariant(releaseSync as unknown as Parameters<typeof newQuickJSWASMModuleFromVariant>[0]);
/** Preparing a sandbox (freezing its built-ins, compiling the function) may take this long besides the run's limit. */
const PREPARE_MS = 2000;

// Runs first in every sandbox: every built-in reachable from globalThis is frozen.
const HARDEN = `"use strict";
(() => {
  const seen = new Set();
  const freeze = (o) => {
    if ((typeof o !== "object" && typeof o !== "function") || o === null || seen.has(o)) return;
    seen.add(o);
    Object.freeze(o);
    for (const key of Reflect.ownKeys(o)) {
      const d = Object.getOwnPropertyDescriptor(o, key);
      if (!d) continue;
      if ("value" in d) freeze(d.value);
      if (d.get) freeze(d.get);
      if (d.set) freeze(d.set);
    }
    freeze(Object.getPrototypeOf(o));
  };
  freeze(globalThis);
})();`;

const runner = (source: string) => `"use strict";
const transformation = (${source}
);
if (typeof transformation !== "function") throw new TypeError("the transformation must be a function (event) => ({ body, headers?, url? } | null), got a " + typeof transformation);
(input) => {
  const out = transformation(JSON.parse(input));
  if (out !== null && typeof out === "object" && typeof out.then === "function") throw new TypeError("the transformation returned a Promise; it must return its result synchronously");
  const text = JSON.stringify(out);
  return text === undefined ? "undefined" : text;
}`;

interface Sandbox { runtime: QuickJSRuntime; context: QuickJSContext; fn: QuickJSHandle; deadline: number }
const sandboxes = new Map<string, Sandbox>();
const MAX_SANDBOXES = 100;
let compilations = 0;
/** How many transformations were compiled in this process (tests check "once per version"). */
export const transformationCompilations = (): number => compilations;

/** Forgets a sandbox. A healthy one (evicted) is freed; a failed one is dropped with its instance (see `engine`). */
function dispose(key: string, healthy = false): void {
  const s = sandboxes.get(key);
  if (!s) return;
  sandboxes.delete(key);
  if (!healthy) return;
  try {
    s.fn.dispose();
    s.context.dispose();
    s.runtime.dispose();
  } catch {
    // Dropped with its instance all the same.
  }
}

/** The error a sandbox threw, as a line of text. */
function describeError(context: QuickJSContext, handle: QuickJSHandle): string {
  let dumped: unknown;
  try {
    dumped = context.dump(handle);
  } catch {
    dumped = "an error that could not be read (the sandbox ran out of memory?)";
  }
  handle.dispose();
  if (dumped && typeof dumped === "object") {
    const e = dumped as { name?: string; message?: string };
    if (e.message !== undefined) return `${e.name ?? "Error"}: ${e.message}`;
  }
  // Something that is not an error (`throw "boom"`): the value, said as such (callers add "threw").
  return `the value ${JSON.stringify(dumped)?.slice(0, 200) ?? String(dumped)}`;
}

async function sandboxFor(source: string, limits: Required<TransformationLimits>): Promise<{ key: string; sandbox: Sandbox }> {
  const key = createHash("sha256").update(source).digest("base64url") + `:${limits.memoryBytes}`;
  const found = sandboxes.get(key);
  if (found) {
    sandboxes.delete(key); // most recently used last
    sandboxes.set(key, found);
    return { key, sandbox: found };
  }
  const module = await engine();
  const runtime = module.newRuntime();
  runtime.setMemoryLimit(limits.memoryBytes);
  runtime.setMaxStackSize(256 * 1024);
  const sandbox = { runtime, deadline: 0 } as Sandbox;
  runtime.setInterruptHandler(() => Date.now() > sandbox.deadline);
  sandbox.context = runtime.newContext();
  sandbox.deadline = Date.now() + PREPARE_MS + limits.timeoutMs;
  compilations++;
  const hardened = sandbox.context.evalCode(HARDEN, "harden.js");
  if (hardened.error) {
    const why = describeError(sandbox.context, hardened.error);
    throw new TransformationError(`the sandbox could not be prepared: ${why}`);
  }
  hardened.value.dispose();
  const compiled = sandbox.context.evalCode(runner(source), "transformation.js");
  if (compiled.error) {
    const why = describeError(sandbox.context, compiled.error);
    throw new TransformationError(Date.now() > sandbox.deadline ? `timed out while being defined (${PREPARE_MS + limits.timeoutMs} ms)` : why);
  }
  sandbox.fn = compiled.value;
  if (sandboxes.size >= MAX_SANDBOXES) dispose(sandboxes.keys().next().value!, true);
  sandboxes.set(key, sandbox);
  return { key, sandbox };
}

/**
 * Runs `source` on `event` (the delivery's body, parsed) within `limits`. Throws
 * TransformationError saying why when it throws, runs out of time or memory, or returns anything
 * but null or `{ body, headers?, url? }`.
 */
export async function runTransformation(source: string, event: unknown, limitsIn: TransformationLimits = {}): Promise<TransformationResult> {
  const limits = { ...DEFAULT_TRANSFORMATION_LIMITS, ...limitsIn };
  const { key, sandbox } = await sandboxFor(source, limits);
  const { context } = sandbox;
  sandbox.deadline = Date.now() + limits.timeoutMs;
  const input = context.newString(JSON.stringify(event));
  const result = context.callFunction(sandbox.fn, context.undefined, input);
  input.dispose();
  if (result.error) {
    const timedOut = Date.now() > sandbox.deadline;
    const why = describeError(context, result.error);
    dispose(key); // its heap or stack may be spent; the next run starts afresh
    if (timedOut) throw new TransformationError(`timed out after ${limits.timeoutMs} ms (the time limit)`);
    if (/out of memory/i.test(why)) throw new TransformationError(`ran out of memory (the limit is ${limits.memoryBytes} bytes)`);
    throw new TransformationError(`threw ${why}`);
  }
  const text = context.getString(result.value);
  result.value.dispose();
  if (Buffer.byteLength(text, "utf8") > limits.maxOutputBytes) throw new TransformationError(`returned ${Buffer.byteLength(text, "utf8")} bytes, over the limit of ${limits.maxOutputBytes}`);
  return resultOf(text);
}

const RESULT_KEYS = new Set(["body", "headers", "url"]);

function resultOf(text: string): TransformationResult {
  if (text === "undefined") throw new TransformationError("returned undefined; return null to skip the delivery, or { body, headers?, url? }");
  const out = JSON.parse(text) as unknown;
  if (out === null) return { skip: true };
  if (typeof out !== "object" || Array.isArray(out)) throw new TransformationError(`returned ${Array.isArray(out) ? "an array" : `a ${typeof out}`}; return null to skip the delivery, or { body, headers?, url? }`);
  const o = out as Record<string, unknown>;
  const extra = Object.keys(o).filter((k) => !RESULT_KEYS.has(k));
  if (extra.length > 0) throw new TransformationError(`returned unknown field(s) ${extra.join(", ")}; only body, headers and url are read`);
  if (o.body === undefined) throw new TransformationError("returned no body; return { body } (a string is sent as is, any other JSON value as its JSON text)");
  const body = typeof o.body === "string" ? o.body : JSON.stringify(o.body);
  const result: TransformationResult = { skip: false, body };
  if (o.headers !== undefined) {
    const parsed = safeParse(headersSchema, o.headers);
    if (!parsed.success) throw new TransformationError(`returned invalid headers: ${parsed.error.issues.map((i) => `${i.path.join(".") || "headers"}: ${i.message}`).join("; ")}`);
    result.headers = parsed.data as Record<string, string>;
  }
  if (o.url !== undefined) {
    let url: URL | null = null;
    try { url = typeof o.url === "string" ? new URL(o.url) : null; } catch { url = null; }
    if (!url || (url.protocol !== "https:" && url.protocol !== "http:") || url.username || url.password) throw new TransformationError("returned an invalid url: it must be an absolute http(s) URL without credentials");
    result.url = url.href;
  }
  return result;
}

/** Refuses (OutboundValidationError at `where`) a transformation that is too long, does not compile, or is not a function. */
export async function checkTransformation(source: unknown, where = "transformation"): Promise<string> {
  if (typeof source !== "string" || source.trim().length === 0) throw new OutboundValidationError(`Invalid subscription: ${where}: must be the JavaScript source of a function (event) => ({ body, headers?, url? } | null).`, [{ path: where, message: "must be a function's source" }]);
  if (source.length > MAX_TRANSFORMATION_LENGTH) throw new OutboundValidationError(`Invalid subscription: ${where}: at most ${MAX_TRANSFORMATION_LENGTH} characters.`, [{ path: where, message: `at most ${MAX_TRANSFORMATION_LENGTH} characters` }]);
  try {
    await sandboxFor(source, DEFAULT_TRANSFORMATION_LIMITS);
  } catch (error) {
    if (!(error instanceof TransformationError)) throw error;
    throw new OutboundValidationError(`Invalid subscription: ${where}: ${error.message}.`, [{ path: where, message: error.message }]);
  }
  return source;
}
