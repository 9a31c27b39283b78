import { beforeAll, describe, expect, it } from "vitest";
import type { TerraformJson } from "../../stacks/app.js";
import { allResources, block, references, resourceAt, resourcesOf } from "../../stacks/terraformJson.js";
import { synthStack, TEST_OVERRIDES } from "./synthFixture.js";

let json: TerraformJson;
beforeAll(() => {
  json = synthStack("aws");
});

interface PolicyStatement {
  Effect: string;
  Action: string | string[];
  Resource: string | string[];
}
const statements = (policy: unknown): PolicyStatement[] => (JSON.parse(String(policy)) as { Statement: PolicyStatement[] }).Statement;
const asList = (v: string | string[]) => (Array.isArray(v) ? v : [v]);

describe("AWS stack: queue + DLQ", () => {
  it("redrives to the DLQ after the configured number of receives", () => {
    const queue = resourceAt(json, "aws_sqs_queue", "queue/queue");
    const dlq = resourceAt(json, "aws_sqs_queue", "queue/dlq");
    const redrive = JSON.parse(String(queue.body.redrive_policy)) as { deadLetterTargetArn: string; maxReceiveCount: number };
    expect(references(redrive.deadLetterTargetArn, dlq, "arn")).toBe(true);
    expect(redrive.maxReceiveCount).toBe(TEST_OVERRIDES.maxDeliveryAttempts);
  });

  it("encrypts both queues and keeps the configured retention", () => {
    for (const q of resourcesOf(json, "aws_sqs_queue")) expect(q.body.sqs_managed_sse_enabled).toBe(true);
    expect(resourceAt(json, "aws_sqs_queue", "queue/dlq").body.message_retention_seconds).toBe(TEST_OVERRIDES.deadLetterRetentionDays * 86_400);
    expect(resourceAt(json, "aws_sqs_queue", "queue/queue").body.visibility_timeout_seconds).toBe(6 * TEST_OVERRIDES.processorTimeoutSeconds);
  });

  it("lets only the main queue use the DLQ", () => {
    const allow = resourcesOf(json, "aws_sqs_queue_redrive_allow_policy")[0]!;
    const policy = JSON.parse(String(allow.body.redrive_allow_policy)) as { redrivePermission: string; sourceQueueArns: string[] };
    expect(policy.redrivePermission).toBe("byQueue");
    expect(references(policy.sourceQueueArns[0], resourceAt(json, "aws_sqs_queue", "queue/queue"), "arn")).toBe(true);
  });
});

describe("AWS stack: workers and relay", () => {
  it("maps the queue to the processor with partial batch failures and a concurrency cap", () => {
    const mapping = resourcesOf(json, "aws_lambda_event_source_mapping")[0]!;
    const processor = resourceAt(json, "aws_lambda_function", "workers/processor/function");
    expect(references(mapping.body.event_source_arn, resourceAt(json, "aws_sqs_queue", "queue/queue"), "arn")).toBe(true);
    expect(references(mapping.body.function_name, processor, "arn")).toBe(true);
    expect(mapping.body.function_response_types).toEqual(["ReportBatchItemFailures"]);
    expect(block(mapping.body.scaling_config).maximum_concurrency).toBe(TEST_OVERRIDES.processorConcurrency);
    expect(mapping.body.batch_size).toBe(TEST_OVERRIDES.processorBatchSize);
  });

  it("runs every function on Node 22 with X-Ray tracing and a retained log group", () => {
    const functions = resourcesOf(json, "aws_lambda_function");
    expect(functions.map((f) => f.body.function_name).sort()).toEqual(["hooktest-ingest", "hooktest-processor", "hooktest-relay"]);
    const groups = resourcesOf(json, "aws_cloudwatch_log_group");
    for (const f of functions) {
      expect(f.body.runtime).toBe("nodejs22.x");
      expect(block(f.body.tracing_config).mode).toBe("Active");
      const group = groups.find((g) => references(block(f.body.logging_config).log_group, g, "name"));
      expect(group?.body.retention_in_days).toBe(TEST_OVERRIDES.logRetentionDays);
      expect(String(f.body.filename)).toMatch(/^assets\/.+\.zip$/);
    }
  });

  it("starts the relay from EventBridge Scheduler with a role that may invoke only the relay", () => {
    const schedule = resourcesOf(json, "aws_scheduler_schedule")[0]!;
    const relay = resourceAt(json, "aws_lambda_function", "relay/relay/function");
    const target = block(schedule.body.target);
    expect(references(target.arn, relay, "arn")).toBe(true);
    expect(schedule.body.schedule_expression).toBe("rate(1 minute)");
    const role = resourcesOf(json, "aws_iam_role").find((r) => references(target.role_arn, r, "arn"))!;
    const policy = resourcesOf(json, "aws_iam_role_policy").find((p) => String(p.body.role).includes(role.name))!;
    expect(statements(policy.body.policy)).toEqual([{ Effect: "Allow", Action: ["lambda:InvokeFunction"], Resource: `\${${relay.type}.${relay.name}.arn}` }]);
  });

  it("puts processor and relay in the private subnets, ingest outside the VPC", () => {
    const fn = (suffix: string) => resourceAt(json, "aws_lambda_function", suffix).body;
    expect(block(fn("workers/processor/function").vpc_config).subnet_ids).toHaveLength(2);
    expect(block(fn("relay/relay/function").vpc_config).subnet_ids).toHaveLength(2);
    expect(fn("ingress/ingest/function").vpc_config).toBeUndefined();
    expect(resourcesOf(json, "aws_nat_gateway")).toHaveLength(1);
  });
});

describe("AWS stack: database", () => {
  it("is Aurora Serverless v2, encrypted, private, with managed credentials and backups", () => {
    const cluster = resourceAt(json, "aws_rds_cluster", "database/cluster").body;
    expect(cluster.engine).toBe("aurora-postgresql");
    expect(cluster.storage_encrypted).toBe(true);
    expect(cluster.manage_master_user_password).toBe(true);
    expect(cluster.master_password).toBeUndefined();
    expect(cluster.backup_retention_period).toBe(TEST_OVERRIDES.backupRetentionDays);
    expect(block(cluster.serverlessv2_scaling_configuration).max_capacity).toBe(4);
    const instance = resourcesOf(json, "aws_rds_cluster_instance")[0]!.body;
    expect(instance.instance_class).toBe("db.serverless");
    expect(instance.publicly_accessible).toBe(false);
  });

  it("requires TLS through the cluster parameter group", () => {
    const group = resourcesOf(json, "aws_rds_cluster_parameter_group")[0]!;
    expect(group.body.parameter).toContainEqual({ name: "rds.force_ssl", value: "1" });
    expect(references(resourceAt(json, "aws_rds_cluster", "database/cluster").body.db_cluster_parameter_group_name, group, "name")).toBe(true);
  });

  it("accepts PostgreSQL only from the functions' security group", () => {
    const rules = resourcesOf(json, "aws_vpc_security_group_ingress_rule");
    expect(rules).toHaveLength(1);
    expect(rules[0]!.body.from_port).toBe(5432);
    expect(rules[0]!.body.cidr_ipv4).toBeUndefined();
    expect(references(rules[0]!.body.referenced_security_group_id, resourceAt(json, "aws_security_group", "network/functions-sg"), "id")).toBe(true);
  });
});

describe("AWS stack: secrets and identities", () => {
  it("passes secret ARNs, never secret values, in function environments", () => {
    for (const f of resourcesOf(json, "aws_lambda_function")) {
      const variables = block(f.body.environment).variables as Record<string, string>;
      for (const [key, value] of Object.entries(variables)) {
        expect(key).not.toMatch(/PASSWORD|TOKEN|KEY$|^SECRET$/);
        expect(value).not.toMatch(/whsec_|password=|:\/\/[^/]*:[^@]*@/);
      }
    }
    const processorEnv = block(resourceAt(json, "aws_lambda_function", "workers/processor/function").body.environment).variables as Record<string, string>;
    expect(processorEnv.WEBHOOKS_DATABASE_SECRET_ARN).toContain("master_user_secret[0].secret_arn");
    expect(resourcesOf(json, "aws_secretsmanager_secret")).toHaveLength(1);
    expect(resourcesOf(json, "aws_secretsmanager_secret_version")).toHaveLength(0);
  });

  it("grants no wildcard action, and no wildcard resource on data services", () => {
    const policies = resourcesOf(json, "aws_iam_role_policy");
    expect(policies.length).toBeGreaterThanOrEqual(4);
    for (const p of policies) {
      for (const s of statements(p.body.policy)) {
        for (const action of asList(s.Action)) {
          expect(action, `${p.path}`).not.toContain("*");
          if (/^(sqs|secretsmanager|rds|rds-db|kms|lambda|logs):/.test(action)) expect(asList(s.Resource)).not.toContain("*");
        }
      }
    }
  });

  it("gives the ingest role send-only access to the queue", () => {
    const ingestPolicy = resourcesOf(json, "aws_iam_role_policy").find((p) => p.path.includes("identities/ingest-policy"))!;
    const sqsActions = statements(ingestPolicy.body.policy).flatMap((s) => asList(s.Action)).filter((a) => a.startsWith("sqs:"));
    expect(sqsActions).toEqual(["sqs:SendMessage"]);
  });
});

describe("AWS stack: ingress, observability, outputs", () => {
  it("routes POST /webhooks/{partner} to the ingest Lambda and writes access logs", () => {
    const route = resourcesOf(json, "aws_apigatewayv2_route")[0]!;
    expect(route.body.route_key).toBe("POST /webhooks/{partner}");
    const integration = resourcesOf(json, "aws_apigatewayv2_integration")[0]!;
    expect(references(integration.body.integration_uri, resourceAt(json, "aws_lambda_function", "ingress/ingest/function"), "invoke_arn")).toBe(true);
    const stage = resourcesOf(json, "aws_apigatewayv2_stage")[0]!;
    const logs = block(stage.body.access_log_settings);
    expect(references(logs.destination_arn, resourceAt(json, "aws_cloudwatch_log_group", "observability/api-access-logs"), "arn")).toBe(true);
    expect(JSON.parse(String(logs.format))).toHaveProperty("status", "$context.status");
  });

  it("alarms when the DLQ holds a message", () => {
    const alarm = resourcesOf(json, "aws_cloudwatch_metric_alarm")[0]!.body;
    expect(alarm.metric_name).toBe("ApproximateNumberOfMessagesVisible");
    expect(references((alarm.dimensions as Record<string, string>).QueueName, resourceAt(json, "aws_sqs_queue", "queue/dlq"), "name")).toBe(true);
  });

  it("outputs the ingest URL, queue names and database endpoint", () => {
    expect(Object.keys(json.output ?? {})).toEqual(
      expect.arrayContaining(["ingest_url", "queue_name", "dead_letter_queue_name", "database_endpoint"]),
    );
  });

  it("builds one construct per component", () => {
    const components = new Set(allResources(json).map((r) => r.component));
    expect([...components].sort()).toEqual(["claim-checks", "database", "identities", "ingress", "network", "observability", "queue", "relay", "secrets", "workers"]);
  });
});
