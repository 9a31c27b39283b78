/**
 * What running each stack asks of an operator, read from the synthesized JSON: the database's
 * availability and backups, the egress address, what must be filled in by hand, which secret
 * values Terraform keeps in its state, where the services can run, and cold starts.
 */
import type { TerraformJson } from "./app.js";
import type { Cloud } from "./artifacts.js";
import { API_GATEWAY_REGIONS, COLD_STARTS, ELASTIC_PREMIUM_VCPUS } from "./serviceFacts.js";
import { allResources, block, resourcesOf } from "./terraformJson.js";
import { relayRows } from "./compareRelay.js";
import type { RelayMeasurements } from "./relayMeasured.js";

const CLOUDS: Cloud[] = ["aws", "azure", "gcp"];

function database(cloud: Cloud, json: TerraformJson): string {
  if (cloud === "aws") {
    const c = resourcesOf(json, "aws_rds_cluster")[0]?.body ?? {};
    const s = block(c.serverlessv2_scaling_configuration);
    return `Aurora PostgreSQL ${c.engine_version}, Serverless v2 ${s.min_capacity}-${s.max_capacity} ACU`;
  }
  if (cloud === "azure") {
    const s = resourcesOf(json, "azurerm_postgresql_flexible_server")[0]?.body ?? {};
    return `Flexible Server PostgreSQL ${s.version}, ${s.sku_name}, ${Number(s.storage_mb) / 1024} GB`;
  }
  const i = resourcesOf(json, "google_sql_database_instance")[0]?.body ?? {};
  const s = block(i.settings);
  return `Cloud SQL ${i.database_version}, ${s.tier}, ${s.edition}`;
}

function availability(cloud: Cloud, json: TerraformJson): string {
  if (cloud === "aws") {
    const n = resourcesOf(json, "aws_rds_cluster_instance").length;
    return n > 1 ? `${n} instances: a reader takes over from the writer` : `${n} instance (writer only): no reader to fail over to; add an aws_rds_cluster_instance for HA`;
  }
  if (cloud === "azure") {
    const s = resourcesOf(json, "azurerm_postgresql_flexible_server")[0]?.body ?? {};
    const ha = block(s.high_availability);
    return ha.mode ? `high_availability ${ha.mode}` : `none: one server in zone ${s.zone ?? "?"}, no standby`;
  }
  const s = block(resourcesOf(json, "google_sql_database_instance")[0]?.body.settings);
  return s.availability_type === "REGIONAL" ? "REGIONAL: a standby in another zone (billed as a second instance)" : `${s.availability_type}: no standby (REGIONAL doubles the instance price)`;
}

function backups(cloud: Cloud, json: TerraformJson): string {
  if (cloud === "aws") {
    const c = resourcesOf(json, "aws_rds_cluster")[0]?.body ?? {};
    return `backup_retention_period ${c.backup_retention_period} d, point-in-time restore within it; final snapshot on delete: ${!c.skip_final_snapshot}; deletion_protection ${c.deletion_protection}`;
  }
  if (cloud === "azure") {
    const s = resourcesOf(json, "azurerm_postgresql_flexible_server")[0]?.body ?? {};
    return `backup_retention_days ${s.backup_retention_days}, point-in-time restore within it; geo_redundant_backup_enabled ${s.geo_redundant_backup_enabled}`;
  }
  const i = resourcesOf(json, "google_sql_database_instance")[0]?.body ?? {};
  const b = block(block(i.settings).backup_configuration);
  return `backups ${b.enabled ? "on" : "off"}, point_in_time_recovery_enabled ${b.point_in_time_recovery_enabled}, retained_backups ${block(b.backup_retention_settings).retained_backups}; deletion_protection ${i.deletion_protection}`;
}

function egressIp(json: TerraformJson): string {
  const out = json.output?.egress_ip;
  if (!out) return "none (no static egress address)";
  const m = /\$\{([a-z0-9_]+)\./.exec(String(out.value));
  return `static, output egress_ip (${m?.[1] ?? "?"})`;
}

/** Secrets Terraform creates without a value, or with a placeholder the operator replaces. */
function fillInByHand(cloud: Cloud, json: TerraformJson): string {
  const name = (p: string) => p.split("/").slice(1).join("/");
  // A variable with a default is not the operator's to fill in (existing_generated_secrets: the deploy sets it).
  const passwords = Object.entries((json.variable ?? {}) as Record<string, { default?: unknown }>).filter(([, v]) => v.default === undefined).map(([v]) => `TF_VAR_${v}`);
  const before = passwords.length ? `before deploy: ${passwords.join(", ")}. ` : "";
  if (cloud === "aws") {
    const versions = resourcesOf(json, "aws_secretsmanager_secret_version");
    const empty = resourcesOf(json, "aws_secretsmanager_secret").filter((s) => !versions.some((v) => String(v.body.secret_id).includes(s.name)));
    const confirm = resourcesOf(json, "aws_sns_topic_subscription").some((s) => s.body.protocol === "email") ? "; confirm the SNS e-mail subscription" : "";
    return `${before}after: ${empty.map((s) => String(s.body.name)).join(", ")} (created without a value)${confirm}`;
  }
  if (cloud === "azure") {
    const placeholders = resourcesOf(json, "azurerm_key_vault_secret").filter((s) => (block(s.body.lifecycle).ignore_changes as string[] | undefined)?.includes("value"));
    return `${before}after: ${placeholders.map((s) => String(s.body.name)).join(", ")} (placeholders Terraform never resets)`;
  }
  const placeholders = resourcesOf(json, "google_secret_manager_secret_version").filter((s) => (block(s.body.lifecycle).ignore_changes as string[] | undefined)?.includes("secret_data"));
  return `${before}after: ${placeholders.map((s) => name(s.path)).join(", ")} (first versions Terraform writes once)`;
}

/** The providers' write-only arguments: sent at apply, kept in neither the plan nor the state. */
const WRITE_ONLY_ATTRIBUTES = ["secret_string_wo", "value_wo", "secret_data_wo"];

/** Secrets whose value the stack generates itself, through a write-only argument. */
function generatedByStack(_cloud: Cloud, json: TerraformJson): string {
  const found = allResources(json).filter((r) => WRITE_ONLY_ATTRIBUTES.some((a) => typeof r.body[a] === "string"));
  if (found.length === 0) return "none";
  return `${found.map((r) => r.path.split("/").slice(1).join("/")).join(", ")} (write-only: sent at the first apply, in neither plan nor state)`;
}

/** Attributes whose value Terraform computes from a secret input, so the state holds it. */
const SECRET_ATTRIBUTES = ["value", "secret_data", "secret_string", "password", "administrator_password", "storage_account_access_key", "primary_access_key"];
const SECRET_SOURCE = /var\.(\w+)|uuid\(\)|random_\w+|primary_access_key/g;

/** Where secret values end up in Terraform state: each source (a sensitive variable, a generated value, an account key) and the resources holding it. */
export function secretsInState(json: TerraformJson): string[] {
  const bySource = new Map<string, string[]>();
  for (const r of allResources(json)) {
    for (const attribute of SECRET_ATTRIBUTES) {
      const v = r.body[attribute];
      if (typeof v !== "string") continue;
      for (const m of new Set([...v.matchAll(SECRET_SOURCE)].map((x) => x[0]))) {
        const where = `${r.path.split("/").slice(1).join("/")} ${attribute}`;
        bySource.set(m, [...(bySource.get(m) ?? []), where]);
      }
    }
  }
  const label = (source: string) => (source === "primary_access_key" ? "storage account key" : source === "uuid()" ? "generated by uuid()" : source);
  return [...bySource].map(([source, where]) => `${label(source)}: ${[...new Set(where)].join(", ")}`);
}

function inState(cloud: Cloud, json: TerraformJson): string {
  const found = secretsInState(json);
  if (found.length === 0) return cloud === "aws" ? "none: secrets are created without values or written write-only, RDS keeps the master password (manage_master_user_password)" : "none";
  return found.join("; ");
}

function regions(cloud: Cloud, json: TerraformJson): string {
  if (cloud === "aws") return `${block((json.provider?.aws as unknown[] | undefined)?.[0]).region}: not checked here (every service used is regional AWS; see the AWS Regional Services list)`;
  if (cloud === "azure") return `${resourcesOf(json, "azurerm_resource_group")[0]?.body.location}: not checked here (Elastic Premium and Flexible Server are not in every region)`;
  const gateway = resourcesOf(json, "google_api_gateway_gateway")[0];
  const region = String(gateway?.body.region ?? "?");
  const ok = API_GATEWAY_REGIONS.value.includes(region);
  return `${region}: API Gateway ${ok ? "is offered there" : "is NOT offered there"} (only ${API_GATEWAY_REGIONS.value.join(", ")})`;
}

function coldStart(cloud: Cloud, json: TerraformJson): string {
  const bench = `bench: ${COLD_STARTS.value[cloud]}`;
  if (cloud === "aws") {
    const vpc = resourcesOf(json, "aws_lambda_function").filter((f) => f.body.vpc_config).map((f) => f.component);
    return `Lambda scales to zero; in a VPC: ${vpc.join(", ")}. ${bench}`;
  }
  if (cloud === "azure") {
    const sku = String(resourcesOf(json, "azurerm_service_plan")[0]?.body.sku_name);
    return `${sku} plan${ELASTIC_PREMIUM_VCPUS.value[sku] ? ": at least one instance always ready (no start from zero)" : ""}. ${bench}`;
  }
  const zero = resourcesOf(json, "google_cloudfunctions2_function").filter((f) => !block(f.body.service_config).min_instance_count).map((f) => f.component);
  return `min_instance_count 0 (scale to zero): ${zero.join(", ")}. ${bench}`;
}

/** The operations rows, label first. */
export function operationRows(stacks: Record<Cloud, TerraformJson>, relay?: RelayMeasurements): [string, ...string[]][] {
  const row = (label: string, f: (cloud: Cloud, json: TerraformJson) => string): [string, ...string[]] => [label, ...CLOUDS.map((c) => f(c, stacks[c]))];
  return [
    row("database", database),
    row("database high availability", availability),
    row("backups and point-in-time restore", backups),
    row("egress IP for receivers' allow-lists", (_c, json) => egressIp(json)),
    row("filled in by hand", fillInByHand),
    row("generated by the stack", generatedByStack),
    row("secrets in Terraform state", inState),
    row("regional availability", regions),
    row("cold start", coldStart),
    ...relayRows(stacks, CLOUDS, relay),
  ];
}
