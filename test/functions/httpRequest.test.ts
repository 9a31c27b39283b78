/**
 * shared/cloud/httpRequest.ts against local HTTP servers: `timeoutMs` is a deadline for the whole
 * exchange, not an idle timer, so an answer that trickles in a byte at a time is cut off too.
 */
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { httpRequest, HttpRequestError } from "../../shared/cloud/httpRequest.js";
import { eventually } from "./support.js";
import { failure } from "../support/failures.js";

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function serve(handler: (res: ServerResponse) => void): Promise<string> {
  server = createServer((req, res) => { req.resume(); handler(res); });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/thing`;
}


describe("httpRequest", () => {
  it("resolves with the status, headers and whole body of a complete answer", async () => {
    const url = await serve((res) => res.writeHead(418, { "x-kind": "teapot" }).end("short and stout"));
    const response = await httpRequest(url, { method: "POST", body: "{}", timeoutMs: 5_000 });
    expect(response.status).toBe(418);
    expect(response.headers["x-kind"]).toBe("teapot");
    expect(response.body.toString()).toBe("short and stout");
  });

  it("cuts off an answer that keeps dripping past the deadline, and closes the connection", async () => {
    let closed = false;
    const url = await serve((res) => {
      // A byte every 50 ms for a minute: never idle long enough for an idle timer of 500 ms.
      res.writeHead(200, { "content-type": "text/plain" });
      const drip = setInterval(() => res.write("."), 50);
      res.on("close", () => { clearInterval(drip); closed = true; });
      setTimeout(() => { clearInterval(drip); res.end(); }, 60_000).unref();
    });
    const error = await failure(httpRequest(url, { timeoutMs: 500 }));
    expect(error).toBeInstanceOf(HttpRequestError);
    expect(error.message).toBe(`GET ${new URL(url).origin}/thing: no complete answer within 500 ms`);
    await eventually("the server to see the connection closed", async () => closed);
  });

  it("rejects the same way when no answer starts at all", async () => {
    const url = await serve(() => { /* never answers */ });
    await expect(httpRequest(url, { timeoutMs: 300 })).rejects.toThrow(/: no complete answer within 300 ms$/);
  });

  it("says the request failed when nothing listens", async () => {
    const url = await serve(() => {});
    server!.close();
    server = undefined;
    await expect(httpRequest(url, { timeoutMs: 5_000 })).rejects.toThrow(/^GET http:\/\/127\.0\.0\.1:\d+\/thing failed: .*ECONNREFUSED/);
  });
});
