/** Small helpers for tests of failure paths. */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** The error a promise rejects with (a resolved promise fails the test). */
export async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a failure");
}

/** `host:port` on 127.0.0.1 where nothing listens: a service that is down. */
export async function deadHost(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `127.0.0.1:${port}`;
}
