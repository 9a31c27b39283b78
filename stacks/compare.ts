/**
 * `npm run compare`: synthesizes the three stacks and prints them side by side, derived from
 * the synthesized Terraform JSON: which services and resource types each component uses, the
 * limits each stack configures, and the service limits of the queue each stack actually has.
 * Also writes the same content to docs/comparison.md.
 */
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import type { TerraformJson } from "./app.js";
import type { Cloud } from "./artifacts.js";
import { QUEUE_FACTS, serviceOf } from "./serviceFacts.js";
import { synthForChecks } from "./synthForChecks.js";
import { markdownTable, textTable } from "./table.js";
import { allResources, block, resourcesOf, type SynthResource } from "./terraformJson.js";

const CLOUDS: Cloud[] = ["aws", "azure", "gcp"];
const COMPONENTS = ["ingress", "queue", "claim-checks", "workers", "relay", "database", "secrets", "identities", "observability", "network", "hosting"];

export interface Comparison {
  headers: string[];
  components: string[][];
  limits: string[][];
  notes: string[];
}

type Row = [string, ...string[]];

const uniq = <T>(xs: T[]) => [...new Set(xs)];
const days = (seconds: number) => `${+(seconds / 86_400).toFixed(2)} d`;
const durationSeconds = (d: unknown) => Number(String(d).replace(/s$/, ""));
const iso = (d: unknown) => String(d);

function componentCell(json: TerraformJson, component: string): string {
  const resources = allResources(json).filter((r) => r.component === component);
  if (resources.length === 0) return "—";
  const counts = new Map<string, number>();
  for (const r of resources) counts.set(r.type, (counts.get(r.type) ?? 0) + 1);
  const services = uniq(resources.map((r) => serviceOf(r.type))).join(", ");
  const types = [...counts].map(([t, n]) => (n > 1 ? `${t} ×${n}` : t)).join("\n");
  return `${services}\n${types}`;
}

/** The queue resource carrying delivery settings, found by the type its facts are keyed by. */
function queueOf(json: TerraformJson): SynthResource | undefined {
  for (const type of Object.keys(QUEUE_FACTS)) {
    const found = resourcesOf(json, type).find((r) => r.component === "queue" && !/dlq/.test(r.path));
    if (found) return found;
  }
  return undefined;
}

/** Values each stack configures, read from the resources it synthesized. */
function configured(cloud: Cloud, json: TerraformJson): Record<string, string> {
  const q = queueOf(json);
  const b = q?.body ?? {};
  const out: Record<string, string> = {};
  const dlq = allResources(json).find((r) => r.component === "queue" && /dlq/.test(r.path) && /queue|topic/.test(r.type));
  if (cloud === "aws") {
    const redrive = b.redrive_policy ? (JSON.parse(String(b.redrive_policy)) as { maxReceiveCount: number }) : undefined;
    out.attempts = redrive ? `maxReceiveCount = ${redrive.maxReceiveCount}` : "no redrive";
    out.retention = `${days(Number(b.message_retention_seconds))} (DLQ ${days(Number(dlq?.body.message_retention_seconds))})`;
    out.size = b.max_message_size ? `max_message_size = ${Number(b.max_message_size) / 1024} KiB` : "service default";
    out.lease = `visibility_timeout_seconds = ${b.visibility_timeout_seconds}`;
    const mapping = resourcesOf(json, "aws_lambda_event_source_mapping")[0];
    out.concurrency = mapping ? `maximum_concurrency = ${block(mapping.body.scaling_config).maximum_concurrency}, batch_size = ${mapping.body.batch_size}` : "—";
    out.logs = uniq(resourcesOf(json, "aws_cloudwatch_log_group").map((g) => String(g.body.retention_in_days))).join("/") + " d";
  } else if (cloud === "azure") {
    out.attempts = `max_delivery_count = ${b.max_delivery_count}`;
    out.retention = `default_message_ttl = ${iso(b.default_message_ttl)}; dead_lettering_on_message_expiration = ${b.dead_lettering_on_message_expiration}`;
    out.size = b.max_message_size_in_kilobytes ? `${b.max_message_size_in_kilobytes} KB` : `tier default (${resourcesOf(json, "azurerm_servicebus_namespace")[0]?.body.sku} SKU)`;
    out.lease = `lock_duration = ${iso(b.lock_duration)}`;
    const processor = resourcesOf(json, "azurerm_linux_function_app").find((r) => r.component === "workers");
    const settings = (processor?.body.app_settings ?? {}) as Record<string, string>;
    out.concurrency = `app_scale_limit = ${block(processor?.body.site_config).app_scale_limit}, maxConcurrentCalls = ${settings.AzureFunctionsJobHost__extensions__serviceBus__maxConcurrentCalls}`;
    out.logs = `${resourcesOf(json, "azurerm_log_analytics_workspace")[0]?.body.retention_in_days} d`;
  } else {
    out.attempts = `max_delivery_attempts = ${block(b.dead_letter_policy).max_delivery_attempts}`;
    out.retention = `${days(durationSeconds(b.message_retention_duration))} (DLQ topic ${days(durationSeconds(dlq?.body.message_retention_duration))})`;
    out.size = "service maximum (not configurable)";
    out.lease = `ack_deadline_seconds = ${b.ack_deadline_seconds}`;
    const processor = resourcesOf(json, "google_cloudfunctions2_function").find((r) => r.component === "workers");
    out.concurrency = `max_instance_count = ${block(processor?.body.service_config).max_instance_count}`;
    out.logs = `${resourcesOf(json, "google_logging_project_bucket_config")[0]?.body.retention_days} d`;
  }
  return out;
}

/** Where the webhook signature is verified, read from the ingress resources. */
function signatureCheck(json: TerraformJson): string {
  const integrations = resourcesOf(json, "aws_apigatewayv2_integration");
  if (integrations.some((i) => i.body.integration_subtype === "SQS-SendMessage")) return "processor Lambda (direct API Gateway → SQS: unsigned requests reach the queue)";
  if (integrations.length > 0) return "ingest Lambda behind API Gateway, before the queue (401 stores nothing)";
  if (resourcesOf(json, "azurerm_api_management").length > 0) return "API Management policy";
  if (resourcesOf(json, "azurerm_linux_function_app").some((r) => r.component === "ingress")) return "ingest Function (HTTP trigger), before the queue";
  if (resourcesOf(json, "google_api_gateway_gateway").length > 0) return "ingest function behind API Gateway (which cannot check an HMAC), before the topic";
  return "—";
}

/** What the relay needs to reach the internet, read from its network resources. */
function outboundPath(json: TerraformJson): string {
  const relayLambda = resourcesOf(json, "aws_lambda_function").find((r) => r.component === "relay");
  if (relayLambda) {
    const nat = resourcesOf(json, "aws_nat_gateway").length;
    return relayLambda.body.vpc_config ? `relay in VPC → NAT gateway (${nat} aws_nat_gateway) + Elastic IP` : "relay outside VPC: direct";
  }
  const relayApp = resourcesOf(json, "azurerm_linux_function_app").find((r) => r.component === "relay");
  if (relayApp) {
    const nat = resourcesOf(json, "azurerm_nat_gateway").length;
    return relayApp.body.virtual_network_subnet_id ? `relay VNet-integrated, route-all → NAT gateway (${nat} azurerm_nat_gateway) + static IP` : "relay without VNet: platform outbound";
  }
  const relayFn = resourcesOf(json, "google_cloudfunctions2_function").find((r) => r.component === "relay");
  if (relayFn) {
    const service = block(relayFn.body.service_config);
    const nat = resourcesOf(json, "google_compute_router_nat").length;
    return service.vpc_connector
      ? `relay via Serverless VPC Access connector, egress ${service.vpc_connector_egress_settings} → Cloud NAT (${nat} google_compute_router_nat) + static IP`
      : "relay without connector: direct";
  }
  return "—";
}

export function buildComparison(stacks: Record<Cloud, TerraformJson>): Comparison {
  const headers = ["", ...CLOUDS.map((c) => c.toUpperCase())];
  // Known components in a reading order, then any other component a stack has.
  const found = CLOUDS.flatMap((c) => allResources(stacks[c]).map((r) => r.component));
  const order = uniq([...COMPONENTS, ...found.filter((x) => !COMPONENTS.includes(x))]);
  const components = order.map((component): Row => [component, ...CLOUDS.map((c) => componentCell(stacks[c], component))]).filter((row) =>
    row.slice(1).some((cell) => cell !== "—"),
  );
  const facts = CLOUDS.map((c) => {
    const q = queueOf(stacks[c]);
    return q ? QUEUE_FACTS[q.type] : undefined;
  });
  const conf = CLOUDS.map((c) => configured(c, stacks[c]));
  const fact = (label: string, key: keyof NonNullable<(typeof facts)[number]>): Row => [label, ...facts.map((f) => (f ? f[key] : "—"))];
  const set = (label: string, key: string): Row => [label, ...conf.map((c) => c[key] ?? "—")];
  const limits: Row[] = [
    fact("queue service", "service"),
    set("configured: delivery attempts before DLQ", "attempts"),
    fact("service: delivery attempts", "deliveryAttempts"),
    set("configured: retention", "retention"),
    fact("service: max retention", "maxRetention"),
    set("configured: message size", "size"),
    fact("service: max message size", "maxMessageSize"),
    set("configured: visibility / lock / ack", "lease"),
    set("configured: processor concurrency", "concurrency"),
    fact("service: max delay", "maxDelay"),
    fact("service: ordering option", "ordering"),
    ["signature checked in", ...CLOUDS.map((c) => signatureCheck(stacks[c]))],
    ["outbound delivery path", ...CLOUDS.map((c) => outboundPath(stacks[c]))],
    set("configured: log retention", "logs"),
  ];
  const notes = uniq(facts.filter((f) => f !== undefined).map((f) => `${f.service}: ${f.source}`));
  return { headers, components, limits, notes };
}

export function renderText(c: Comparison): string {
  return [
    "Components (services and Terraform resource types, from the synthesized stacks)",
    textTable(c.headers, c.components, 44),
    "",
    "Limits that matter for webhooks (configured = read from the synthesized JSON; service = documented limits)",
    textTable(c.headers, c.limits, 44),
    "",
    ...c.notes.map((n) => `source: ${n}`),
  ].join("\n");
}

export function renderMarkdown(c: Comparison): string {
  return [
    "# AWS, Azure and GCP side by side",
    "",
    "Generated by `npm run compare` from the synthesized stacks (`stacks/compare.ts`); do not edit by hand.",
    "Which services and resources appear, and every *configured* value, is read from the synthesized",
    "Terraform JSON. *Service* rows are documented limits of the queue service found in each stack",
    "(`stacks/serviceFacts.ts`).",
    "",
    "## Components",
    "",
    markdownTable(c.headers, c.components),
    "",
    "## Limits that matter for webhooks",
    "",
    markdownTable(c.headers, c.limits),
    "",
    "Sources:",
    "",
    ...c.notes.map((n) => `- ${n}`),
    "",
  ].join("\n");
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const comparison = buildComparison(synthForChecks());
  console.log(renderText(comparison));
  const target = process.argv[2] ?? "docs/comparison.md";
  writeFileSync(target, renderMarkdown(comparison));
  console.log(`\nwrote ${target}`);
}
