/**
 * An outage stays readable in the log: the first failure of a kind in full, then one line per
 * interval with the count, instead of a line per failed request or poll.
 */
import { Writable } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import { pino } from "pino";
import { repeatedFailures } from "../../shared/telemetry/repeatedFailures.js";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({ write(chunk, _e, cb) { lines.push(JSON.parse(String(chunk))); cb(); } });
  return { lines, logger: pino({ level: "info" }, stream) };
}

describe("repeatedFailures", () => {
  afterEach(() => { vi.useRealTimers(); });

  it("logs the first failure, counts the rest per interval, and starts afresh after a quiet interval", () => {
    vi.useFakeTimers();
    const { lines, logger } = capture();
    const failures = repeatedFailures(logger, 10_000);
    for (let i = 0; i < 492; i++) failures.record("ingest:database_unavailable", "warn", { eventId: `e${i}` }, "inbound event not stored; answered 503");
    failures.record("relay:claim", "error", { stage: "claim" }, "relay error; retrying");
    expect(lines.map((l) => l.msg)).toEqual(["inbound event not stored; answered 503", "relay error; retrying"]);

    vi.advanceTimersByTime(10_000);
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatchObject({ level: 40, repeated: 491, eventId: "e491", msg: "inbound event not stored; answered 503 (491 more like this in the last 10 s)" });

    failures.record("ingest:database_unavailable", "warn", { eventId: "later" }, "inbound event not stored; answered 503");
    vi.advanceTimersByTime(10_000);
    expect(lines.at(-1)).toMatchObject({ repeated: 1, eventId: "later" });

    vi.advanceTimersByTime(20_000); // a whole quiet interval: the window closes without a line
    expect(lines).toHaveLength(4);
    failures.record("ingest:database_unavailable", "warn", { eventId: "next outage" }, "inbound event not stored; answered 503");
    expect(lines.at(-1)).toMatchObject({ eventId: "next outage", msg: "inbound event not stored; answered 503" });
  });

  it("flush writes what is pending", () => {
    const { lines, logger } = capture();
    const failures = repeatedFailures(logger, 60_000);
    failures.record("k", "error", {}, "boom");
    failures.record("k", "error", {}, "boom");
    failures.flush();
    expect(lines.map((l) => l.msg)).toEqual(["boom", "boom (1 more like this in the last 60 s)"]);
  });
});
