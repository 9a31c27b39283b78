/**
 * `httpLoad`: the ingest benchmark's own HTTP/1.1 load generator, in place of autocannon, whose
 * `duration` is counted in whole ticks of its 1-second timer (20,000 requests over 5.01 s or 6.01 s
 * came out as 3,992/s or 3,328/s whatever the true rate). Here the rate is the number of requests
 * over the wall-clock time from the first byte written to the last response read
 * (`performance.now()`, sub-millisecond), the same way the raw INSERT contender is timed.
 *
 * Each request is serialised to bytes before the clock starts, and sent over one of `connections`
 * keep-alive sockets, one request at a time per socket (no pipelining). The client parses only
 * what it needs (status line, Content-Length or chunked framing), so it costs the machine's two
 * cores little next to the server it measures. Latency is per request, from its write to its
 * complete response.
 */
import { connect, type Socket } from "node:net";

export interface HttpRequestSpec {
  headers: Record<string, string>;
  body: string;
}

export interface LoadResult {
  /** Requests per second over the measured wall-clock time. */
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  total: number;
  /** Wall-clock seconds from the first request written to the last response read. */
  seconds: number;
  /** Non-2xx answers: must be 0 for a valid run. */
  failures: number;
  /** The first failure's status and body excerpt, to say why a run is invalid. */
  firstFailure?: string;
  /** CPU time of this (the load-generating) process over the run, per request, in µs. */
  clientCpuUsPerRequest: number;
  /** Each request's latency (ms), to merge runs. */
  latencies: Float64Array;
}

/** Latency percentiles of a run (ms), nearest-rank. */
export function percentiles(latencies: Float64Array | number[]): { p50Ms: number; p99Ms: number } {
  const sorted = Float64Array.from(latencies).sort();
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? 0;
  return { p50Ms: at(0.5), p99Ms: at(0.99) };
}

/** The exact bytes of each request, ready to write. */
export function serialise(baseUrl: string, path: string, requests: readonly HttpRequestSpec[]): Buffer[] {
  const { host } = new URL(baseUrl);
  return requests.map((r) => {
    const body = Buffer.from(r.body);
    let head = `POST ${path} HTTP/1.1\r\nhost: ${host}\r\ncontent-length: ${body.length}\r\n`;
    for (const [name, value] of Object.entries(r.headers)) head += `${name}: ${value}\r\n`;
    return Buffer.concat([Buffer.from(`${head}\r\n`, "latin1"), body]);
  });
}

interface Answer { status: number; body: Buffer }

const HEADER_END = Buffer.from("\r\n\r\n");
const CRLF = Buffer.from("\r\n");

/**
 * Where the response that starts `buf` ends, with its status and body; null while incomplete.
 * Handles Content-Length and chunked bodies (no trailers), which is all a Node server sends here.
 */
function parseResponse(buf: Buffer): { answer: Answer; end: number } | null {
  const headerEnd = buf.indexOf(HEADER_END);
  if (headerEnd < 0) return null;
  const head = buf.toString("latin1", 0, headerEnd).toLowerCase();
  const status = Number(head.slice(9, 12));
  const bodyStart = headerEnd + 4;
  const length = /\r\ncontent-length:\s*(\d+)/.exec(head);
  if (length) {
    const end = bodyStart + Number(length[1]);
    return buf.length < end ? null : { answer: { status, body: buf.subarray(bodyStart, end) }, end };
  }
  if (!/\r\ntransfer-encoding:\s*chunked/.test(head)) return { answer: { status, body: Buffer.alloc(0) }, end: bodyStart };
  const parts: Buffer[] = [];
  let pos = bodyStart;
  for (;;) {
    const lineEnd = buf.indexOf(CRLF, pos);
    if (lineEnd < 0) return null;
    const size = parseInt(buf.toString("latin1", pos, lineEnd), 16);
    if (Number.isNaN(size)) throw new Error(`bad chunk size in a response: ${JSON.stringify(buf.toString("latin1", pos, lineEnd))}`);
    const dataEnd = lineEnd + 2 + size;
    if (buf.length < dataEnd + 2) return null;
    if (size === 0) return { answer: { status, body: Buffer.concat(parts) }, end: dataEnd + 2 };
    parts.push(buf.subarray(lineEnd + 2, dataEnd));
    pos = dataEnd + 2;
  }
}

/** One keep-alive connection that sends a request and resolves with its answer. */
class Connection {
  private pending: Buffer = Buffer.alloc(0);
  private waiting: { resolve: (a: Answer) => void; reject: (e: Error) => void } | null = null;

  private constructor(private readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
      let parsed: ReturnType<typeof parseResponse>;
      try {
        parsed = parseResponse(this.pending);
      } catch (error) {
        this.fail(error as Error);
        return;
      }
      if (!parsed) return;
      this.pending = this.pending.subarray(parsed.end);
      const w = this.waiting;
      this.waiting = null;
      w?.resolve(parsed.answer);
    });
    socket.on("error", (error) => this.fail(error));
    socket.on("close", () => this.fail(new Error("the server closed a keep-alive connection")));
  }

  static open(host: string, port: number): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port, noDelay: true });
      socket.once("connect", () => { socket.off("error", reject); resolve(new Connection(socket)); });
      socket.once("error", reject);
    });
  }

  private fail(error: Error) {
    const w = this.waiting;
    this.waiting = null;
    w?.reject(error);
  }

  send(bytes: Buffer): Promise<Answer> {
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(bytes);
    });
  }

  close() {
    this.socket.removeAllListeners("close");
    this.socket.destroy();
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Sends every request once over `connections` sockets and measures the run.
 * @param overallRate when given, request i is sent no earlier than i / overallRate seconds after
 *   the start (an open schedule shared by all connections); otherwise as fast as answers come.
 */
export async function httpLoad(baseUrl: string, path: string, requests: readonly HttpRequestSpec[], connections: number, overallRate?: number): Promise<LoadResult> {
  const url = new URL(baseUrl);
  const wire = serialise(baseUrl, path, requests);
  const pool = await Promise.all(Array.from({ length: Math.min(connections, wire.length) }, () => Connection.open(url.hostname, Number(url.port))));
  const latencies = new Float64Array(wire.length);
  let next = 0;
  let failures = 0;
  let firstFailure: string | undefined;
  let lastEnd = 0;
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  try {
    await Promise.all(pool.map(async (conn) => {
      while (next < wire.length) {
        const i = next++;
        if (overallRate) {
          const due = started + (i * 1000) / overallRate;
          const wait = due - performance.now();
          if (wait >= 1) await sleep(wait);
        }
        const t0 = performance.now();
        const answer = await conn.send(wire[i]!);
        lastEnd = performance.now();
        latencies[i] = lastEnd - t0;
        if (answer.status < 200 || answer.status > 299) {
          failures++;
          firstFailure ??= `${answer.status} ${answer.body.toString("utf8").slice(0, 300)}`;
        }
      }
    }));
  } finally {
    for (const conn of pool) conn.close();
  }
  const seconds = (lastEnd - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { perSecond: wire.length / seconds, ...percentiles(latencies), total: wire.length, seconds, failures, firstFailure, clientCpuUsPerRequest: (cpu.user + cpu.system) / wire.length, latencies };
}
