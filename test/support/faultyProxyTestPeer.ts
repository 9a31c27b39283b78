/**
 * Faulty proxy TEST PEER: a local HTTP server in front of a real service (Azurite in the tests)
 * that forwards every request unchanged, except the next ones it is told to spoil: answered with
 * a given status (a transient 503, say) or cut off by closing the connection before any answer.
 * It stands in for the network and the service's bad moments, which the emulator never has; the
 * answers that are forwarded are the real service's. It records each request's method and URL
 * path with query.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type Fault = { status: number; body?: string } | "drop";

export interface FaultyProxyTestPeer {
  /** The proxy's origin with the target's path (`http://127.0.0.1:<port>/devstoreaccount1`). */
  url: string;
  requests: { method: string; path: string; target?: string }[];
  /** Spoil the next `times` requests with `fault` instead of forwarding them. */
  failNext(times: number, fault: Fault): void;
  /** Forward the next request with its body rewritten by `rewrite` (given and returning the body's text). */
  rewriteNext(rewrite: (body: string) => string): void;
  close(): Promise<void>;
}

/** @param target the service's base URL, e.g. Azurite's Blob endpoint. */
export async function startFaultyProxyTestPeer(target: string): Promise<FaultyProxyTestPeer> {
  const upstream = new URL(target);
  const faults: Fault[] = [];
  const requests: { method: string; path: string; target?: string }[] = [];
  const rewrites: ((body: string) => string)[] = [];

  const forward = (req: IncomingMessage, res: ServerResponse) => {
    const out = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on("error", () => res.destroy());
    req.pipe(out);
  };

  const forwardRewritten = (req: IncomingMessage, res: ServerResponse, rewrite: (body: string) => string) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.from(rewrite(Buffer.concat(chunks).toString("utf8")), "utf8");
      const out = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host, "content-length": String(body.length) } }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      out.on("error", () => res.destroy());
      out.end(body);
    });
  };

  const server = createServer((req, res) => {
    const target = req.headers["x-amz-target"];
    requests.push({ method: req.method ?? "", path: req.url ?? "", ...(typeof target === "string" ? { target } : {}) });
    const rewrite = rewrites.shift();
    if (rewrite) return forwardRewritten(req, res, rewrite);
    const fault = faults.shift();
    if (!fault) return forward(req, res);
    req.resume();
    if (fault === "drop") {
      req.socket.destroy();
      return;
    }
    req.on("end", () => res.writeHead(fault.status, { "content-type": "application/xml" }).end(fault.body ?? ""));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${upstream.pathname.replace(/\/+$/, "")}`,
    requests,
    failNext(times, fault) {
      for (let i = 0; i < times; i++) faults.push(fault);
    },
    rewriteNext(rewrite) {
      rewrites.push(rewrite);
    },
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
