/**
 * The scanner rules that apply to our stacks (the checks tools such as Checkov, tfsec/Trivy or
 * KICS run on Terraform), written against the synthesized JSON. A rule's check returns true
 * when the resource complies. A rule that fails on purpose carries its justification in
 * JUSTIFICATIONS below, in code, next to the rule, with the reason.
 */
import type { TerraformJson } from "./app.js";
import type { Cloud } from "./artifacts.js";
import { allResources, block, type SynthResource } from "./terraformJson.js";

export interface SecurityRule {
  id: string;
  cloud: Cloud;
  /** Terraform resource type the rule inspects. */
  type: string;
  title: string;
  check: (resource: SynthResource, json: TerraformJson) => boolean;
}

const body = (r: SynthResource) => r.body;
const ofType = (json: TerraformJson, type: string) => allResources(json).filter((r) => r.type === type);
const asList = (v: unknown): string[] => (Array.isArray(v) ? (v as string[]) : [String(v)]);
const DATA_ACTION = /^(sqs|secretsmanager|rds|rds-db|kms|s3|dynamodb|lambda|logs|sns):/;

interface PolicyStatement {
  Action: string | string[];
  Resource: string | string[];
}

function policyIsScoped(policy: unknown): boolean {
  const statements = (JSON.parse(String(policy)) as { Statement: PolicyStatement[] }).Statement;
  return statements.every((s) =>
    asList(s.Action).every((action) => !action.includes("*") && (!DATA_ACTION.test(action) || !asList(s.Resource).includes("*"))),
  );
}

export const RULES: SecurityRule[] = [
  // ---- AWS
  { id: "aws-sqs-encrypted", cloud: "aws", type: "aws_sqs_queue", title: "SQS queue encrypted at rest", check: (r) => body(r).sqs_managed_sse_enabled === true || Boolean(body(r).kms_master_key_id) },
  { id: "aws-sqs-cmk", cloud: "aws", type: "aws_sqs_queue", title: "SQS queue encrypted with a customer-managed KMS key", check: (r) => Boolean(body(r).kms_master_key_id) },
  { id: "aws-aurora-encrypted", cloud: "aws", type: "aws_rds_cluster", title: "Aurora storage encrypted", check: (r) => body(r).storage_encrypted === true },
  { id: "aws-aurora-not-public", cloud: "aws", type: "aws_rds_cluster_instance", title: "Aurora instance not publicly accessible", check: (r) => body(r).publicly_accessible === false },
  {
    id: "aws-aurora-tls",
    cloud: "aws",
    type: "aws_rds_cluster",
    title: "Aurora requires TLS (rds.force_ssl = 1 in its parameter group)",
    check: (r, json) =>
      ofType(json, "aws_rds_cluster_parameter_group").some(
        (g) =>
          String(body(r).db_cluster_parameter_group_name).includes(g.name) &&
          (body(g).parameter as { name: string; value: string }[]).some((p) => p.name === "rds.force_ssl" && p.value === "1"),
      ),
  },
  { id: "aws-aurora-backups", cloud: "aws", type: "aws_rds_cluster", title: "Aurora backups kept ≥ 7 days", check: (r) => Number(body(r).backup_retention_period) >= 7 },
  { id: "aws-aurora-deletion-protection", cloud: "aws", type: "aws_rds_cluster", title: "Aurora deletion protection", check: (r) => body(r).deletion_protection === true },
  { id: "aws-aurora-managed-password", cloud: "aws", type: "aws_rds_cluster", title: "Aurora password managed in Secrets Manager, not in Terraform", check: (r) => body(r).manage_master_user_password === true && body(r).master_password === undefined },
  { id: "aws-aurora-logs", cloud: "aws", type: "aws_rds_cluster", title: "Aurora logs exported to CloudWatch", check: (r) => asList(body(r).enabled_cloudwatch_logs_exports ?? []).includes("postgresql") },
  { id: "aws-apigw-access-logs", cloud: "aws", type: "aws_apigatewayv2_stage", title: "API Gateway access logging on", check: (r) => Boolean(block(body(r).access_log_settings).destination_arn) },
  { id: "aws-apigw-authorizer", cloud: "aws", type: "aws_apigatewayv2_route", title: "API Gateway route has an authorizer", check: (r) => body(r).authorization_type !== undefined && body(r).authorization_type !== "NONE" },
  { id: "aws-lambda-tracing", cloud: "aws", type: "aws_lambda_function", title: "Lambda X-Ray tracing active", check: (r) => block(body(r).tracing_config).mode === "Active" },
  { id: "aws-lambda-in-vpc", cloud: "aws", type: "aws_lambda_function", title: "Lambda runs inside a VPC", check: (r) => body(r).vpc_config !== undefined },
  { id: "aws-lambda-dlq", cloud: "aws", type: "aws_lambda_function", title: "Lambda has a dead-letter queue for async invocations", check: (r) => body(r).dead_letter_config !== undefined },
  { id: "aws-lambda-env-cmk", cloud: "aws", type: "aws_lambda_function", title: "Lambda environment encrypted with a customer-managed key", check: (r) => Boolean(body(r).kms_key_arn) },
  { id: "aws-lambda-reserved-concurrency", cloud: "aws", type: "aws_lambda_function", title: "Lambda has reserved concurrency", check: (r) => body(r).reserved_concurrent_executions !== undefined },
  { id: "aws-log-retention", cloud: "aws", type: "aws_cloudwatch_log_group", title: "Log group has a retention period", check: (r) => Number(body(r).retention_in_days) > 0 },
  { id: "aws-log-cmk", cloud: "aws", type: "aws_cloudwatch_log_group", title: "Log group encrypted with a customer-managed key", check: (r) => Boolean(body(r).kms_key_id) },
  { id: "aws-secret-cmk", cloud: "aws", type: "aws_secretsmanager_secret", title: "Secret encrypted with a customer-managed key", check: (r) => Boolean(body(r).kms_key_id) },
  { id: "aws-secret-rotation", cloud: "aws", type: "aws_secretsmanager_secret", title: "Secret has automatic rotation", check: () => false },
  { id: "aws-iam-scoped", cloud: "aws", type: "aws_iam_role_policy", title: "IAM policy: no wildcard action, no wildcard resource on data services", check: (r) => policyIsScoped(body(r).policy) },
  {
    id: "aws-s3-public-access-blocked",
    cloud: "aws",
    type: "aws_s3_bucket",
    title: "S3 bucket blocks all public access",
    check: (r, json) => ofType(json, "aws_s3_bucket_public_access_block").some((b) => String(body(b).bucket).includes(r.name) && ["block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets"].every((k) => body(b)[k] === true)),
  },
  { id: "aws-s3-encrypted", cloud: "aws", type: "aws_s3_bucket", title: "S3 bucket default encryption", check: (r, json) => ofType(json, "aws_s3_bucket_server_side_encryption_configuration").some((e) => String(body(e).bucket).includes(r.name)) },
  { id: "aws-s3-tls-only", cloud: "aws", type: "aws_s3_bucket", title: "S3 bucket policy denies non-TLS requests", check: (r, json) => ofType(json, "aws_s3_bucket_policy").some((p) => String(body(p).bucket).includes(r.name) && String(body(p).policy).includes('"aws:SecureTransport":"false"')) },
  { id: "aws-s3-versioning", cloud: "aws", type: "aws_s3_bucket", title: "S3 bucket versioning on", check: (_r, json) => ofType(json, "aws_s3_bucket_versioning").length > 0 },
  { id: "aws-s3-access-logs", cloud: "aws", type: "aws_s3_bucket", title: "S3 bucket server access logging", check: (_r, json) => ofType(json, "aws_s3_bucket_logging").length > 0 },
  { id: "aws-sns-encrypted", cloud: "aws", type: "aws_sns_topic", title: "SNS topic encrypted", check: (r) => Boolean(body(r).kms_master_key_id) },
  { id: "aws-vpc-flow-logs", cloud: "aws", type: "aws_vpc", title: "VPC flow logs enabled", check: (_r, json) => ofType(json, "aws_flow_log").length > 0 },
  { id: "aws-sg-open-egress", cloud: "aws", type: "aws_vpc_security_group_egress_rule", title: "Security group egress not open to 0.0.0.0/0", check: (r) => body(r).cidr_ipv4 !== "0.0.0.0/0" },

  // ---- Azure
  { id: "az-servicebus-min-tls", cloud: "azure", type: "azurerm_servicebus_namespace", title: "Service Bus minimum TLS 1.2", check: (r) => body(r).minimum_tls_version === "1.2" },
  { id: "az-servicebus-local-auth-off", cloud: "azure", type: "azurerm_servicebus_namespace", title: "Service Bus local (SAS) auth disabled", check: (r) => body(r).local_auth_enabled === false },
  { id: "az-servicebus-private", cloud: "azure", type: "azurerm_servicebus_namespace", title: "Service Bus public network access disabled", check: (r) => body(r).public_network_access_enabled === false },
  { id: "az-postgres-not-public", cloud: "azure", type: "azurerm_postgresql_flexible_server", title: "PostgreSQL public network access disabled", check: (r) => body(r).public_network_access_enabled === false && Boolean(body(r).delegated_subnet_id) },
  {
    id: "az-postgres-tls",
    cloud: "azure",
    type: "azurerm_postgresql_flexible_server",
    title: "PostgreSQL requires TLS (require_secure_transport = ON)",
    check: (r, json) => ofType(json, "azurerm_postgresql_flexible_server_configuration").some((c) => String(body(c).server_id).includes(r.name) && body(c).name === "require_secure_transport" && body(c).value === "ON"),
  },
  { id: "az-postgres-backups", cloud: "azure", type: "azurerm_postgresql_flexible_server", title: "PostgreSQL backups kept ≥ 7 days", check: (r) => Number(body(r).backup_retention_days) >= 7 },
  { id: "az-postgres-geo-backup", cloud: "azure", type: "azurerm_postgresql_flexible_server", title: "PostgreSQL geo-redundant backups", check: (r) => body(r).geo_redundant_backup_enabled === true },
  { id: "az-keyvault-purge-protection", cloud: "azure", type: "azurerm_key_vault", title: "Key Vault purge protection", check: (r) => body(r).purge_protection_enabled === true },
  { id: "az-keyvault-rbac", cloud: "azure", type: "azurerm_key_vault", title: "Key Vault uses RBAC authorization", check: (r) => body(r).rbac_authorization_enabled === true },
  { id: "az-keyvault-network-deny", cloud: "azure", type: "azurerm_key_vault", title: "Key Vault network ACL denies by default", check: (r) => block(body(r).network_acls).default_action === "Deny" },
  { id: "az-keyvault-secret-expiry", cloud: "azure", type: "azurerm_key_vault_secret", title: "Key Vault secret has an expiration date", check: (r) => Boolean(body(r).expiration_date) },
  { id: "az-keyvault-secret-content-type", cloud: "azure", type: "azurerm_key_vault_secret", title: "Key Vault secret has a content type", check: (r) => Boolean(body(r).content_type) },
  { id: "az-function-https-only", cloud: "azure", type: "azurerm_linux_function_app", title: "Function App HTTPS only", check: (r) => body(r).https_only === true },
  { id: "az-function-min-tls", cloud: "azure", type: "azurerm_linux_function_app", title: "Function App minimum TLS 1.2", check: (r) => block(body(r).site_config).minimum_tls_version === "1.2" },
  { id: "az-function-ftps-off", cloud: "azure", type: "azurerm_linux_function_app", title: "Function App FTP(S) disabled", check: (r) => block(body(r).site_config).ftps_state === "Disabled" },
  { id: "az-function-identity", cloud: "azure", type: "azurerm_linux_function_app", title: "Function App uses a managed identity", check: (r) => Boolean(block(body(r).identity).type) },
  { id: "az-function-auth", cloud: "azure", type: "azurerm_linux_function_app", title: "Function App has App Service authentication", check: (r) => body(r).auth_settings_v2 !== undefined || body(r).auth_settings !== undefined },
  { id: "az-function-public-access", cloud: "azure", type: "azurerm_linux_function_app", title: "Function App public network access disabled", check: (r) => body(r).public_network_access_enabled === false },
  { id: "az-storage-min-tls", cloud: "azure", type: "azurerm_storage_account", title: "Storage minimum TLS 1.2", check: (r) => body(r).min_tls_version === "TLS1_2" },
  { id: "az-storage-no-public-blobs", cloud: "azure", type: "azurerm_storage_account", title: "Storage forbids public blob access", check: (r) => body(r).allow_nested_items_to_be_public === false },
  { id: "az-storage-shared-key-off", cloud: "azure", type: "azurerm_storage_account", title: "Storage shared key access disabled", check: (r) => body(r).shared_access_key_enabled === false },
  { id: "az-appinsights-local-auth-off", cloud: "azure", type: "azurerm_application_insights", title: "Application Insights local auth disabled", check: (r) => body(r).local_authentication_disabled === true },

  // ---- GCP
  { id: "gcp-sql-ssl-mode", cloud: "gcp", type: "google_sql_database_instance", title: "Cloud SQL requires TLS (ssl_mode)", check: (r) => ["ENCRYPTED_ONLY", "TRUSTED_CLIENT_CERTIFICATE_REQUIRED"].includes(String(block(block(body(r).settings).ip_configuration).ssl_mode)) },
  { id: "gcp-sql-no-public-ip", cloud: "gcp", type: "google_sql_database_instance", title: "Cloud SQL has no public IP", check: (r) => block(block(body(r).settings).ip_configuration).ipv4_enabled === false },
  { id: "gcp-sql-backups", cloud: "gcp", type: "google_sql_database_instance", title: "Cloud SQL backups and point-in-time recovery", check: (r) => { const b = block(block(body(r).settings).backup_configuration); return b.enabled === true && b.point_in_time_recovery_enabled === true; } },
  {
    id: "gcp-sql-log-flags",
    cloud: "gcp",
    type: "google_sql_database_instance",
    title: "Cloud SQL logs checkpoints, connections, disconnections, lock waits",
    check: (r) => {
      const flags = (block(body(r).settings).database_flags ?? []) as { name: string; value: string }[];
      return ["log_checkpoints", "log_connections", "log_disconnections", "log_lock_waits"].every((n) => flags.some((f) => f.name === n && f.value === "on"));
    },
  },
  { id: "gcp-sql-cmek", cloud: "gcp", type: "google_sql_database_instance", title: "Cloud SQL encrypted with a customer-managed key", check: (r) => Boolean(body(r).encryption_key_name) },
  { id: "gcp-pubsub-cmek", cloud: "gcp", type: "google_pubsub_topic", title: "Pub/Sub topic encrypted with a customer-managed key", check: (r) => Boolean(body(r).kms_key_name) },
  {
    id: "gcp-pubsub-dead-letter-grants",
    cloud: "gcp",
    type: "google_pubsub_subscription",
    title: "Dead-letter policy has the service agent's publisher and subscriber grants",
    check: (r, json) => {
      const policy = block(body(r).dead_letter_policy);
      if (!policy.dead_letter_topic) return true; // no dead-lettering, nothing to grant
      const agent = (m: unknown) => String(m).includes("@gcp-sa-pubsub.iam.gserviceaccount.com");
      const publishes = ofType(json, "google_pubsub_topic_iam_member").some((g) => agent(body(g).member) && body(g).role === "roles/pubsub.publisher" && String(policy.dead_letter_topic).includes(String(body(g).topic).split(".")[1] ?? "?"));
      const subscribes = ofType(json, "google_pubsub_subscription_iam_member").some((g) => agent(body(g).member) && body(g).role === "roles/pubsub.subscriber" && String(body(g).subscription).includes(r.name));
      return publishes && subscribes;
    },
  },
  { id: "gcp-bucket-uniform-access", cloud: "gcp", type: "google_storage_bucket", title: "Bucket uses uniform bucket-level access", check: (r) => body(r).uniform_bucket_level_access === true },
  { id: "gcp-bucket-no-public", cloud: "gcp", type: "google_storage_bucket", title: "Bucket public access prevention enforced", check: (r) => body(r).public_access_prevention === "enforced" },
  { id: "gcp-bucket-versioning", cloud: "gcp", type: "google_storage_bucket", title: "Bucket versioning on", check: (r) => block(body(r).versioning).enabled === true },
  { id: "gcp-run-no-public-invoker", cloud: "gcp", type: "google_cloud_run_v2_service_iam_member", title: "No allUsers/allAuthenticatedUsers invoker", check: (r) => !/allUsers|allAuthenticatedUsers/.test(String(body(r).member)) },
  { id: "gcp-function-internal-ingress", cloud: "gcp", type: "google_cloudfunctions2_function", title: "Function ingress internal only", check: (r) => block(body(r).service_config).ingress_settings !== "ALLOW_ALL" },
  { id: "gcp-no-primitive-roles", cloud: "gcp", type: "google_project_iam_member", title: "No owner/editor/viewer project roles", check: (r) => !/^roles\/(owner|editor|viewer)$/.test(String(body(r).role)) },
  { id: "gcp-secret-cmek", cloud: "gcp", type: "google_secret_manager_secret", title: "Secret encrypted with a customer-managed key", check: (r) => JSON.stringify(body(r).replication ?? {}).includes("kms_key_name") },
];

export interface Justification {
  reason: string;
  /** Only resources whose construct path contains one of these are covered. Default: all. */
  only?: string[];
}

/**
 * Why a rule that fails does so on purpose. The security check reports a justification that no
 * longer covers a failing resource as stale, so this list cannot silently outlive the code.
 */
export const JUSTIFICATIONS: Record<string, Justification> = {
  "aws-sqs-cmk": { reason: "SSE-SQS (AWS-owned keys) encrypts at rest; a CMK adds KMS cost and key-policy plumbing and is only needed for cross-account access or key-level audit, which this platform does not use." },
  "aws-apigw-authorizer": { reason: "Webhook senders cannot present IAM or JWT credentials, and an authorizer never sees the body, so it cannot check an HMAC. The ingest Lambda (or, in direct mode, the processor) verifies the signature on the exact bytes. The management route (ANY /api/{proxy+}) is authenticated by the management function itself: the bearer token compared in constant time with the admin token from Secrets Manager (and the API keys in the database), which a JWT authorizer cannot check; a Lambda authorizer would be a second function reading the same secret." },
  "aws-lambda-in-vpc": { reason: "Ingest only calls SQS, S3 and Secrets Manager; keeping it out of the VPC avoids a network interface on the request path. Processor, relay and migrate, which reach the database, run in the private subnets.", only: ["ingress/ingest"] },
  "aws-lambda-dlq": { reason: "No function is invoked asynchronously with a payload worth keeping: ingest and management are synchronous behind API Gateway, the processor is fed by the SQS mapping whose redrive policy is the DLQ, a failed relay tick carries no data (the next tick drains the same outbox), and migrate is invoked synchronously by Terraform (aws_lambda_invocation), whose apply fails with the function's error." },
  "aws-lambda-env-cmk": { reason: "Function environments hold only names, URLs and ARNs; secrets are read from Secrets Manager at cold start, so a CMK would protect nothing secret." },
  "aws-lambda-reserved-concurrency": { reason: "The processor is capped by the event source mapping's maximum_concurrency (which, unlike reserved concurrency, does not throttle messages back to the queue); the relay runs once per tick; migrate once per deploy; ingest must absorb bursts, and API Gateway throttling bounds it (the management route too)." },
  "aws-log-cmk": { reason: "CloudWatch Logs encrypts at rest with service keys; logs carry no secrets or payload bodies by design (the core logs ids, not bodies)." },
  "aws-secret-cmk": { reason: "The default aws/secretsmanager key encrypts at rest; access is limited per secret by IAM. A CMK is only required for cross-account sharing." },
  "aws-secret-rotation": { reason: "The database master secret is created and rotated by RDS itself (manage_master_user_password), and the functions log in with IAM tokens, which expire after 15 minutes. Partner signing secrets are issued by the partners: they rotate on the partner's schedule, and the verifier accepts several secrets during a rotation. The alert webhook's signing secret is shared with the operator's own receiver and rotated with it. The management admin token and the encryption keys are generated by the stack and rotated by the operator (a new version; for the keys, a new key first in the list, docs/deploy.md): a Secrets Manager rotation Lambda could not re-encrypt the database's secrets." },
  "aws-s3-versioning": { reason: "Claim-check objects are written once under a unique key, never overwritten, and expire with the queue retention; versions would only keep payloads longer than the queues that reference them." },
  "aws-s3-access-logs": { reason: "Objects are reached only by the two function roles; their reads and writes appear in CloudTrail data events when the account enables them. Server access logs need a second bucket for little gain." },
  "aws-sns-encrypted": { reason: "The topic carries only alarm notifications (no webhook data). CloudWatch alarms cannot publish to a topic encrypted with the aws/sns managed key; encrypting would need a customer-managed key whose policy grants CloudWatch." },
  "aws-vpc-flow-logs": { reason: "Left to the account's central networking setup (organisation-level flow logs to a log archive); enabling them per stack duplicates cost. Turn on with aws_flow_log if the account has none." },
  "aws-sg-open-egress": { reason: "The relay delivers to customer endpoints anywhere on the internet, on any TCP port a subscription URL names (as it may locally); destinations are checked in code (the SSRF policy refuses private, loopback and metadata addresses on the IP actually connected to), which a security group cannot express. Processor and migrate reach AWS APIs (SQS, S3, Secrets Manager) through the NAT gateway on 443 only; their public IPs are not fixed.", only: ["network/relay-any-tcp", "network/workers-https"] },
  "az-servicebus-private": { reason: "Standard tier has no private endpoints or VNet rules (Premium only). Exposure is limited by Entra-ID-only auth (local SAS disabled), TLS 1.2, and queue-scoped role assignments. Use Premium with a private endpoint where policy demands." },
  "az-postgres-geo-backup": { reason: "Geo-redundant backup doubles backup storage cost; local backups are kept for the configured days. Enable geo_redundant_backup_enabled for a regional-disaster requirement." },
  "az-keyvault-network-deny": { reason: "Terraform writes the database URL secret from the deployer's machine or CI, which is outside the VNet. Access is still RBAC-only, per secret, with purge protection. Add ip_rules and default Deny when deploying from a fixed network." },
  "az-keyvault-secret-expiry": { reason: "Each secret is rotated with what it holds (the database passwords, the partner and alert signing secrets, the management admin token, the encryption keys with a re-encryption), not on a calendar; an expiry would break the functions' Key Vault references without a rotation to replace it." },
  "az-function-auth": { reason: "Ingest authenticates each request by its webhook signature (senders cannot do Entra ID sign-in); the management app by the bearer token it compares in constant time with its admin token (Key Vault) and API keys, as the CLI and the admin page send it everywhere (Easy Auth would demand Entra ID sign-in instead); processor, relay and migrate have no HTTP trigger (Service Bus and timers), so App Service authentication protects nothing there." },
  "az-function-public-access": { reason: "Ingest must be reachable by webhook senders, the management app by operators (CLI, admin page) from outside Azure. Processor, relay and migrate expose no HTTP trigger, and zip deployment from outside the VNet needs the SCM endpoint; disable public access after deployment if the build runs inside the VNet." },
  "az-storage-shared-key-off": { only: ["hosting/"], reason: "Elastic Premium Function Apps mount their content share from Azure Files, which requires the account key; the key is passed as the storage_account_access_key attribute, never as an app setting the code reads." },
  "az-appinsights-local-auth-off": { reason: "Disabling local auth requires every function to send telemetry with an Entra token (extra role and SDK setup). The connection string only allows writing telemetry, not reading it." },
  "gcp-bucket-versioning": { only: ["claim-checks/"], reason: "Claim-check objects are written once under a unique name and deleted by lifecycle with the queue retention; versions would keep payloads longer than the messages that reference them." },
  "gcp-sql-cmek": { reason: "Cloud SQL encrypts at rest with Google-managed keys; CMEK adds a KMS key ring and service-agent grants, needed only where policy requires key custody." },
  "gcp-pubsub-cmek": { reason: "Pub/Sub encrypts at rest with Google-managed keys; messages are held at most a few days. CMEK only where policy requires key custody." },
  "gcp-function-internal-ingress": { reason: "API Gateway (to ingest and management), Pub/Sub push and Cloud Scheduler call the functions from outside the VPC. Every call must still carry a Google-signed identity token for an account holding run.invoker on that one function; no allUsers binding exists." },
  "gcp-secret-cmek": { reason: "Secret Manager encrypts with Google-managed keys; access is per secret and per service account." },
};

export type Verdict = "pass" | "justified" | "FAIL";

export interface Finding {
  cloud: Cloud;
  rule: string;
  title: string;
  resource: string;
  verdict: Verdict;
  reason?: string;
}

/** Runs every rule of a cloud over its synthesized JSON. */
export function evaluate(cloud: Cloud, json: TerraformJson, justifications = JUSTIFICATIONS): Finding[] {
  const findings: Finding[] = [];
  for (const rule of RULES.filter((r) => r.cloud === cloud)) {
    for (const resource of allResources(json).filter((r) => r.type === rule.type)) {
      const base = { cloud, rule: rule.id, title: rule.title, resource: resource.path };
      if (rule.check(resource, json)) {
        findings.push({ ...base, verdict: "pass" });
        continue;
      }
      const why = justifications[rule.id];
      const covered = why && (!why.only || why.only.some((part) => resource.path.includes(part)));
      findings.push(covered ? { ...base, verdict: "justified", reason: why.reason } : { ...base, verdict: "FAIL" });
    }
  }
  return findings;
}

/** Justifications that covered nothing in these findings: stale, to be removed or fixed. */
export function staleJustifications(findings: Finding[], clouds: readonly Cloud[], justifications = JUSTIFICATIONS): string[] {
  const used = new Set(findings.filter((f) => f.verdict === "justified").map((f) => f.rule));
  const inScope = new Set(RULES.filter((r) => clouds.includes(r.cloud)).map((r) => r.id));
  return Object.keys(justifications).filter((id) => inScope.has(id) && !used.has(id));
}
