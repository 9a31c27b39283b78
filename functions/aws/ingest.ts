/**
 * AWS ingest: API Gateway (HTTP API payload 2.0, or REST proxy 1.0) → verify → SQS → 202.
 * Translate the event, call the core, translate back; nothing else lives here. Bodies up to
 * MAX_INBOUND_BODY_BYTES (the stack sets 4 MiB, under Lambda's 6 MB invocation payload) are
 * accepted; those above the queue's limit travel by claim-check through S3.
 */
import type { APIGatewayProxyEvent, APIGatewayProxyEventV2, APIGatewayProxyResult } from "aws-lambda";
import { acceptWebhook, NOT_READY_RETRY_AFTER_SECONDS } from "../../shared/cloud/acceptWebhook.js";
import type { HeaderBag } from "../../shared/inbound/verify/index.js";
import { queueAndClaimChecks } from "./clients.js";
import { awsRuntime, type AwsRuntime } from "./runtime.js";
import { withTelemetry } from "../telemetry.js";
import { AWS_TELEMETRY } from "./telemetry.js";

type ProxyEvent = APIGatewayProxyEvent | APIGatewayProxyEventV2;

/** Headers as the verifiers want them: lower-case names, arrays where a header came twice. */
function headersOf(event: ProxyEvent): HeaderBag {
  const out: HeaderBag = {};
  for (const [name, value] of Object.entries(event.headers ?? {})) if (value !== undefined) out[name.toLowerCase()] = value;
  const multi = "multiValueHeaders" in event ? event.multiValueHeaders : undefined;
  for (const [name, values] of Object.entries(multi ?? {})) if (values && values.length > 1) out[name.toLowerCase()] = values;
  return out;
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): APIGatewayProxyResult {
  return { statusCode: status, headers: { "content-type": "application/json; charset=utf-8", ...headers }, body: JSON.stringify(body) };
}

export async function handleIngest(runtime: AwsRuntime, event: ProxyEvent): Promise<APIGatewayProxyResult> {
  const method = "httpMethod" in event ? event.httpMethod : event.requestContext?.http?.method;
  if (method !== "POST") return json(405, { error: { code: "method_not_allowed", message: "Send webhooks with POST." } }, { allow: "POST" });
  const partner = event.pathParameters?.partner;
  if (!partner) return json(404, { error: { code: "unknown_partner", message: "POST /webhooks/<partner>: the partner is missing from the path." } });
  const rawBody = Buffer.from(event.body ?? "", event.isBase64Encoded ? "base64" : "utf8");
  let partners;
  try {
    partners = await runtime.partners();
  } catch (error) {
    runtime.logger.error({ err: error }, "ingest cannot start: configuration or secrets unavailable");
    return json(503, { error: { code: "not_ready", message: "The ingest function is not ready; retry later." } }, { "retry-after": String(NOT_READY_RETRY_AFTER_SECONDS) });
  }
  const targets = async () => ({ queue: await runtime.queue(), objectStore: runtime.objectStore });
  const answer = await acceptWebhook(
    { partners, targets, maxBodyBytes: runtime.tuning.MAX_INBOUND_BODY_BYTES, logger: runtime.logger },
    partner, headersOf(event), rawBody,
  );
  return { statusCode: answer.status, headers: answer.headers, body: JSON.stringify(answer.body) };
}

export const handler = withTelemetry(AWS_TELEMETRY, (event: ProxyEvent): Promise<APIGatewayProxyResult> => handleIngest(awsRuntime(queueAndClaimChecks), event));
