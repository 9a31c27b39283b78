/**
 * A background loop without SQL: call `round` again and again; right away while rounds come back
 * full or a wake-up arrived, after `pollIntervalMs` when idle, with a growing pause (up to 30 s)
 * while rounds throw (the database is down). Kept apart so the loop is testable on its own.
 */
import type { Logger } from "pino";
import { failuresOf } from "../telemetry/repeatedFailures.js";

export interface PollLoop {
  /** Run the next round now instead of after the pause. */
  wake(): void;
  /** Stop after the round in flight; resolves when it is done. */
  stop(): Promise<void>;
}

export interface PollLoopOptions {
  /** One round; resolves to true when it was full (more work is probably waiting). */
  round: () => Promise<boolean>;
  pollIntervalMs: number;
  /** Longest pause after failing rounds. Default: 30 000 ms. */
  maxBackoffMs?: number;
  logger?: Logger;
  name: string;
}

export function startPollLoop(options: PollLoopOptions): PollLoop {
  let running = true;
  let pendingWake = false;
  let interrupt: (() => void) | undefined;
  const maxBackoff = options.maxBackoffMs ?? 30_000;

  const loop = (async () => {
    let backoffMs = 0;
    while (running) {
      let full = false;
      try {
        pendingWake = false;
        full = await options.round();
        backoffMs = 0;
      } catch (error) {
        backoffMs = Math.min(Math.max(backoffMs * 2, options.pollIntervalMs), maxBackoff);
        failuresOf(options.logger).record(`${options.name}:round`, "warn", { err: error, retryInMs: backoffMs }, `${options.name}: round failed; will retry`);
      }
      if (!running || (backoffMs === 0 && (full || pendingWake))) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, backoffMs || options.pollIntervalMs);
        interrupt = () => { clearTimeout(timer); resolve(); };
      });
      interrupt = undefined;
    }
  })();

  return {
    wake() {
      pendingWake = true;
      interrupt?.();
    },
    async stop() {
      running = false;
      interrupt?.();
      await loop;
    },
  };
}
