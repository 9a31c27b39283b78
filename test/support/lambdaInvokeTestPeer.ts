/**
 * A TEST PEER for the one Lambda API call the platform makes: `Invoke` (POST
 * /2015-03-31/functions/{name}/invocations), as the AWS SDK sends it when AWS_ENDPOINT_URL_LAMBDA
 * points here. It records each call (function, invocation type, payload, whether it was SigV4
 * signed), answers as Lambda answers an asynchronous invoke (202, empty body) or a synchronous one
 * (200 with what `run` returned), and hands the payload to `run`, which the test uses to start the
 * function the way Lambda would.
 *
 * moto is not used for this because it runs a Lambda function only inside Docker, which is not
 * here. What this does not model: the signature's validity and IAM (only its presence is
 * recorded), reserved concurrency and throttling, Lambda's internal queue for asynchronous events
 * (its retries and maximum event age), and payload limits.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface LambdaInvocation {
  functionName: string;
  invocationType: string;
  payload: unknown;
  signed: boolean;
  at: number;
}

export interface LambdaInvokeTestPeer {
  url: string;
  invocations: LambdaInvocation[];
  close(): Promise<void>;
}

const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;

export async function startLambdaInvokeTestPeer(run: (invocation: LambdaInvocation) => Promise<unknown>): Promise<LambdaInvokeTestPeer> {
  const invocations: LambdaInvocation[] = [];
  const reply = (res: ServerResponse, status: number, body?: unknown) => {
    res.writeHead(status, { "content-type": "application/json" }).end(body === undefined ? "" : JSON.stringify(body));
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const match = INVOKE_PATH.exec(new URL(req.url ?? "/", "http://peer").pathname);
      if (req.method !== "POST" || !match) return reply(res, 404, { Type: "User", message: `The test peer serves Invoke only, not ${req.method} ${req.url}` });
      let payload: unknown;
      try {
        payload = chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : {};
      } catch {
        return reply(res, 400, { Type: "User", message: "Could not parse request body into json" });
      }
      const invocation: LambdaInvocation = {
        functionName: decodeURIComponent(match[1]!),
        invocationType: String(req.headers["x-amz-invocation-type"] ?? "RequestResponse"),
        payload,
        signed: String(req.headers.authorization ?? "").startsWith("AWS4-HMAC-SHA256 "),
        at: Date.now(),
      };
      invocations.push(invocation);
      const running = run(invocation);
      if (invocation.invocationType === "Event") {
        running.catch(() => {}); // an asynchronous invoke's outcome is not the caller's
        return reply(res, 202);
      }
      running.then((result) => reply(res, 200, result), (error: Error) => reply(res, 200, { errorMessage: error.message }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    invocations,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
