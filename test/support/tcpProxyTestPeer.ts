/**
 * TCP proxy TEST PEER: forwards every connection byte for byte to a real server (PostgreSQL in
 * the fault tests) until told to `cut()`: then every open connection is destroyed at once and new
 * ones are closed as soon as they arrive, as a network partition or a failover looks to a client,
 * until `restore()`. It models no latency, no half-open connection and no packet loss: only
 * connections that break and connections refused.
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

export interface TcpProxyTestPeer {
  port: number;
  /** Connections forwarded so far. */
  readonly connections: number;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxyTestPeer(target: { host: string; port: number }): Promise<TcpProxyTestPeer> {
  const open = new Set<Socket>();
  let down = false;
  let connections = 0;
  const server: Server = createServer((client) => {
    if (down) return void client.destroy();
    connections++;
    const upstream = connect(target.port, target.host);
    open.add(client);
    open.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const peer: TcpProxyTestPeer = {
    port: (server.address() as AddressInfo).port,
    get connections() { return connections; },
    cut() {
      down = true;
      for (const socket of open) socket.destroy();
      open.clear();
    },
    restore() { down = false; },
    async close() {
      peer.cut();
      await new Promise((r) => server.close(r));
    },
  };
  return peer;
}
