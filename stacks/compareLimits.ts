/**
 * The limits a webhook meets end to end, per cloud, read from the synthesized JSON where the
 * stack decides them (ingest body cap, queue settings, timeouts, concurrency) and from the
 * documented service facts where it does not (stacks/serviceFacts.ts).
 */
import type { TerraformJson } from "./app.js";
import type { Cloud } from "./artifacts.js";
import { INGRESS_FACTS, QUEUE_FACTS } from "./serviceFacts.js";
import { allResources, block, resourcesOf, type SynthResource } from "./terraformJson.js";

export type Cells = Record<Cloud, string>;

const days = (seconds: number) => `${+(seconds / 86_400).toFixed(2)} d`;
const durationSeconds = (d: unknown) => Number(String(d).replace(/s$/, ""));
const mib = (bytes: number) => (bytes >= 1 << 20 ? `${+(bytes / (1 << 20)).toFixed(2)} MiB` : `${bytes / 1024} KiB`);
const at = (json: TerraformJson, type: string, component: string): SynthResource | undefined => resourcesOf(json, type).find((r) => r.component === component);

/** The queue resource carrying delivery settings, found by the type its facts are keyed by. */
export function queueOf(json: TerraformJson): SynthResource | undefined {
  for (const type of Object.keys(QUEUE_FACTS)) {
    const found = resourcesOf(json, type).find((r) => r.component === "queue" && !/dlq/.test(r.path));
    if (found) return found;
  }
  return undefined;
}

const deadLetterOf = (json: TerraformJson) => allResources(json).find((r) => r.component === "queue" && /dlq/.test(r.path) && /queue|topic/.test(r.type));

/** Days after which claim-check objects are deleted, from the bucket's lifecycle rule. */
function claimCheckExpiry(json: TerraformJson): string {
  const aws = resourcesOf(json, "aws_s3_bucket_lifecycle_configuration")[0];
  const azure = resourcesOf(json, "azurerm_storage_management_policy")[0];
  const gcp = resourcesOf(json, "google_storage_bucket").find((b) => b.component === "claim-checks");
  const d =
    block(block(aws?.body.rule).expiration).days ??
    block(block(block(azure?.body.rule).actions).base_blob).delete_after_days_since_creation_greater_than ??
    block(block(gcp?.body.lifecycle_rule).condition).age;
  return d === undefined ? "" : `, deleted after ${d} d`;
}

function env(fn: SynthResource | undefined): Record<string, string> {
  if (!fn) return {};
  if (fn.type === "aws_lambda_function") return (block(fn.body.environment).variables ?? {}) as Record<string, string>;
  if (fn.type === "azurerm_linux_function_app") return (fn.body.app_settings ?? {}) as Record<string, string>;
  return (block(fn.body.service_config).environment_variables ?? {}) as Record<string, string>;
}

function inboundBody(cloud: Cloud, json: TerraformJson): string {
  const q = queueOf(json)?.body ?? {};
  const expiry = claimCheckExpiry(json);
  if (cloud === "aws") {
    const ingest = at(json, "aws_lambda_function", "ingress");
    const queue = `SQS max_message_size ${mib(Number(q.max_message_size ?? 262_144))}`;
    if (!ingest) return `${queue} (direct API Gateway → SQS: no ingest, no claim-check)`;
    return `ingest MAX_INBOUND_BODY_BYTES ${mib(Number(env(ingest).MAX_INBOUND_BODY_BYTES))}; ${queue}; larger bodies by claim-check in S3${expiry}`;
  }
  if (cloud === "azure") {
    const ingest = at(json, "azurerm_linux_function_app", "ingress");
    const sku = resourcesOf(json, "azurerm_servicebus_namespace")[0]?.body.sku;
    const limit = q.max_message_size_in_kilobytes ? `${q.max_message_size_in_kilobytes} KB` : `${sku} tier: ${sku === "Premium" ? "100 MB" : "256 KB"}`;
    return `ingest MAX_INBOUND_BODY_BYTES ${mib(Number(env(ingest).MAX_INBOUND_BODY_BYTES))}; Service Bus ${limit}; larger bodies by claim-check in Blob Storage${expiry}`;
  }
  const ingest = at(json, "google_cloudfunctions2_function", "ingress");
  return `ingest MAX_INBOUND_BODY_BYTES ${mib(Number(env(ingest).MAX_INBOUND_BODY_BYTES))}; Pub/Sub ${QUEUE_FACTS.google_pubsub_subscription!.maxMessageSize}; larger bodies by claim-check in Cloud Storage${expiry}`;
}

function ingressTimeout(cloud: Cloud, json: TerraformJson): string {
  if (cloud === "aws") {
    const integration = resourcesOf(json, "aws_apigatewayv2_integration")[0];
    const ingest = at(json, "aws_lambda_function", "ingress");
    const ms = integration?.body.timeout_milliseconds;
    return ingest ? `API Gateway integration ${Number(ms) / 1000} s; ingest Lambda timeout ${ingest.body.timeout} s` : "API Gateway → SQS integration (service default)";
  }
  if (cloud === "azure") {
    const t = env(at(json, "azurerm_linux_function_app", "ingress")).AzureFunctionsJobHost__functionTimeout;
    return `ingest functionTimeout ${t ?? "host default"}; an HTTP answer within ${INGRESS_FACTS.azureHttpResponse.value} s (platform)`;
  }
  const contents = String(block(block(resourcesOf(json, "google_api_gateway_api_config")[0]?.body.openapi_documents).document).contents ?? "");
  const deadline = /"deadline"\s*[=:]\s*(\d+)/.exec(contents)?.[1];
  const ingest = block(at(json, "google_cloudfunctions2_function", "ingress")?.body.service_config);
  return `API Gateway backend deadline ${deadline ?? "default"} s; ingest timeout_seconds ${ingest.timeout_seconds} s`;
}

function largestDelay(cloud: Cloud, json: TerraformJson): string {
  if (cloud === "aws") return `SQS DelaySeconds ≤ ${INGRESS_FACTS.sqsMaxDelaySeconds.value} s on a re-send; longer deferrals wait in the inbox (relay schedule)`;
  if (cloud === "azure") return "scheduled messages, any time ahead";
  const retry = block(queueOf(json)?.body.retry_policy);
  return `no per-message delay: a refused push returns after ${retry.minimum_backoff ?? "?"}-${retry.maximum_backoff ?? "?"} (retry_policy); longer deferrals wait in the inbox`;
}

function attempts(cloud: Cloud, json: TerraformJson): string {
  const b = queueOf(json)?.body ?? {};
  if (cloud === "aws") {
    const redrive = b.redrive_policy ? (JSON.parse(String(b.redrive_policy)) as { maxReceiveCount: number }) : undefined;
    return redrive ? `maxReceiveCount = ${redrive.maxReceiveCount}` : "no redrive";
  }
  if (cloud === "azure") return `max_delivery_count = ${b.max_delivery_count}`;
  return `max_delivery_attempts = ${block(b.dead_letter_policy).max_delivery_attempts}`;
}

function retention(cloud: Cloud, json: TerraformJson): string {
  const b = queueOf(json)?.body ?? {};
  const dlq = deadLetterOf(json);
  if (cloud === "aws") return `${days(Number(b.message_retention_seconds))} (DLQ ${days(Number(dlq?.body.message_retention_seconds))})`;
  if (cloud === "azure") return `default_message_ttl = ${b.default_message_ttl}, then dead-lettered (dead_lettering_on_message_expiration = ${b.dead_lettering_on_message_expiration}); the dead-letter subqueue keeps messages until read`;
  const pull = resourcesOf(json, "google_pubsub_subscription").find((s) => /dlq/.test(s.path));
  return `${days(durationSeconds(b.message_retention_duration))} (DLQ topic ${days(durationSeconds(dlq?.body.message_retention_duration))}, its pull subscription ${days(durationSeconds(pull?.body.message_retention_duration))})`;
}

function lease(cloud: Cloud, json: TerraformJson): string {
  const b = queueOf(json)?.body ?? {};
  if (cloud === "aws") return `visibility_timeout_seconds = ${b.visibility_timeout_seconds}`;
  if (cloud === "azure") return `lock_duration = ${b.lock_duration}`;
  return `ack_deadline_seconds = ${b.ack_deadline_seconds}`;
}

/** How many inbound messages the processor works on at once, and why. */
export function processorConcurrency(cloud: Cloud, json: TerraformJson): string {
  if (cloud === "aws") {
    const mapping = resourcesOf(json, "aws_lambda_event_source_mapping")[0];
    const n = Number(block(mapping?.body.scaling_config).maximum_concurrency);
    const batch = Number(mapping?.body.batch_size);
    return `maximum_concurrency ${n} invocations × batch_size ${batch} = ≤ ${n * batch} messages at once`;
  }
  if (cloud === "azure") {
    const app = at(json, "azurerm_linux_function_app", "workers");
    const n = Number(block(app?.body.site_config).app_scale_limit);
    const calls = Number(env(app).AzureFunctionsJobHost__extensions__serviceBus__maxConcurrentCalls);
    return `app_scale_limit ${n} instances × maxConcurrentCalls ${calls} = ≤ ${n * calls} messages at once`;
  }
  const fn = at(json, "google_cloudfunctions2_function", "workers");
  const c = block(fn?.body.service_config);
  const n = Number(c.max_instance_count);
  const per = Number(c.max_instance_request_concurrency ?? 1);
  return `max_instance_count ${n} × max_instance_request_concurrency ${per} = ≤ ${n * per} pushes at once (pool ${env(fn).WEBHOOKS_DB_POOL_MAX ?? "?"} connections each)`;
}

/** Where the webhook signature is verified, read from the ingress resources. */
function signatureCheck(json: TerraformJson): string {
  const integrations = resourcesOf(json, "aws_apigatewayv2_integration");
  if (integrations.some((i) => i.body.integration_subtype === "SQS-SendMessage")) return "processor Lambda (direct API Gateway → SQS: unsigned requests reach the queue)";
  if (integrations.length > 0) return "ingest Lambda behind API Gateway, before the queue (401 stores nothing)";
  if (resourcesOf(json, "azurerm_linux_function_app").some((r) => r.component === "ingress")) return "ingest Function (HTTP trigger), before the queue";
  if (resourcesOf(json, "google_api_gateway_gateway").length > 0) return "ingest function behind API Gateway (which cannot check an HMAC), before the topic";
  return "—";
}

/** What the relay needs to reach the internet, read from its network resources. */
function outboundPath(json: TerraformJson): string {
  const relayLambda = at(json, "aws_lambda_function", "relay");
  if (relayLambda) {
    const nat = resourcesOf(json, "aws_nat_gateway").length;
    return relayLambda.body.vpc_config ? `relay in VPC → NAT gateway (${nat} aws_nat_gateway) + Elastic IP` : "relay outside VPC: direct";
  }
  const relayApp = at(json, "azurerm_linux_function_app", "relay");
  if (relayApp) {
    const nat = resourcesOf(json, "azurerm_nat_gateway").length;
    return relayApp.body.virtual_network_subnet_id ? `relay VNet-integrated, route-all → NAT gateway (${nat} azurerm_nat_gateway) + static IP` : "relay without VNet: platform outbound";
  }
  const relayFn = at(json, "google_cloudfunctions2_function", "relay");
  if (relayFn) {
    const service = block(relayFn.body.service_config);
    const nat = resourcesOf(json, "google_compute_router_nat").length;
    return service.vpc_connector
      ? `relay via Serverless VPC Access connector, egress ${service.vpc_connector_egress_settings} → Cloud NAT (${nat} google_compute_router_nat) + static IP`
      : "relay without connector: direct";
  }
  return "—";
}

function logRetention(cloud: Cloud, json: TerraformJson): string {
  if (cloud === "aws") return [...new Set(resourcesOf(json, "aws_cloudwatch_log_group").map((g) => String(g.body.retention_in_days)))].join("/") + " d";
  if (cloud === "azure") return `${resourcesOf(json, "azurerm_log_analytics_workspace")[0]?.body.retention_in_days} d`;
  return `${resourcesOf(json, "google_logging_project_bucket_config")[0]?.body.retention_days} d`;
}

const CLOUDS: Cloud[] = ["aws", "azure", "gcp"];

/** The limits rows, label first. */
export function limitRows(stacks: Record<Cloud, TerraformJson>): [string, ...string[]][] {
  const row = (label: string, f: (cloud: Cloud, json: TerraformJson) => string): [string, ...string[]] => [label, ...CLOUDS.map((c) => f(c, stacks[c]))];
  const fact = (label: string, key: "service" | "maxDelay" | "ordering" | "maxRetention") =>
    row(label, (_c, json) => {
      const q = queueOf(json);
      return q ? QUEUE_FACTS[q.type]![key] : "—";
    });
  return [
    fact("queue service", "service"),
    row("largest inbound body", inboundBody),
    row("ingress timeout", ingressTimeout),
    row("largest delay", largestDelay),
    row("inbound delivery attempts before dead letter", attempts),
    row("retention: queue and dead letters", retention),
    fact("service: max retention", "maxRetention"),
    row("visibility / lock / ack", lease),
    row("processor concurrency", processorConcurrency),
    fact("ordering option", "ordering"),
    row("signature checked in", (_c, json) => signatureCheck(json)),
    row("outbound delivery path", (_c, json) => outboundPath(json)),
    ["outbound delivery attempts", ...CLOUDS.map(() => "the platform's retry schedule, the same on every cloud (docs/outbound.md)")],
    row("log retention", logRetention),
  ];
}
