/**
 * AWS management: API Gateway (HTTP API payload 2.0, or REST proxy 1.0) → the management API
 * (shared/cloud/management.ts) → the proxy result. Translate the event, call the core, translate
 * back. The admin token is the Secrets Manager secret `WEBHOOKS_ADMIN_TOKEN_SECRET_ARN` names.
 *
 * The path: HTTP API's `rawPath` carries a named stage as its first segment (`/prod/…`; none for
 * `$default`), REST's `path` does not; the stage is removed, then `WEBHOOKS_MANAGEMENT_BASE_PATH`
 * (e.g. `/api` for a route `ANY /api/{proxy+}`). Bodies: up to 4 MiB, whether API Gateway sends
 * them as text or base64 (Lambda's 6 MB invocation payload holds a base64 body of that size).
 */
import type { APIGatewayProxyEvent, APIGatewayProxyEventV2, APIGatewayProxyResult } from "aws-lambda";
import { invalidSettings, managementHostFor, type ManagementHost } from "../../shared/cloud/management.js";
import { serializeResponse, type RawRequest, type RequestHeaders } from "../../shared/server/core.js";
import { wakeOnFirstUse } from "../../shared/cloud/relayWake.js";
import { awsRuntime, type AwsRuntime } from "./runtime.js";
import { withTelemetry } from "../telemetry.js";
import { AWS_TELEMETRY } from "./telemetry.js";

type ProxyEvent = APIGatewayProxyEvent | APIGatewayProxyEventV2;

/** What a management request may carry on AWS: under Lambda's 6 MB payload once base64-encoded. */
export const AWS_MANAGEMENT_BODY_CAP = 4 * 1024 * 1024;

const isV2 = (event: ProxyEvent): event is APIGatewayProxyEventV2 => (event as APIGatewayProxyEventV2).version === "2.0";

/** Lower-case names; a header sent several times (REST's multiValueHeaders) joined with ", ", as HTTP allows. */
function headersOf(event: ProxyEvent): RequestHeaders {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.headers ?? {})) if (value !== undefined) out[name.toLowerCase()] = value;
  const multi = isV2(event) ? undefined : event.multiValueHeaders;
  for (const [name, values] of Object.entries(multi ?? {})) if (values && values.length > 0) out[name.toLowerCase()] = values.join(", ");
  return out;
}

/** REST's query as it arrived (each value of a repeated parameter kept, so a repeat is still refused). */
function restQuery(event: APIGatewayProxyEvent): string {
  const q = new URLSearchParams();
  const multi = event.multiValueQueryStringParameters;
  if (multi) for (const [name, values] of Object.entries(multi)) for (const v of values ?? []) q.append(name, v);
  else for (const [name, v] of Object.entries(event.queryStringParameters ?? {})) if (v !== undefined) q.append(name, v);
  const text = q.toString();
  return text ? `?${text}` : "";
}

/** The request of `event` for the core: the stage removed from the path, the body decoded. */
export function rawRequestOf(event: ProxyEvent, basePath: string | undefined): RawRequest {
  let method: string;
  let url: string;
  if (isV2(event)) {
    method = event.requestContext.http.method;
    let path = event.rawPath || "/";
    const stage = event.requestContext.stage;
    if (stage && stage !== "$default" && (path === `/${stage}` || path.startsWith(`/${stage}/`))) path = path.slice(stage.length + 1) || "/";
    url = path + (event.rawQueryString ? `?${event.rawQueryString}` : "");
  } else {
    method = event.httpMethod;
    url = (event.path || "/") + restQuery(event);
  }
  const body = event.body == null ? undefined : Buffer.from(event.body, event.isBase64Encoded ? "base64" : "utf8");
  return { method, url, headers: headersOf(event), body, basePath };
}

/** The proxy result: text bodies as they are (JSON, HTML, script, style), anything else base64. */
function resultOf(method: string, response: Awaited<ReturnType<ManagementHost["handle"]>>): APIGatewayProxyResult {
  const { status, headers, body } = serializeResponse(response, method);
  const text = /^(application\/(json|[a-z0-9.+-]+\+json)|text\/)/i.test(headers["content-type"] ?? "application/json");
  return {
    statusCode: status,
    headers,
    body: body === undefined ? "" : text ? body.toString("utf8") : body.toString("base64"),
    isBase64Encoded: body !== undefined && !text,
  };
}

/**
 * Scheduled mode: the stack names the relay function, and a write that makes deliveries due wakes
 * it (functions/aws/wakeRelay.ts, loaded on the first wake-up). Listening mode names none: a run
 * always listens.
 */
function relayWakeUp(runtime: AwsRuntime): (() => Promise<void>) | undefined {
  const name = runtime.settings.WEBHOOKS_RELAY_FUNCTION;
  if (!name) return undefined;
  return wakeOnFirstUse(() => import("./wakeRelay.js").then((m) => m.lambdaRelayWaker(name)));
}

export async function handleManagement(runtime: AwsRuntime, event: ProxyEvent): Promise<APIGatewayProxyResult> {
  const request = rawRequestOf(event, runtime.settings.WEBHOOKS_MANAGEMENT_BASE_PATH);
  const host = managementHostFor(runtime, { tokenSetting: "WEBHOOKS_ADMIN_TOKEN_SECRET_ARN", cap: AWS_MANAGEMENT_BODY_CAP, wakeRelay: relayWakeUp(runtime) });
  return resultOf(request.method, await host.handle(request));
}

export const handler = withTelemetry(AWS_TELEMETRY, async (event: ProxyEvent): Promise<APIGatewayProxyResult> => {
  let runtime: AwsRuntime;
  try {
    runtime = awsRuntime();
  } catch (error) {
    return resultOf("GET", invalidSettings(error));
  }
  return handleManagement(runtime, event);
});
