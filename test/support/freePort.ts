import { createServer } from "node:net";

/**
 * A TCP port on 127.0.0.1 that was free a moment ago, for a child server (PostgreSQL, moto,
 * Azurite) that must be told its port. Another process may take it before the child binds it:
 * callers that start such a child retry on EADDRINUSE where it matters (test/support/azurite.ts).
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
