/**
 * Static service facts that matter for webhooks, keyed by the Terraform resource type that
 * brings the service into a stack. The comparison shows a fact only for the resource types it
 * finds in the synthesized JSON; it never decides from this table which services a stack uses.
 */

export interface QueueFacts {
  service: string;
  maxMessageSize: string;
  maxRetention: string;
  deliveryAttempts: string;
  maxDelay: string;
  ordering: string;
  source: string;
}

/** Keyed by the resource type that holds the delivery settings. */
export const QUEUE_FACTS: Record<string, QueueFacts> = {
  aws_sqs_queue: {
    service: "Amazon SQS (standard queue)",
    maxMessageSize: "1 MiB (256 KiB before Aug 2025); larger → claim-check in S3",
    maxRetention: "14 days",
    deliveryAttempts: "maxReceiveCount 1-1000 (redrive policy)",
    maxDelay: "15 min per message (DelaySeconds)",
    ordering: "FIFO queue with MessageGroupId (lower throughput)",
    source: "AWS SQS developer guide, quotas (2025)",
  },
  azurerm_servicebus_queue: {
    service: "Azure Service Bus queue",
    maxMessageSize: "256 KB Standard; 100 MB Premium",
    maxRetention: "message TTL unbounded (TimeSpan.Max); dead-letter subqueue keeps until read",
    deliveryAttempts: "MaxDeliveryCount ≥ 1 (default 10)",
    maxDelay: "any future time (scheduled messages)",
    ordering: "sessions (requires_session, SessionId)",
    source: "Azure Service Bus quotas and messaging docs (2025)",
  },
  google_pubsub_subscription: {
    service: "Google Cloud Pub/Sub (push subscription)",
    maxMessageSize: "10 MB",
    maxRetention: "7 days on a subscription; 31 days on a topic",
    deliveryAttempts: "max_delivery_attempts 5-100 (dead-letter policy)",
    maxDelay: "no per-message delay; retry backoff 0-600 s",
    ordering: "ordering keys (enable_message_ordering)",
    source: "Google Cloud Pub/Sub quotas and subscription docs (2025)",
  },
};

/** Human names of the resource types, for the per-component service column. */
export const SERVICE_OF: [prefix: string, service: string][] = [
  ["aws_apigatewayv2", "API Gateway (HTTP API)"],
  ["aws_lambda", "Lambda"],
  ["aws_sqs", "SQS"],
  ["aws_rds", "Aurora PostgreSQL"],
  ["aws_db_", "Aurora PostgreSQL"],
  ["aws_scheduler", "EventBridge Scheduler"],
  ["aws_secretsmanager", "Secrets Manager"],
  ["aws_iam", "IAM"],
  ["aws_cloudwatch", "CloudWatch"],
  ["aws_sns", "SNS"],
  ["aws_s3", "S3"],
  ["aws_", "VPC"],
  ["azurerm_linux_function_app", "Functions"],
  ["azurerm_service_plan", "Functions"],
  ["azurerm_storage", "Storage"],
  ["azurerm_servicebus", "Service Bus"],
  ["azurerm_postgresql", "PostgreSQL Flexible Server"],
  ["azurerm_key_vault", "Key Vault"],
  ["azurerm_user_assigned_identity", "Managed Identity"],
  ["azurerm_role_assignment", "RBAC"],
  ["azurerm_application_insights", "Application Insights"],
  ["azurerm_log_analytics", "Log Analytics"],
  ["azurerm_monitor", "Azure Monitor"],
  ["azurerm_api_management", "API Management"],
  ["azurerm_resource_group", "Resource group"],
  ["azurerm_", "Virtual Network"],
  ["time_sleep", "Terraform wait (RBAC propagation)"],
  ["google_api_gateway", "API Gateway"],
  ["google_cloudfunctions2", "Cloud Run functions"],
  ["google_cloud_run", "Cloud Run IAM"],
  ["google_storage", "Cloud Storage"],
  ["google_pubsub", "Pub/Sub"],
  ["google_sql", "Cloud SQL"],
  ["google_secret_manager", "Secret Manager"],
  ["google_service_account", "IAM"],
  ["google_project_iam", "IAM"],
  ["google_cloud_scheduler", "Cloud Scheduler"],
  ["google_monitoring", "Cloud Monitoring"],
  ["google_logging", "Cloud Logging"],
  ["google_project_service", "Service Usage"],
  ["google_vpc_access", "Serverless VPC Access"],
  ["google_", "VPC"],
];

export function serviceOf(type: string): string {
  return SERVICE_OF.find(([prefix]) => type.startsWith(prefix))?.[1] ?? type;
}

/** A documented figure with the page it comes from. */
export interface Fact<T> {
  value: T;
  source: string;
}

/** Elastic Premium instance sizes (vCPU), by plan SKU. */
export const ELASTIC_PREMIUM_VCPUS: Fact<Record<string, number>> = {
  value: { EP1: 1, EP2: 2, EP3: 4 },
  source: "Azure Functions Premium plan, available instance SKUs (learn.microsoft.com/azure/azure-functions/functions-premium-plan); every Premium plan keeps at least one billed instance",
};

/** Lambda: CPU in proportion to memory, one vCPU's worth at this many MB (bench:cloudrelay runs the relay at that share). */
export const LAMBDA_MB_PER_VCPU: Fact<number> = {
  value: 1769,
  source: "AWS Lambda, Configure Lambda function memory (docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html): at 1,769 MB a function has the equivalent of one vCPU",
};

/** Cloud Run functions: the vCPU that comes with a memory size when `available_cpu` is not set. */
export const CLOUD_RUN_FUNCTION_CPU: Fact<Record<string, number>> = {
  value: { "128Mi": 0.083, "256Mi": 0.167, "512Mi": 0.333, "1Gi": 0.583, "1024Mi": 0.583, "2Gi": 1, "2048Mi": 1, "4Gi": 2, "4096Mi": 2, "8Gi": 2, "16Gi": 4, "32Gi": 8 },
  source: "Cloud Run functions, Configure memory and vCPU limits (cloud.google.com/functions/docs/configuring/memory)",
};

/**
 * Cloud Run functions: an instance serving more than one request at once needs at least this many
 * vCPU. The provider does not check it; the API refuses the function ("Setting a concurrency value
 * greater than 1 requires a function to have 1 or more vCPUs"), and with it everything that
 * depends on the function.
 */
export const CLOUD_RUN_CONCURRENCY_MIN_CPU: Fact<number> = {
  value: 1,
  source: "Cloud Run functions, Configure concurrency (cloud.google.com/functions/docs/configuring/concurrency), read 2026-12-01",
};

/** Regions a GCP API Gateway gateway can be deployed to. */
export const API_GATEWAY_REGIONS: Fact<string[]> = {
  value: ["asia-northeast1", "australia-southeast1", "europe-west1", "europe-west2", "us-east1", "us-east4", "us-central1", "us-west2", "us-west3", "us-west4"],
  source: "API Gateway deployment model, Choosing a GCP region (cloud.google.com/api-gateway/docs/deployment-model), read 2026-12-01",
};

/** Service limits on the request path that no stack setting changes. */
export const INGRESS_FACTS = {
  azureHttpResponse: { value: 230, source: "Azure Functions: an HTTP-triggered function has at most 230 s to answer, whatever functionTimeout (Azure Load Balancer idle timeout; functions-scale docs)" },
  sqsMaxDelaySeconds: { value: 900, source: "Amazon SQS developer guide, DelaySeconds (0-900)" },
} as const;

/**
 * First-event cold start of each cloud's bundles in a fresh Node process, as the README reports
 * the last `npm run bench:functions` runs (local: no cloud platform start-up in these figures).
 */
export const COLD_STARTS: Fact<Record<"aws" | "azure" | "gcp", string>> = {
  value: {
    aws: "0.09-0.12 s at load 4; relay 0.38-0.53 s at load 8-9",
    azure: "0.07-0.21 s at load 4; ingest 0.34-0.46 s at load 9-11 (the AMQP connection)",
    gcp: "0.06-0.18 s at load 4; relay and processor 0.38-0.53 s at load 8-9",
  },
  source: "README.md, Benchmarks, function bundles row (npm run bench:functions: bundle import + first event on Node 22, local services); the platform's own instance start comes on top",
};
