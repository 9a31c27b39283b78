/**
 * The GCP management handler (Functions Framework, HTTP) → the management API, apart from its
 * registration (./management.ts) so tests call it with the framework's real requests.
 *
 * Behind API Gateway the function is invoked with the gateway's own ID token in `Authorization`;
 * the caller's `Authorization` arrives as `X-Forwarded-Authorization`, which then takes its place
 * (only the gateway's service account may invoke the function, so nobody else can set it).
 * The admin token is env ADMIN_TOKEN (a Secret Manager secret the stack mounts).
 *
 * The body is the framework's `rawBody` (its parsers keep the exact bytes). One divergence: a body
 * sent as `application/json` that is not JSON is refused by the framework's parser before this
 * code runs: a 400, but not in the API's error shape.
 */
import type { Request, Response as ExpressResponse } from "@google-cloud/functions-framework";
import { invalidSettings, managementHostFor } from "../../shared/cloud/management.js";
import { coalescedWaker, wakeOnFirstUse } from "../../shared/cloud/relayWake.js";
import { pubsubTopic } from "./connections.js";
import { serializeResponse, type RawRequest, type RequestHeaders, type Response } from "../../shared/server/core.js";
import type { GcpRuntime } from "./runtime.js";

/** What a management request may carry on GCP: Cloud Run's 32 MiB request limit. */
export const GCP_MANAGEMENT_BODY_CAP = 32 * 1024 * 1024;

export function rawRequestOf(req: Request, basePath: string | undefined): RawRequest {
  const headers: RequestHeaders = { ...req.headers };
  const forwarded = headers["x-forwarded-authorization"];
  if (forwarded !== undefined) {
    headers.authorization = Array.isArray(forwarded) ? forwarded[0] : forwarded;
    delete headers["x-forwarded-authorization"];
  }
  return { method: req.method, url: req.originalUrl || req.url, headers, body: req.rawBody ?? Buffer.alloc(0), basePath };
}

function send(res: ExpressResponse, method: string, response: Response): void {
  const { status, headers, body } = serializeResponse(response, method);
  res.status(status).set(headers);
  if (body === undefined) res.end();
  else res.send(body);
}

/**
 * Scheduled mode: the stack names the wake-up topic, whose push subscription starts a relay run;
 * a write that makes deliveries due publishes `{"wake": true}` there (coalesced, shared/cloud/relayWake.ts).
 * Publishing is why it is Pub/Sub and not a request to the relay: the publish is acknowledged in
 * milliseconds and the API answers, whereas a request to the relay lasts the whole run, and Cloud
 * Run throttles this instance's CPU once its own response is sent.
 */
function relayWakeUp(runtime: GcpRuntime): (() => Promise<void>) | undefined {
  const topic = runtime.settings.WEBHOOKS_RELAY_WAKE_TOPIC;
  if (!topic) return undefined;
  return wakeOnFirstUse(() => pubsubTopic(runtime.settings, topic).then((publisher) =>
    coalescedWaker(async () => { await publisher.send({ body: JSON.stringify({ wake: true }) }); })));
}

export async function managementHttp(runtime: GcpRuntime, req: Request, res: ExpressResponse): Promise<void> {
  const raw = rawRequestOf(req, runtime.settings.WEBHOOKS_MANAGEMENT_BASE_PATH);
  const host = managementHostFor(runtime, { tokenSetting: "ADMIN_TOKEN", cap: GCP_MANAGEMENT_BODY_CAP, wakeRelay: relayWakeUp(runtime) });
  send(res, raw.method, await host.handle(raw));
}

/** For the registration: a runtime that cannot be made (invalid settings) is a 503, said in the log. */
export async function managementHttpWith(runtime: () => GcpRuntime, req: Request, res: ExpressResponse): Promise<void> {
  let made: GcpRuntime;
  try {
    made = runtime();
  } catch (error) {
    return send(res, req.method, invalidSettings(error));
  }
  return managementHttp(made, req, res);
}
