/**
 * One HTTP POST on undici's low-level `dispatch` API, with one deadline for the whole exchange and
 * a capped read of the answer. The higher-level `request()` would build a Readable body stream, an
 * AbortSignal and its listeners for every attempt; at thousands of deliveries a second that
 * bookkeeping cost more CPU than the HTTP itself, so the relay's hot path speaks to the pool directly.
 *
 * Deadlines that pass are handled a few at a time (`expireSoon`), their errors without stack traces:
 * attempts started together time out together, and 100 hanging endpoints' 800 at once held the
 * event loop for hundreds of milliseconds while every healthy answer waited (issue 28).
 */
import type { Dispatcher } from "undici";
import { RATE_LIMIT_HEADERS } from "./rateLimitHeaders.js";

export interface PostOnce {
  origin: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Whole-exchange deadline (queueing for a connection, connect, headers, body), ms. */
  deadlineMs: number;
  /** Response bytes kept. */
  excerptBytes: number;
  /** Response bytes accepted beyond the excerpt before the connection is dropped instead of drained. */
  drainBytes: number;
}

export interface PostResponse {
  status: number;
  retryAfter: string | undefined;
  /** The receiver's rate-limit headers (rateLimitHeaders.ts), when it sent any; undefined otherwise. */
  rateLimit: Record<string, string> | undefined;
  /** The first `excerptBytes` of the response body. */
  excerpt: Buffer;
}

/** The deadline of one attempt passed. */
export class AttemptTimeout extends Error {
  override name = "AttemptTimeout";
  readonly code = "ERR_ATTEMPT_TIMEOUT";
}

/**
 * Attempts whose deadline passed, waiting to be settled and torn down. Timers armed in one tick fire
 * in one tick, with no I/O between them, and each teardown destroys a socket (undici's abort error,
 * its stack read by the stream's destroy and, under tsx, formatted through source maps: ~0.2 ms).
 * So they run EXPIRE_CHUNK per turn of the event loop, answers and database results between turns,
 * each a few milliseconds late at worst; and with no stack trace to capture or format: these errors
 * are expected, only their class is ever read.
 */
const expired: (() => void)[] = [];
const EXPIRE_CHUNK = 16;
let draining = false;

function expireSoon(expire: () => void): void {
  expired.push(expire);
  if (draining) return;
  draining = true;
  setImmediate(drainExpired);
}

function drainExpired(): void {
  const chunk = expired.splice(0, EXPIRE_CHUNK);
  if (expired.length > 0) setImmediate(drainExpired);
  else draining = false;
  for (const expire of chunk) withoutStackTraces(expire);
}

/** Runs `f` with stack-trace capture off: errors it creates (ours, undici's) carry only their message. */
function withoutStackTraces(f: () => void): void {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    f();
  } catch (error) {
    queueMicrotask(() => { throw error; }); // as loud as before, without losing the rest of the chunk
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * How long after the deadline undici's own header and body timeouts fire: a backstop only. Ours is
 * the deadline; theirs, firing first while ours waited for its turn, would tear the socket down in
 * the wave with a stack-traced error.
 */
const UNDICI_BACKSTOP_MS = 1000;

/** Too many response bytes to drain: the answer is complete for us, the connection is dropped. */
class ResponseTooLong extends Error {
  override name = "ResponseTooLong";
}

/** Sends one POST through `dispatcher`; resolves with status and excerpt, rejects on network errors and timeouts. */
export function postOnce(dispatcher: Dispatcher, req: PostOnce): Promise<PostResponse> {
  return new Promise<PostResponse>((resolve, reject) => {
    let settled = false;
    let controller: Dispatcher.DispatchController | null = null;
    let status = 0;
    let retryAfter: string | undefined;
    let rateLimit: Record<string, string> | undefined;
    const kept: Buffer[] = [];
    let keptBytes = 0;
    let seen = 0;

    const finish = (error: Error | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) reject(error);
      else resolve({ status, retryAfter, rateLimit, excerpt: kept.length === 1 ? kept[0]! : Buffer.concat(kept, keptBytes) });
    };
    // A request still queued for a connection has no controller yet: it is settled now and
    // aborted by `onRequestStart` before a byte is written.
    const timer = setTimeout(() => expireSoon(() => {
      if (settled) return; // answered while waiting for its turn
      const timeout = new AttemptTimeout(`no complete response within ${req.deadlineMs} ms`);
      finish(timeout);
      if (controller && !controller.aborted) controller.abort(timeout);
    }), req.deadlineMs);

    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        if (settled) withoutStackTraces(() => c.abort(new AttemptTimeout("deadline passed while waiting for a connection")));
      },
      onResponseStart(_c, statusCode, headers) {
        status = statusCode;
        const ra = headers["retry-after"];
        retryAfter = Array.isArray(ra) ? ra[0] : ra;
        for (const name of RATE_LIMIT_HEADERS) {
          const v = headers[name];
          if (v !== undefined) (rateLimit ??= {})[name] = Array.isArray(v) ? v.join(", ") : String(v);
        }
      },
      onResponseData(c, chunk) {
        if (keptBytes < req.excerptBytes) {
          const part = chunk.length <= req.excerptBytes - keptBytes ? chunk : chunk.subarray(0, req.excerptBytes - keptBytes);
          kept.push(part);
          keptBytes += part.length;
        }
        seen += chunk.length;
        if (seen > req.excerptBytes + req.drainBytes) {
          finish(null);
          c.abort(new ResponseTooLong());
        }
      },
      onResponseEnd() {
        finish(null);
      },
      onResponseError(_c, error) {
        finish(error);
      },
    };
    try {
      dispatcher.dispatch(
        { origin: req.origin, path: req.path, method: "POST", headers: req.headers, body: req.body, headersTimeout: req.deadlineMs + UNDICI_BACKSTOP_MS, bodyTimeout: req.deadlineMs + UNDICI_BACKSTOP_MS },
        handler,
      );
    } catch (error) {
      finish(error as Error);
    }
  });
}
