/**
 * One cloud function's bundle in its own Node 22 process, with exactly the environment a test
 * gives it (and PATH, so the process can start): nothing of the test process leaks in, so a
 * setting the stack forgot is missing there too. The driver module (test/wiring/drivers/<cloud>.mjs)
 * imports the bundle, plays the cloud's invoker, and answers `invoke` through rpc.mjs.
 */
import { fork, type ChildProcess } from "node:child_process";
import { node22 } from "./node22.js";

export interface FunctionProcess {
  /** Sends one invocation to the driver; rejects with the driver's error (name and message kept). */
  invoke<T = unknown>(kind: string, payload?: unknown, timeoutMs?: number): Promise<T>;
  /** What the function wrote (its logs), stdout and stderr together. */
  output(): string;
  /** The Node version the function runs on. */
  readonly version: string;
  stop(): Promise<void>;
}

export class FunctionInvocationError extends Error {
  constructor(readonly remoteName: string, message: string, readonly remoteStack?: string) {
    super(message);
    this.name = remoteName;
  }
}

export interface StartOptions {
  /** Absolute path of the driver module. */
  driver: string;
  /** Passed to the driver as its first argument: where the bundle's index.mjs is. */
  bundleDir: string;
  env: Record<string, string>;
  /** More arguments for the driver (after bundleDir). */
  args?: string[];
  /** Milliseconds to wait for the driver's ready message. Default: 30 000. */
  startTimeoutMs?: number;
  /** Node's own flags for the process; default: this process's (fork's default). `[]` starts it as a cloud runtime would, without this process's loaders (tsx). */
  execArgv?: string[];
}

export async function startFunctionProcess(options: StartOptions): Promise<FunctionProcess> {
  const execPath = await node22();
  if (!execPath) throw new Error("Node 22 is not available; call skipUnlessNode22() first.");
  const child: ChildProcess = fork(options.driver, [options.bundleDir, ...(options.args ?? [])], {
    execPath,
    ...(options.execArgv ? { execArgv: options.execArgv } : {}),
    cwd: options.bundleDir,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...options.env },
    stdio: ["ignore", "pipe", "pipe", "ipc"],
    serialization: "json",
  });
  let output = "";
  const keep = (chunk: Buffer) => { output = (output + chunk.toString()).slice(-200_000); };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);

  let next = 0;
  const pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  let version = "";
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`The function process did not start within ${options.startTimeoutMs ?? 30_000} ms:\n${output}`)), options.startTimeoutMs ?? 30_000);
    child.on("message", (message: { ready?: boolean; version?: string; id?: number; ok?: boolean; result?: unknown; error?: { name: string; message: string; stack?: string } }) => {
      if (message.ready) {
        version = message.version ?? "";
        clearTimeout(timer);
        resolve();
        return;
      }
      const waiter = pending.get(message.id!);
      if (!waiter) return;
      pending.delete(message.id!);
      if (message.ok) waiter.resolve(message.result);
      else waiter.reject(new FunctionInvocationError(message.error!.name, message.error!.message, message.error!.stack));
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      const error = new Error(`The function process exited (${code ?? signal}):\n${output}`);
      reject(error);
      for (const waiter of pending.values()) waiter.reject(error);
      pending.clear();
    });
  });
  await ready;

  return {
    get version() { return version; },
    output: () => output,
    invoke<T>(kind: string, payload?: unknown, timeoutMs = 60_000): Promise<T> {
      const id = next++;
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => { pending.delete(id); reject(new Error(`invoke(${kind}) took over ${timeoutMs} ms; function output:\n${output.slice(-4000)}`)); }, timeoutMs);
        pending.set(id, {
          resolve: (v) => { clearTimeout(timer); resolve(v as T); },
          reject: (e) => { clearTimeout(timer); reject(e); },
        });
        // A process stopped meanwhile (a test's teardown while a relay run is in flight): an error, not a crash.
        if (!child.connected) return reject(new Error(`invoke(${kind}): the function process has exited`));
        child.send({ id, kind, payload: payload ?? null }, (error) => { if (error) { pending.delete(id); clearTimeout(timer); reject(error); } });
      });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => { child.kill("SIGKILL"); resolve(); }, 3000);
        child.once("exit", () => { clearTimeout(timer); resolve(); });
      });
    },
  };
}
