/**
 * Real node:http receivers for the transport tests: each records the requests and connections it
 * saw, and answers with whatever the test's handler decides.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  headers: IncomingMessage["headers"];
  body: string;
  url: string;
}

export interface LocalServer {
  url: string;
  port: number;
  received: Received[];
  /** TCP connections accepted so far. */
  connections: () => number;
  close: () => Promise<void>;
}

export async function startServer(
  handler: (req: IncomingMessage, res: ServerResponse, body: string) => void,
  host = "127.0.0.1",
  listenPort = 0,
): Promise<LocalServer> {
  const received: Received[] = [];
  let connections = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      received.push({ headers: req.headers, body, url: req.url ?? "" });
      handler(req, res, body);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.on("connection", () => { connections += 1; });
  await new Promise<void>((resolve) => server.listen(listenPort, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    port,
    received,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/** A port nothing listens on (bound, then released). */
export async function freePort(): Promise<number> {
  const s = await startServer((_q, r) => r.end());
  await s.close();
  return s.port;
}
