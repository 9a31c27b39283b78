/**
 * A real HTTP receiver on 127.0.0.1 for relay tests: records every request and answers with
 * whatever the test's `respond` decides (status, headers, delay).
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  webhookId: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Order of arrival, from 0. */
  seq: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Wait before answering (a slow receiver), or until the promise settles. */
  delay?: number | Promise<unknown>;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Replaceable at any time. */
  respond: (r: Received) => Answer;
  /** Requests whose answer is being delayed. */
  readonly inFlight: number;
  close(): Promise<void>;
}

export async function startReceiver(respond: (r: Received) => Answer = () => ({ status: 200 })): Promise<Receiver> {
  const received: Received[] = [];
  let inFlight = 0;
  const receiver: Receiver = {
    url: "",
    received,
    respond,
    get inFlight() { return inFlight; },
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const r: Received = { webhookId: String(req.headers["webhook-id"] ?? ""), headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), seq: received.length };
      received.push(r);
      const answer = receiver.respond(r);
      if (answer.delay !== undefined) {
        inFlight++;
        if (typeof answer.delay === "number") await new Promise((ok) => setTimeout(ok, answer.delay as number));
        else await answer.delay.catch(() => {});
        inFlight--;
      }
      res.writeHead(answer.status, answer.headers ?? {});
      res.end(answer.body ?? "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return receiver;
}

/** Polls `check` until it returns true (or a truthy value), failing after `timeoutMs` with `what`. */
export async function waitFor<T>(what: string, check: () => Promise<T> | T, timeoutMs = 20_000, everyMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Empties every outbound table, so each test starts from nothing. */
export async function resetOutbound(db: { query(text: string): Promise<unknown> }): Promise<void> {
  // CASCADE: tables that reference subscriptions (migration 027's outbound_listeners) are emptied with them.
  await db.query("TRUNCATE outbound_attempt_rows, outbound_replays, outbound_deliveries, outbound_events, outbound_subscriptions, retention_runs CASCADE");
}
