/**
 * The Azure management handler (Functions v4 `HttpRequest` → the management API → `HttpResponseInit`),
 * apart from its registration (./management.ts) so tests call it with a real `HttpRequest`.
 * The admin token is app setting ADMIN_TOKEN, a Key Vault reference; the host's route prefix
 * (`/api` unless host.json says otherwise) is part of WEBHOOKS_MANAGEMENT_BASE_PATH.
 */
import type { HttpRequest, HttpResponseInit } from "@azure/functions";
import { invalidSettings, managementHostFor } from "../../shared/cloud/management.js";
import { serializeResponse, type RawRequest, type Response } from "../../shared/server/core.js";
import type { AzureRuntime } from "./runtime.js";
import { coalescedWaker, wakeOnFirstUse } from "../../shared/cloud/relayWake.js";
import { openServiceBusQueue } from "./connections.js";

/**
 * What a management request may carry on Azure. The Functions host takes up to 100 MB; the API's
 * own operations need far less, and the whole body is held in memory.
 */
export const AZURE_MANAGEMENT_BODY_CAP = 32 * 1024 * 1024;

export async function rawRequestOf(request: HttpRequest, basePath: string | undefined): Promise<RawRequest> {
  const url = new URL(request.url);
  const headers: Record<string, string> = {};
  // Names come lower-case; a repeated header comes joined with ", ".
  request.headers.forEach((value, name) => { headers[name.toLowerCase()] = value; });
  return { method: request.method, url: url.pathname + url.search, headers, body: Buffer.from(await request.arrayBuffer()), basePath };
}

export function responseInitOf(method: string, response: Response): HttpResponseInit {
  const { status, headers, body } = serializeResponse(response, method);
  return { status, headers, body };
}

/**
 * Scheduled mode: the stack names the wake-up queue, which the relay app's `relayWake` trigger
 * reads; a write that makes deliveries due sends `{"wake": true}` to it (coalesced,
 * shared/cloud/relayWake.ts), with the app's managed identity (Azure Service Bus Data Sender on
 * that queue alone). The queue's one-minute TTL drops a wake-up no relay took meanwhile.
 */
function relayWakeUp(runtime: AzureRuntime): (() => Promise<void>) | undefined {
  const queueName = runtime.settings.WEBHOOKS_RELAY_WAKE_QUEUE;
  if (!queueName) return undefined;
  return wakeOnFirstUse(() => openServiceBusQueue(runtime.settings, queueName).then((queue) =>
    coalescedWaker(async () => { await queue.send({ body: JSON.stringify({ wake: true }) }); })));
}

export async function managementHttp(runtime: AzureRuntime, request: HttpRequest): Promise<HttpResponseInit> {
  const raw = await rawRequestOf(request, runtime.settings.WEBHOOKS_MANAGEMENT_BASE_PATH);
  const host = managementHostFor(runtime, { tokenSetting: "ADMIN_TOKEN", cap: AZURE_MANAGEMENT_BODY_CAP, wakeRelay: relayWakeUp(runtime) });
  return responseInitOf(raw.method, await host.handle(raw));
}

/** For the registration: a runtime that cannot be made (invalid settings) is a 503, said in the log. */
export async function managementHttpWith(runtime: () => AzureRuntime, request: HttpRequest): Promise<HttpResponseInit> {
  let made: AzureRuntime;
  try {
    made = runtime();
  } catch (error) {
    return responseInitOf(request.method, invalidSettings(error));
  }
  return managementHttp(made, request);
}
