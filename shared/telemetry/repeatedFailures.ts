/**
 * Repeated failures, summarised: during an outage the same failure happens for every request and
 * every poll, and a line each would bury the one line that matters. The first failure of a kind
 * is logged at once, in full; the ones after it within the interval are only counted, and one line
 * per interval says how many there were (with the last one's details). A kind that stops failing
 * costs nothing further: its timer is not kept once an interval passes without a repeat.
 */
import type { Logger } from "./log.js";

export type FailureLevel = "error" | "warn";

export interface RepeatedFailures {
  /** Logs `message` with `fields` now, or counts it when the same `kind` was logged within the interval. */
  record(kind: string, level: FailureLevel, fields: Record<string, unknown>, message: string): void;
  /** Writes the pending summaries now (at shutdown). */
  flush(): void;
}

interface Window {
  level: FailureLevel;
  message: string;
  repeated: number;
  last: Record<string, unknown>;
  timer: NodeJS.Timeout;
}

/** Default interval: 10 s, so a 10 s outage is a handful of lines, and a long one a line per 10 s and kind. */
export const REPEAT_INTERVAL_MS = 10_000;

export function repeatedFailures(logger: Logger | undefined, intervalMs = REPEAT_INTERVAL_MS): RepeatedFailures {
  const windows = new Map<string, Window>();
  const summarise = (w: Window) => {
    logger?.[w.level]({ ...w.last, repeated: w.repeated, intervalMs }, `${w.message} (${w.repeated} more like this in the last ${Math.round(intervalMs / 1000)} s)`);
    w.repeated = 0;
  };
  const tick = (kind: string) => {
    const w = windows.get(kind)!;
    if (w.repeated === 0) {
      windows.delete(kind); // quiet for a whole interval: the next failure is logged in full
      return;
    }
    summarise(w);
    w.timer = setTimeout(() => tick(kind), intervalMs);
    w.timer.unref?.();
  };
  return {
    record(kind, level, fields, message) {
      const open = windows.get(kind);
      if (open) {
        open.repeated += 1;
        open.last = fields;
        return;
      }
      logger?.[level](fields, message);
      const timer = setTimeout(() => tick(kind), intervalMs);
      timer.unref?.();
      windows.set(kind, { level, message, repeated: 0, last: fields, timer });
    },
    flush() {
      for (const w of windows.values()) {
        clearTimeout(w.timer);
        if (w.repeated > 0) summarise(w);
      }
      windows.clear();
    },
  };
}

const byLogger = new WeakMap<Logger, RepeatedFailures>();

/** The summariser of one logger, shared by every call site that logs through it. */
export function failuresOf(logger: Logger | undefined): RepeatedFailures {
  if (!logger) return repeatedFailures(undefined);
  let found = byLogger.get(logger);
  if (!found) {
    found = repeatedFailures(logger);
    byLogger.set(logger, found);
  }
  return found;
}
