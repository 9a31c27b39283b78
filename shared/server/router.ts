/**
 * The local HTTP server: node:http in front of the core (./core.ts). What only a streaming
 * server has to care about lives here: the body is read from the socket only when a route asks
 * for it, with the limit enforced while it arrives, and an early answer (413, 401, 405…) waits
 * until the rest of a large upload is drained, so the sender reads it instead of a reset.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createApp, HttpError, serializeResponse, type AppOptions, type Response } from "./core.js";

// The core's names, for the many modules that import them from here.
export * from "./core.js";

/** Options of the local server: the core's. */
export type ServerOptions = AppOptions;

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new HttpError(413, "payload_too_large", `Body is ${declared} bytes; the limit is ${limit}.`));
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new HttpError(413, "payload_too_large", `Body exceeds the limit of ${limit} bytes.`));
        req.removeAllListeners("data");
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    // The client went away mid-body: its request is over, and this is no server fault (not a 5xx).
    const aborted = () => reject(new HttpError(400, "request_aborted", "The request body was cut off before its end."));
    req.on("error", aborted);
    req.on("aborted", aborted);
  });
}

/** An early answer drains at least this much of a body still arriving (or 8 × the body limit). */
export const DRAIN_AT_LEAST_BYTES = 16 * 1024 * 1024;
/** …for at most this long. */
export const DRAIN_TIMEOUT_MS = 15_000;

/**
 * Reads and discards what is left of a request body, up to `maxBytes` and DRAIN_TIMEOUT_MS.
 * True when the body ended: the connection can then carry the answer and stay usable.
 */
function drainRequest(req: IncomingMessage, maxBytes: number): Promise<boolean> {
  if (req.complete) return Promise.resolve(true);
  return new Promise((resolve) => {
    let seen = 0;
    const finish = (ended: boolean) => {
      clearTimeout(timer);
      req.off("data", count);
      req.off("end", onEnd);
      req.off("error", onFail);
      req.off("close", onFail);
      resolve(ended);
    };
    const count = (chunk: Buffer) => { seen += chunk.length; if (seen > maxBytes) finish(false); };
    const onEnd = () => finish(true);
    const onFail = () => finish(req.complete);
    const timer = setTimeout(() => finish(false), DRAIN_TIMEOUT_MS);
    timer.unref?.();
    req.on("data", count);
    req.on("end", onEnd);
    req.on("error", onFail);
    req.on("close", onFail);
    req.resume();
  });
}

/**
 * Sends `response` once the request body is read. An answer given before the body was read (a
 * 413, a 401 or a 405 for a large upload) is useless if the connection is closed while the sender
 * is still writing: it gets EPIPE or a reset, never the status, and retries a request that cannot
 * succeed. So the rest of the body is read and thrown away first (bounded); past the bound the
 * answer goes out with `connection: close`, and the socket is closed once it is written.
 */
async function answer(req: IncomingMessage, res: ServerResponse, response: Response, drainBytes: number): Promise<void> {
  const ended = await drainRequest(req, drainBytes);
  if (res.headersSent || res.destroyed) return;
  if (!ended) {
    send(res, { ...response, headers: { ...response.headers, connection: "close" } });
    res.once("finish", () => req.socket.destroySoon?.());
    return;
  }
  send(res, response);
}

export function send(res: ServerResponse, response: Response, method?: string): void {
  const { status, headers, body } = serializeResponse(response, method);
  res.writeHead(status, headers);
  res.end(body);
}

/** Builds the request handler; exported apart from the server so tests can mount it anywhere. */
export function createHandler(options: ServerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const app = createApp(options);
  // What an early answer (413, 401, 405…) reads and discards of a body still arriving.
  const drainBytes = Math.max(8 * app.maxBodyBytes, DRAIN_AT_LEAST_BYTES);
  return (req, res) => {
    app.handle({ method: req.method ?? "GET", url: req.url ?? "/", headers: req.headers, body: (limit) => readBody(req, limit) })
      .then((response) => answer(req, res, response, drainBytes))
      .catch(() => {
        // Only writing can fail here (the core answers every error); the connection is beyond use.
        if (!res.headersSent) res.destroy();
        else res.end();
      });
  };
}

export function createHttpServer(options: ServerOptions): Server {
  const server = createServer(createHandler(options));
  server.keepAliveTimeout = 65_000;
  // A malformed request line or header never reaches a route: answer 400, not a crash.
  server.on("clientError", (_err, socket) => {
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
    else socket.destroy();
  });
  return server;
}
