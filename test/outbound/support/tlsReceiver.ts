/**
 * An HTTPS receiver on 127.0.0.1 that requires a TLS client certificate signed by its CA (as an
 * API gateway with mutual TLS does): a handshake without one, or with another CA's, is refused.
 * Records each request with the common name of the certificate it came with.
 */
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";

export interface TlsReceiver {
  url: string;
  received: { webhookId: string; clientCommonName: string | null }[];
  /** Handshakes refused (no certificate, or one the CA did not sign). */
  readonly refusedHandshakes: number;
  close(): Promise<void>;
}

export async function startTlsReceiver(tls: { key: string; cert: string; ca: string }): Promise<TlsReceiver> {
  const received: TlsReceiver["received"] = [];
  let refused = 0;
  const server: Server = createServer({ key: tls.key, cert: tls.cert, ca: tls.ca, requestCert: true, rejectUnauthorized: true }, (req, res) => {
    const peer = (req.socket as TLSSocket).getPeerCertificate();
    received.push({ webhookId: String(req.headers["webhook-id"] ?? ""), clientCommonName: (peer?.subject?.CN as string | undefined) ?? null });
    req.resume();
    req.on("end", () => { res.writeHead(200); res.end(); });
  });
  server.on("tlsClientError", () => { refused += 1; });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    get refusedHandshakes() { return refused; },
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
