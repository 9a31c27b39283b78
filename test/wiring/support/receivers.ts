/**
 * The wiring tests' webhook receivers: each request's Standard Webhooks signature is checked with
 * the `standardwebhooks` library (an implementation that is not ours) and recorded.
 */
import type { createServer, IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

export interface Received { path: string; type?: string; verified: boolean; body: string }

/** A request handler that verifies with `secret`, records into `received`, and answers `status(path)`. */
export function verifyingHandler(secret: string, received: Received[], status: (path: string) => number) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let verified = false;
      try {
        new Webhook(secret).verify(body, req.headers as Record<string, string>);
        verified = true;
      } catch { /* recorded as unverified */ }
      let type: string | undefined;
      try { type = (JSON.parse(body) as { type?: string }).type; } catch { /* not JSON: no type */ }
      received.push({ path: req.url ?? "/", type, verified, body });
      res.writeHead(status(req.url ?? "/")).end();
    });
  };
}

/** Listens on 127.0.0.1 and, when the machine has it, ::1 (one port): `localhost` may resolve to either. */
export async function listenLocal(make: () => ReturnType<typeof createServer>): Promise<{ port: number; close(): Promise<void> }> {
  const v4 = make();
  await new Promise<void>((resolve) => v4.listen(0, "127.0.0.1", resolve));
  const port = (v4.address() as AddressInfo).port;
  const v6 = make();
  const has6 = await new Promise<boolean>((resolve) => { v6.once("error", () => resolve(false)); v6.listen(port, "::1", () => resolve(true)); });
  const servers = has6 ? [v4, v6] : [v4];
  return { port, close: async () => { for (const s of servers) { s.closeAllConnections(); await new Promise((r) => s.close(r)); } } };
}
