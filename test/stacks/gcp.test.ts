import { beforeAll, describe, expect, it } from "vitest";
import type { TerraformJson } from "../../stacks/app.js";
import { allResources, block, references, resourceAt, resourcesOf } from "../../stacks/terraformJson.js";
import { synthStack, TEST_OVERRIDES } from "./synthFixture.js";

let json: TerraformJson;
beforeAll(() => {
  json = synthStack("gcp");
});

const FUNCTION_PATHS: Record<string, string> = { ingest: "ingress/ingest", workers: "workers", relay: "relay/relay" };
const fn = (id: string) => resourceAt(json, "google_cloudfunctions2_function", `${FUNCTION_PATHS[id]}/function`);
const SERVICE_AGENT = /^serviceAccount:service-\$\{data\.google_project\.project\.number\}@gcp-sa-pubsub\.iam\.gserviceaccount\.com$/;

describe("GCP stack: Pub/Sub", () => {
  it("dead-letters to the DLQ topic after the configured attempts", () => {
    const sub = resourceAt(json, "google_pubsub_subscription", "queue/push");
    const policy = block(sub.body.dead_letter_policy);
    expect(references(policy.dead_letter_topic, resourceAt(json, "google_pubsub_topic", "queue/dlq-topic"), "id")).toBe(true);
    expect(policy.max_delivery_attempts).toBe(TEST_OVERRIDES.maxDeliveryAttempts);
    expect(sub.body.message_retention_duration).toBe(`${TEST_OVERRIDES.queueRetentionDays * 86_400}s`);
  });

  it("has a subscription on the dead-letter topic, so dead letters are kept", () => {
    const dlqSub = resourceAt(json, "google_pubsub_subscription", "queue/dlq-pull");
    expect(references(dlqSub.body.topic, resourceAt(json, "google_pubsub_topic", "queue/dlq-topic"), "id")).toBe(true);
    expect(dlqSub.body.push_config).toBeUndefined();
    expect(block(dlqSub.body.expiration_policy).ttl).toBe("");
  });

  it("grants the Pub/Sub service agent publisher on the DLQ topic and subscriber on the subscription", () => {
    const publisher = resourceAt(json, "google_pubsub_topic_iam_member", "queue/agent-publishes-dead-letters").body;
    expect(publisher.role).toBe("roles/pubsub.publisher");
    expect(publisher.member).toMatch(SERVICE_AGENT);
    expect(references(publisher.topic, resourceAt(json, "google_pubsub_topic", "queue/dlq-topic"), "name")).toBe(true);
    const subscriber = resourceAt(json, "google_pubsub_subscription_iam_member", "queue/agent-acks-forwarded").body;
    expect(subscriber.role).toBe("roles/pubsub.subscriber");
    expect(subscriber.member).toMatch(SERVICE_AGENT);
    expect(references(subscriber.subscription, resourceAt(json, "google_pubsub_subscription", "queue/push"), "name")).toBe(true);
  });

  it("pushes to the processor with an OIDC token of a service account holding run.invoker on it", () => {
    const push = block(resourceAt(json, "google_pubsub_subscription", "queue/push").body.push_config);
    const processor = fn("workers");
    expect(references(push.push_endpoint, processor, "service_config[0].uri")).toBe(true);
    const oidc = block(push.oidc_token);
    const pushAccount = resourceAt(json, "google_service_account", "identities/push");
    expect(references(oidc.service_account_email, pushAccount, "email")).toBe(true);
    const invoker = resourceAt(json, "google_cloud_run_v2_service_iam_member", "workers/invoker-push").body;
    expect(invoker.role).toBe("roles/run.invoker");
    expect(references(invoker.name, processor, "name")).toBe(true);
    expect(String(invoker.member)).toContain(`${pushAccount.type}.${pushAccount.name}.email`);
  });
});

describe("GCP stack: database", () => {
  it("has a private IP only, TLS required, backups with PITR, deletion protection", () => {
    const instance = resourcesOf(json, "google_sql_database_instance")[0]!.body;
    const settings = block(instance.settings);
    const ip = block(settings.ip_configuration);
    expect(ip.ipv4_enabled).toBe(false);
    expect(ip.ssl_mode).toBe("ENCRYPTED_ONLY");
    expect(ip.private_network).toContain("google_compute_network");
    const backup = block(settings.backup_configuration);
    expect(backup.enabled).toBe(true);
    expect(backup.point_in_time_recovery_enabled).toBe(true);
    expect(block(backup.backup_retention_settings).retained_backups).toBe(TEST_OVERRIDES.backupRetentionDays);
    expect(instance.deletion_protection).toBe(true);
    expect(instance.database_version).toBe("POSTGRES_16");
  });
});

describe("GCP stack: functions, schedule, secrets, identities", () => {
  it("builds three gen2 Node 22 functions from source zips in the bucket", () => {
    for (const id of ["ingest", "workers", "relay"]) {
      const f = fn(id).body;
      const build = block(f.build_config);
      expect(build.runtime).toBe("nodejs22");
      const storage = block(block(build.source).storage_source);
      const object = resourceAt(json, "google_storage_bucket_object", `${FUNCTION_PATHS[id]}/source`);
      expect(references(storage.object, object, "name")).toBe(true);
      expect(String(object.body.source)).toMatch(/^assets\/.+\.zip$/);
    }
    expect(block(fn("workers").body.service_config).max_instance_count).toBe(TEST_OVERRIDES.processorConcurrency);
  });

  it("reads secrets from Secret Manager, not plain environment values", () => {
    for (const id of ["ingest", "workers", "relay"]) {
      const service = block(fn(id).body.service_config);
      const plain = (service.environment_variables ?? {}) as Record<string, string>;
      expect(Object.keys(plain)).not.toContain("DATABASE_URL");
      for (const value of Object.values(plain)) expect(value).not.toMatch(/password|:\/\/[^/]*:[^@]*@/);
    }
    const secretEnv = block(fn("workers").body.service_config).secret_environment_variables as { key: string; version: string }[];
    expect(secretEnv.map((s) => s.key).sort()).toEqual(["DATABASE_URL", "PARTNERS"]);
  });

  it("calls the relay from Cloud Scheduler with OIDC, and routes its egress through the connector and NAT", () => {
    const job = resourcesOf(json, "google_cloud_scheduler_job")[0]!.body;
    const target = block(job.http_target);
    expect(references(target.uri, fn("relay"), "service_config[0].uri")).toBe(true);
    expect(references(block(target.oidc_token).service_account_email, resourceAt(json, "google_service_account", "identities/scheduler"), "email")).toBe(true);
    const relayService = block(fn("relay").body.service_config);
    expect(relayService.vpc_connector_egress_settings).toBe("ALL_TRAFFIC");
    expect(resourcesOf(json, "google_compute_router_nat")).toHaveLength(1);
  });

  it("grants secret access per secret and per account, and no owner/editor role", () => {
    const accessors = resourcesOf(json, "google_secret_manager_secret_iam_member");
    expect(accessors.every((a) => a.body.role === "roles/secretmanager.secretAccessor")).toBe(true);
    expect(accessors).toHaveLength(4);
    for (const m of resourcesOf(json, "google_project_iam_member")) expect(m.body.role).not.toMatch(/roles\/(owner|editor|.*admin)$/i);
  });
});

describe("GCP stack: project APIs", () => {
  it("makes resources wait for the APIs they need", () => {
    const topic = resourceAt(json, "google_pubsub_topic", "queue/topic");
    expect(topic.body.depends_on).toEqual([expect.stringMatching(/^google_project_service\.apis_pubsub_/)]);
    const fnDeps = fn("workers").body.depends_on as string[];
    for (const api of ["cloudfunctions", "run", "cloudbuild", "artifactregistry"]) expect(fnDeps.some((d) => d.startsWith(`google_project_service.apis_${api}_`))).toBe(true);
    expect(resourcesOf(json, "google_project_service").every((s) => s.body.disable_on_destroy === false)).toBe(true);
  });
});

describe("GCP stack: ingress, observability, outputs", () => {
  it("fronts the ingest function with API Gateway (google-beta) calling it as the gateway account", () => {
    const config = resourcesOf(json, "google_api_gateway_api_config")[0]!.body;
    expect(config.provider).toBe("google-beta");
    const doc = block(config.openapi_documents);
    expect(String(block(doc.document).contents)).toContain(`${fn("ingest").type}.${fn("ingest").name}.service_config[0].uri`);
    expect(String(block(block(config.gateway_config).backend_config).google_service_account)).toContain("identities_gateway");
    expect(resourceAt(json, "google_cloud_run_v2_service_iam_member", "ingress/ingest/invoker-gateway").body.role).toBe("roles/run.invoker");
  });

  it("keeps logs for the configured days and alerts on dead letters", () => {
    expect(resourcesOf(json, "google_logging_project_bucket_config")[0]!.body.retention_days).toBe(TEST_OVERRIDES.logRetentionDays);
    const policy = resourcesOf(json, "google_monitoring_alert_policy")[0]!.body;
    expect(JSON.stringify(policy.conditions)).toContain("num_undelivered_messages");
  });

  it("outputs the ingest URL, queue names and database endpoint", () => {
    expect(Object.keys(json.output ?? {})).toEqual(expect.arrayContaining(["ingest_url", "queue_name", "dead_letter_queue_name", "database_endpoint"]));
  });

  it("builds one construct per component", () => {
    const components = new Set(allResources(json).map((r) => r.component));
    expect([...components].sort()).toEqual(
      ["apis", "claim-checks", "database", "hosting", "identities", "ingress", "network", "observability", "queue", "relay", "secrets", "workers"],
    );
  });
});

describe("GCP stack: deploy order", () => {
  it("deploys each function after its secret grants and first secret versions", () => {
    const deps = (id: string) => fn(id).body.depends_on as string[];
    expect(deps("workers").filter((d) => d.startsWith("google_secret_manager_secret_iam_member."))).toHaveLength(2);
    expect(deps("workers").filter((d) => d.startsWith("google_secret_manager_secret_version."))).toHaveLength(2);
    expect(deps("relay").filter((d) => d.startsWith("google_secret_manager_secret_iam_member."))).toHaveLength(1);
    expect(deps("ingest").some((d) => d.startsWith("google_secret_manager_secret_version.secrets_partner"))).toBe(true);
  });
});
