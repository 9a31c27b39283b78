/** A partner's webhook receiver on 127.0.0.1 for the relay tests: records every request, answers 200. */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface Receiver {
  url: string;
  received: { path: string; headers: Record<string, string>; body: string }[];
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Receiver["received"] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ path: req.url ?? "/", headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
