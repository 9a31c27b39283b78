/**
 * A sender of a body over the limit always reads the 413 (and one using the wrong method the
 * 405), even with `connection: close` and a body of megabytes: the server reads and discards the
 * rest of the body before it answers and closes, so the sender is not cut off mid-write (EPIPE,
 * reset) and never left to retry a request that cannot succeed.
 */
import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHttpServer } from "../../shared/server/router.js";

let server: Server;
let port: number;

beforeAll(async () => {
  server = createHttpServer({
    adminToken: "oversized-body-test-token",
    maxBodyBytes: 256 * 1024,
    routes: [
      { method: "POST", path: "/webhooks/:partner", auth: "none", handler: async (req) => ({ status: 202, body: { bytes: (await req.body()).length } }) },
      { method: "GET", path: "/only-get", auth: "none", handler: async () => ({ status: 200, body: {} }) },
    ],
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => { await new Promise((r) => server.close(r)); });

/** Writes the whole request in 64 KiB chunks, then reads what came back. */
function rawRequest(method: string, path: string, bodyBytes: number, headers: Record<string, string> = {}): Promise<{ status: number | undefined; error?: string }> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let response = "";
    let writeError: string | undefined;
    socket.on("data", (d) => { response += d.toString("latin1"); });
    socket.on("error", (e) => { writeError = (e as NodeJS.ErrnoException).code ?? e.message; });
    socket.on("close", () => {
      const status = /^HTTP\/1\.1 (\d{3})/.exec(response)?.[1];
      resolve({ status: status ? Number(status) : undefined, error: writeError });
    });
    const head = [`${method} ${path} HTTP/1.1`, "host: localhost", "connection: close", "content-type: application/json", `content-length: ${bodyBytes}`,
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), "", ""].join("\r\n");
    socket.write(head);
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let sent = 0;
    // A few milliseconds between chunks, as a sender on a real network: the body is still
    // arriving when the server has its answer.
    const pump = () => {
      if (sent >= bodyBytes || socket.destroyed) return;
      const n = Math.min(chunk.length, bodyBytes - sent);
      sent += n;
      socket.write(chunk.subarray(0, n), () => setTimeout(pump, 2));
    };
    pump();
  });
}

describe("an early answer to a large body", () => {
  it("reaches every one of 30 senders of 3 MB bodies with connection: close (413)", async () => {
    const results = await Promise.all(Array.from({ length: 30 }, () => rawRequest("POST", "/webhooks/shop", 3 * 1024 * 1024)));
    expect(results.map((r) => r.status)).toEqual(Array(30).fill(413));
  });

  it("reaches a sender using the wrong method with a large body (405), and small bodies are still served", async () => {
    expect((await rawRequest("POST", "/only-get", 3 * 1024 * 1024)).status).toBe(405);
    expect((await rawRequest("POST", "/webhooks/shop", 1000)).status).toBe(202);
  });

  it("gives up draining past its bound: the 413 is still written, then the connection closes", async () => {
    // 40 MiB is beyond the 16 MiB drain bound: the sender may be cut off, but the server is not stuck reading it.
    const result = await rawRequest("POST", "/webhooks/shop", 40 * 1024 * 1024);
    expect([413, undefined]).toContain(result.status);
  });
});
