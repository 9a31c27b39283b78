/**
 * `npm start` as a child process (shared/server/main.ts, as the README runs it) on a test's own
 * DATA_DIR and environment: resolves once it prints its URL, or once it exits (refused to start),
 * with everything it printed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface PlatformProcess {
  child: ChildProcess;
  /** Its stdout and stderr so far. */
  output(): string;
  /** Its exit code (null when killed by a signal). */
  exit: Promise<number | null>;
  /** Set when it started listening; undefined when it exited first. */
  baseUrl?: string;
  /** Resolves once its output matches `pattern` (the banner's later lines may come in a later chunk). */
  printed(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** SIGTERM (a graceful stop) or another signal, then its exit. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function startPlatformProcess(env: Record<string, string>, timeoutMs = 150_000): Promise<PlatformProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "shared/server/main.ts"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: "0", LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const exit = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const started: PlatformProcess = {
    child,
    output: () => output,
    exit,
    async printed(pattern, ms = 10_000) {
      const end = Date.now() + ms;
      while (!pattern.test(output)) {
        if (Date.now() > end || child.exitCode !== null) throw new Error(`${pattern} not printed:\n${output}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return output;
    },
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exit;
    },
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`neither listening nor exited within ${timeoutMs / 1000} s:\n${output}`));
    }, timeoutMs);
    child.stdout!.on("data", (c: Buffer) => {
      output += c.toString();
      const m = /running at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (m && !started.baseUrl) {
        clearTimeout(timer);
        started.baseUrl = m[1];
        resolve(started);
      }
    });
    child.stderr!.on("data", (c: Buffer) => { output += c.toString(); });
    void exit.then(() => { clearTimeout(timer); resolve(started); });
  });
}
