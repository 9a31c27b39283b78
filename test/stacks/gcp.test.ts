import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { REST_MAX_MESSAGE_BYTES } from "../../shared/queue/pubsubPublisher.js";
import { GCP_MAX_INBOUND_BODY_BYTES } from "../../stacks/gcp/capacity.js";
import { apisFor } from "../../stacks/gcp/projectApis.js";
import { CLOUD_RUN_CONCURRENCY_MIN_CPU, CLOUD_RUN_FUNCTION_CPU } from "../../stacks/serviceFacts.js";
import type { TerraformJson } from "../../stacks/app.js";
import { allResources, block, references, resourceAt, resourcesOf } from "../../stacks/terraformJson.js";
import { synthStack, TEST_OVERRIDES } from "./synthFixture.js";

let json: TerraformJson;
beforeAll(() => {
  json = synthStack("gcp");
});

const FUNCTION_PATHS: Record<string, string> = { ingest: "ingress/ingest", workers: "workers", relay: "relay/relay", management: "management" };
const fn = (id: string) => resourceAt(json, "google_cloudfunctions2_function", `${FUNCTION_PATHS[id]}/function`);
const SERVICE_AGENT = /^serviceAccount:service-\$\{data\.google_project\.project\.number\}@gcp-sa-pubsub\.iam\.gserviceaccount\.com$/;

describe("GCP stack: Pub/Sub", () => {
  it("dead-letters to the DLQ topic after the configured attempts", () => {
    const sub = resourceAt(json, "google_pubsub_subscription", "queue/push");
    const policy = block(sub.body.dead_letter_policy);
    expect(references(policy.dead_letter_topic, resourceAt(json, "google_pubsub_topic", "queue/dlq-topic"), "id")).toBe(true);
    // At least maxDeliveryAttempts (7 here), raised to cover gcpPushRetryMinutes (30) at 60 s apiece (see #14 below).
    expect(policy.max_delivery_attempts).toBe(31);
    const many = resourceAt(synthStack("gcp", { maxDeliveryAttempts: 50 }), "google_pubsub_subscription", "queue/push");
    expect(block(many.body.dead_letter_policy).max_delivery_attempts).toBe(50);
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

  it("lets deletion protection be turned off for a teardown (cloudSqlDeletionProtection=false)", () => {
    const j = synthStack("gcp", { cloudSqlDeletionProtection: "false" });
    expect(resourcesOf(j, "google_sql_database_instance")[0]!.body.deletion_protection).toBe(false);
  });
});

describe("GCP stack: functions, schedule, secrets, identities", () => {
  it("builds the gen2 Node 22 functions from source zips in the bucket", () => {
    for (const id of ["ingest", "workers", "relay", "management"]) {
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
    for (const id of ["ingest", "workers", "relay", "management"]) {
      const service = block(fn(id).body.service_config);
      const plain = (service.environment_variables ?? {}) as Record<string, string>;
      expect(Object.keys(plain)).not.toContain("DATABASE_URL");
      for (const value of Object.values(plain)) expect(value).not.toMatch(/password|:\/\/[^/]*:[^@]*@/);
    }
    const secretEnv = block(fn("workers").body.service_config).secret_environment_variables as { key: string; version: string }[];
    expect(secretEnv.map((s) => s.key).sort()).toEqual(["DATABASE_URL", "ENCRYPTION_KEYS", "PARTNERS"]);
  });

  it("calls the relay from Cloud Scheduler with OIDC, and routes its egress through the connector and NAT", () => {
    const job = resourceAt(json, "google_cloud_scheduler_job", "relay/job").body;
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
    // ingest: partners; processor: app URL, partners, encryption keys; relay: app URL, encryption keys;
    // migrate: admin URL, app URL; management: app URL, admin token, encryption keys.
    expect(accessors).toHaveLength(11);
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
      ["apis", "claim-checks", "database", "hosting", "identities", "ingress", "management", "migrate", "network", "observability", "queue", "relay", "secrets", "workers"],
    );
  });
});

describe("GCP stack: deploy order", () => {
  it("deploys each function after its secret grants and first secret versions", () => {
    const deps = (id: string) => fn(id).body.depends_on as string[];
    expect(deps("workers").filter((d) => d.startsWith("google_secret_manager_secret_iam_member."))).toHaveLength(3);
    expect(deps("workers").filter((d) => d.startsWith("google_secret_manager_secret_version."))).toHaveLength(3);
    // The app URL and the encryption keys (issue 17).
    expect(deps("relay").filter((d) => d.startsWith("google_secret_manager_secret_iam_member."))).toHaveLength(2);
    expect(deps("management").filter((d) => d.startsWith("google_secret_manager_secret_iam_member."))).toHaveLength(3);
    expect(deps("management").filter((d) => d.startsWith("google_secret_manager_secret_version."))).toHaveLength(3);
    expect(deps("ingest").some((d) => d.startsWith("google_secret_manager_secret_version.secrets_partner"))).toBe(true);
  });
});

// ---- Issue 12: each GCP defect, a test that failed on the code before the fix ----

const env = (id: string) => (block(fn(id).body.service_config).environment_variables ?? {}) as Record<string, string>;
const secretEnv = (id: string) => (block(fn(id).body.service_config).secret_environment_variables ?? []) as { key: string; secret: string }[];
const secretOf = (id: string, key: string) => {
  const ref = secretEnv(id).find((s) => s.key === key)?.secret;
  return allResources(json).find((r) => r.type === "google_secret_manager_secret" && ref?.includes(`${r.type}.${r.name}.`));
};
const versionOf = (secret: { type: string; name: string }) =>
  resourcesOf(json, "google_secret_manager_secret_version").find((v) => String(v.body.secret).includes(`${secret.type}.${secret.name}.`));
FUNCTION_PATHS.migrate = "migrate/migrate";

describe("GCP #3: database TLS is verify-ca against the instance's server CA, never sslmode in the URL", () => {
  it("gives every database function the TLS mode and the CA of this instance as plain settings", () => {
    const instance = resourcesOf(json, "google_sql_database_instance")[0]!;
    for (const id of ["workers", "relay", "migrate"]) {
      expect(env(id).WEBHOOKS_DATABASE_TLS).toBe("verify-ca");
      expect(references(env(id).WEBHOOKS_DATABASE_CA_CERT, instance, "server_ca_cert[0].cert")).toBe(true);
    }
  });

  it("writes database URLs without sslmode (or any TLS parameter)", () => {
    const urls = resourcesOf(json, "google_secret_manager_secret_version").map((v) => String(v.body.secret_data)).filter((d) => d.startsWith("postgres://"));
    expect(urls).toHaveLength(2);
    for (const url of urls) expect(url).not.toMatch(/[?&]ssl/);
  });
});

describe("GCP #5: resources wait for the APIs they need, IAM included", () => {
  it("covers every resource type of the stack by a NEEDS prefix or the list of types that need none", () => {
    const uncovered = [...new Set(allResources(json).map((r) => r.type))].filter((type) => apisFor(type) === undefined);
    expect(uncovered).toEqual([]);
  });

  it("makes service accounts and IAM grants wait for iam.googleapis.com", () => {
    for (const type of ["google_service_account", "google_service_account_iam_member", "google_project_iam_member"]) {
      for (const r of resourcesOf(json, type)) expect((r.body.depends_on as string[]).some((d) => d.startsWith("google_project_service.apis_iam_"))).toBe(true);
    }
    const enabled = resourcesOf(json, "google_project_service").map((s) => s.body.service);
    expect(enabled).toEqual(expect.arrayContaining(["iam.googleapis.com", "iamcredentials.googleapis.com", "cloudresourcemanager.googleapis.com"]));
  });

  it("makes the Pub/Sub service agent's token-creator grant wait for Pub/Sub (which creates the agent) as well as IAM", () => {
    const grant = resourceAt(json, "google_service_account_iam_member", "queue/agent-mints-push-token").body.depends_on as string[];
    expect(grant).toEqual(expect.arrayContaining([expect.stringMatching(/^google_pubsub_topic\.queue_topic_/), expect.stringMatching(/^google_project_service\.apis_iam_/)]));
    expect(resourceAt(json, "google_pubsub_topic", "queue/topic").body.depends_on).toEqual([expect.stringMatching(/^google_project_service\.apis_pubsub_/)]);
  });

  it("makes every resource depend on each API its type needs", () => {
    for (const r of allResources(json)) {
      for (const api of apisFor(r.type) ?? []) expect((r.body.depends_on as string[] | undefined)?.some((d) => d.startsWith(`google_project_service.apis_${api}_`)), `${r.path} waits for ${api}`).toBe(true);
    }
  });
});

describe("GCP #7: dead letters alert someone", () => {
  const withAlerts = () => synthStack("gcp", { alertEmail: "ops@example.com", alertWebhookUrl: "https://alerts.example.com/hooks" });

  it("attaches an e-mail notification channel to the dead-letter alert policy", () => {
    const j = withAlerts();
    const channel = resourcesOf(j, "google_monitoring_notification_channel")[0]!;
    expect(channel.body.type).toBe("email");
    // `labels` is the channel's configuration; our labels go to `user_labels`.
    expect(channel.body.labels).toEqual({ email_address: "ops@example.com" });
    expect(channel.body.user_labels).toMatchObject({ app: "multicloud-webhooks", stack: "webhooks-gcp" });
    const policy = resourcesOf(j, "google_monitoring_alert_policy")[0]!;
    expect(policy.body.notification_channels).toEqual([expect.stringContaining(`${channel.type}.${channel.name}.id`)]);
  });

  it("gives the relay ALERT_WEBHOOK_URL and the alert signing secret from Secret Manager", () => {
    const j = withAlerts();
    const relay = resourceAt(j, "google_cloudfunctions2_function", "relay/relay/function");
    const service = block(relay.body.service_config);
    expect((service.environment_variables as Record<string, string>).ALERT_WEBHOOK_URL).toBe("https://alerts.example.com/hooks");
    const mounted = (service.secret_environment_variables as { key: string; secret: string }[]).find((s) => s.key === "ALERT_WEBHOOK_SECRET");
    const secret = resourceAt(j, "google_secret_manager_secret", "secrets/alert-webhook-secret");
    expect(secret.body.secret_id).toBe("hooktest-alert-webhook-secret");
    expect(references(mounted?.secret, secret, "secret_id")).toBe(true);
  });

  it("without alert settings, builds no channel and sets no alert destination", () => {
    expect(resourcesOf(json, "google_monitoring_notification_channel")).toHaveLength(0);
    expect(env("relay").ALERT_WEBHOOK_URL).toBeUndefined();
  });
});

describe("GCP #8: functions connect as the application role; only migrate holds the owner's URL", () => {
  it("puts the application role's URL in the functions' secret and the admin URL in migrate's alone", () => {
    const app = secretOf("workers", "DATABASE_URL")!;
    expect(String(versionOf(app)?.body.secret_data)).toMatch(/^postgres:\/\/webhooks_app:\$\{urlencode\(var\.db_app_password\)\}@/);
    expect(secretOf("relay", "DATABASE_URL")?.name).toBe(app.name);
    const admin = secretOf("migrate", "DATABASE_ADMIN_URL")!;
    expect(String(versionOf(admin)?.body.secret_data)).toMatch(/^postgres:\/\/webhooks_admin:/);
    for (const id of ["ingest", "workers", "relay"]) expect(secretEnv(id).map((s) => s.key)).not.toContain("DATABASE_ADMIN_URL");
    const adminReaders = resourcesOf(json, "google_secret_manager_secret_iam_member").filter((m) => String(m.body.secret_id).includes(`${admin.type}.${admin.name}.`));
    expect(adminReaders.map((m) => m.body.member)).toEqual([expect.stringContaining("identities_migrate")]);
    expect(block(fn("migrate").body.build_config).entry_point).toBe("migrate");
  });

  it("takes the app password from a sensitive variable and creates no Cloud SQL user for it (Cloud SQL users are cloudsqlsuperuser)", () => {
    const variable = (json.variable as Record<string, { sensitive?: boolean }>).db_app_password;
    expect(variable?.sensitive).toBe(true);
    expect(resourcesOf(json, "google_sql_user").map((u) => u.body.name)).toEqual(["webhooks_admin"]);
  });

  it("backs the deploy's migrate call with a daily Cloud Scheduler job, as the scheduler account holding run.invoker on it", () => {
    const job = resourceAt(json, "google_cloud_scheduler_job", "migrate/job");
    expect(job.body.name).toBe("hooktest-migrate");
    const target = block(job.body.http_target);
    expect(references(target.uri, fn("migrate"), "service_config[0].uri")).toBe(true);
    expect(references(block(target.oidc_token).service_account_email, resourceAt(json, "google_service_account", "identities/scheduler"), "email")).toBe(true);
    expect(resourceAt(json, "google_cloud_run_v2_service_iam_member", "migrate/migrate/invoker-scheduler").body.role).toBe("roles/run.invoker");
    expect(String((json.output as Record<string, { value: string }>).migrate_command?.value)).toMatch(/^gcloud functions call hooktest-migrate --gen2 --region=europe-west1 --project=hooks-test-project$/);
  });
});

describe("GCP #11: no unused grants", () => {
  it("gives the processor read on the claim-check bucket only", () => {
    const grants = resourcesOf(json, "google_storage_bucket_iam_member").filter((m) => String(m.body.member).includes("identities_processor"));
    expect(grants.map((g) => g.body.role)).toEqual(["roles/storage.objectViewer"]);
  });

  it("lets the processor publish to the dead-letter topic only (it never publishes to the inbound topic)", () => {
    const inbound = resourceAt(json, "google_pubsub_topic", "queue/topic");
    const onInbound = resourcesOf(json, "google_pubsub_topic_iam_member").filter((m) => references(m.body.topic, inbound, "name"));
    expect(onInbound.map((m) => m.body.member)).toEqual([expect.stringContaining("identities_ingest")]);
  });

  it("grants roles/cloudsql.client to no one (the functions dial the private IP, not the Admin API)", () => {
    expect(resourcesOf(json, "google_project_iam_member").map((m) => m.body.role)).not.toContain("roles/cloudsql.client");
  });
});

describe("GCP #12: ingest accepts bodies up to GCP's documented request limit", () => {
  it("sets MAX_INBOUND_BODY_BYTES on ingest above the 256 KiB queue default, under 32 MB", () => {
    const limit = Number(env("ingest").MAX_INBOUND_BODY_BYTES);
    expect(limit).toBe(GCP_MAX_INBOUND_BODY_BYTES);
    expect(limit).toBeGreaterThan(REST_MAX_MESSAGE_BYTES);
    expect(limit).toBeLessThan(32_000_000 - 60_000);
  });
});

describe("GCP #25: a function serving concurrent requests has the vCPU Cloud Run requires for it", () => {
  // The API refuses concurrency > 1 below 1 vCPU; the provider does not check, so only a deploy would.
  const cpuOf = (service: Record<string, unknown>) => Number(service.available_cpu ?? CLOUD_RUN_FUNCTION_CPU.value[String(service.available_memory)]);
  const functions = (stack: TerraformJson) => resourcesOf(stack, "google_cloudfunctions2_function").map((f) => ({ name: f.component, service: block(f.body.service_config) }));

  it("asks for 1 vCPU wherever max_instance_request_concurrency > 1 (processor and management at 512 MiB)", () => {
    const concurrent = functions(json).filter((f) => Number(f.service.max_instance_request_concurrency) > 1);
    expect(concurrent.map((f) => f.name).sort()).toEqual(["management", "workers"]);
    for (const f of concurrent) expect(cpuOf(f.service), f.name).toBeGreaterThanOrEqual(CLOUD_RUN_CONCURRENCY_MIN_CPU.value);
    for (const f of concurrent) expect(f.service.available_cpu, f.name).toBe("1");
  });

  it("leaves one-request functions at the CPU their memory comes with, and a size that has 1 vCPU already alone", () => {
    for (const f of functions(json).filter((f) => Number(f.service.max_instance_request_concurrency) === 1)) expect(f.service.available_cpu, f.name).toBeUndefined();
    const big = functions(synthStack("gcp", { functionMemoryMb: 2048 }));
    for (const f of big) expect(f.service.available_cpu, f.name).toBeUndefined();
  });
});

describe("GCP #14: a burst is served concurrently and throttled pushes do not dead-letter unrun messages", () => {
  it("serves several requests per processor instance, with a pool to match", () => {
    const service = block(fn("workers").body.service_config);
    expect(service.max_instance_request_concurrency).toBe(10);
    expect(env("workers").WEBHOOKS_DB_POOL_MAX).toBe("10");
    expect(block(synthStackFn({ gcpProcessorRequestConcurrency: 4 }).body.service_config).max_instance_request_concurrency).toBe(4);
  });

  it("keeps retrying a refused push for gcpPushRetryMinutes before dead-lettering, counting the minimum backoff only", () => {
    const sub = resourceAt(json, "google_pubsub_subscription", "queue/push").body;
    const attempts = block(sub.dead_letter_policy).max_delivery_attempts as number;
    const minBackoff = parseInt(String(block(sub.retry_policy).minimum_backoff), 10);
    expect((attempts - 1) * minBackoff).toBeGreaterThanOrEqual(30 * 60);
    expect(env("workers").WEBHOOKS_MAX_DELIVERY_ATTEMPTS).toBe(String(attempts));
  });

  it("sets Cloud SQL max_connections and refuses a stack whose pools would exceed it", () => {
    const flags = block(resourcesOf(json, "google_sql_database_instance")[0]!.body.settings).database_flags as { name: string; value: string }[];
    expect(flags).toContainEqual({ name: "max_connections", value: "100" });
    expect(() => synthStack("gcp", { processorConcurrency: 10, gcpProcessorRequestConcurrency: 20 })).toThrow(/over cloudSqlMaxConnections 100/);
  });
});

describe("GCP #15, scheduled mode: a relay run ends before the next tick", () => {
  it.each([
    [1, 120], [1, 30], [1, 60], [2, 120], [2, 300], [5, 900], [15, 120], [60, 900],
  ])("interval %i min, relayTimeoutSeconds %i", (relayIntervalMinutes, relayTimeoutSeconds) => {
    const j = synthStack("gcp", { relayIntervalMinutes, relayTimeoutSeconds, relayMode: "scheduled" });
    const relay = resourceAt(j, "google_cloudfunctions2_function", "relay/relay/function");
    const service = block(relay.body.service_config);
    const budget = Number((service.environment_variables as Record<string, string>).WEBHOOKS_RELAY_BUDGET_SECONDS);
    const timeout = service.timeout_seconds as number;
    expect((service.environment_variables as Record<string, string>).WEBHOOKS_RELAY_MODE).toBe("scheduled");
    expect(service.max_instance_count).toBe(1);
    expect(timeout).toBeLessThanOrEqual(relayIntervalMinutes * 60);
    expect(timeout).toBeLessThanOrEqual(relayTimeoutSeconds);
    expect(budget).toBeLessThan(timeout);
    // The run, its cleanup and a cold start fit before the next tick.
    expect(budget + 15).toBeLessThanOrEqual(relayIntervalMinutes * 60);
    const job = resourceAt(j, "google_cloud_scheduler_job", "relay/job").body;
    expect(job.attempt_deadline).toBe(`${Math.max(15, timeout)}s`);
  });
});

describe("GCP issue 24, listening mode (the default): runs overlap, so one always listens", () => {
  it.each([
    [1, 120, 2], [1, 180, 3], [2, 300, 3], [5, 900, 3], [14, 900, 2],
  ])("interval %i min, relayTimeoutSeconds %i: the run listens past the next tick; %i instances at most", (relayIntervalMinutes, relayTimeoutSeconds, instances) => {
    const j = synthStack("gcp", { relayIntervalMinutes, relayTimeoutSeconds });
    const service = block(resourceAt(j, "google_cloudfunctions2_function", "relay/relay/function").body.service_config);
    const variables = service.environment_variables as Record<string, string>;
    expect(variables.WEBHOOKS_RELAY_MODE).toBe("listening");
    expect(service.timeout_seconds).toBe(relayTimeoutSeconds);
    // It listens until its budget less the pass reserve (the attempt timeout + 5 s = 15 s): past the next tick.
    expect(Number(variables.WEBHOOKS_RELAY_BUDGET_SECONDS) - 15).toBeGreaterThan(relayIntervalMinutes * 60);
    expect(service.max_instance_count).toBe(instances);
    expect(service.max_instance_request_concurrency ?? 1).toBe(1);
    expect(variables.WEBHOOKS_DB_POOL_MAX).toBe("3");
  });

  it("refuses a timeout that would leave a gap between runs, saying what to change", () => {
    expect(() => synthStack("gcp", { relayIntervalMinutes: 5, relayTimeoutSeconds: 120 })).toThrow(/relayTimeoutSeconds \(120\) must be at least relayIntervalMinutes × 60 \+ 60 \(360\).*relayMode "scheduled"/);
  });
});

describe("GCP #17: the processor dead-letters with a reason", () => {
  it("tells the processor the dead-letter topic and lets it publish there", () => {
    const dlq = resourceAt(json, "google_pubsub_topic", "queue/dlq-topic");
    expect(env("workers").WEBHOOKS_DEAD_LETTER_TOPIC).toBe(dlq.body.name);
    const publishers = resourcesOf(json, "google_pubsub_topic_iam_member").filter((m) => references(m.body.topic, dlq, "name"));
    expect(publishers.map((p) => p.body.member)).toEqual(expect.arrayContaining([expect.stringContaining("identities_processor")]));
  });
});

describe("GCP #18: egress IP output and labels", () => {
  it("outputs the Cloud NAT static address", () => {
    const nat = resourceAt(json, "google_compute_address", "network/nat-ip");
    expect(references((json.output as Record<string, { value: string }>).egress_ip?.value, nat, "address")).toBe(true);
  });

  it("labels every resource whose type takes labels (read from the provider's generated schema)", () => {
    const want = { app: "multicloud-webhooks", stack: "webhooks-gcp" };
    const checked: string[] = [];
    for (const r of allResources(json)) {
      const args = labelArguments(r.type, r.body.provider === "google-beta");
      if (args.has("userLabels")) expect(r.body.user_labels, r.path).toMatchObject(want);
      else if (args.has("labels")) expect(r.body.labels, r.path).toMatchObject(want);
      else continue;
      checked.push(r.type);
    }
    expect(new Set(checked).size).toBeGreaterThan(8);
    expect(block(resourcesOf(json, "google_sql_database_instance")[0]!.body.settings).user_labels).toMatchObject(want);
  });
});

/** The arguments of a resource type's generated Config interface that carry labels. */
function labelArguments(type: string, beta: boolean): Set<string> {
  const dir = beta ? type.replace(/_/g, "-") : type.replace(/^google_/, "").replace(/_/g, "-");
  const dts = readFileSync(fileURLToPath(new URL(`../../node_modules/@cdktf/${beta ? "provider-google-beta" : "provider-google"}/lib/${dir}/index.d.ts`, import.meta.url)), "utf8");
  const config = /export interface \w+Config extends cdktf\.TerraformMetaArguments \{([^]*?)\n\}/.exec(dts)?.[1] ?? "";
  return new Set([...config.matchAll(/readonly (labels|userLabels)\?:/g)].map((m) => m[1]!));
}

function synthStackFn(extra: Record<string, unknown>) {
  return resourceAt(synthStack("gcp", extra), "google_cloudfunctions2_function", "workers/function");
}

describe("GCP stack: issue 13: management function", () => {
  const openapi = () => {
    const config = resourcesOf(json, "google_api_gateway_api_config")[0]!.body;
    const contents = String(block(block(config.openapi_documents).document).contents);
    // `${base64encode(jsonencode({...}))}`: the document as cdktf wrote it, before Terraform encodes it.
    return contents;
  };
  const secretNamed = (id: string) => resourcesOf(json, "google_secret_manager_secret").find((s) => s.body.secret_id === `hooktest-${id}`)!;

  it("serves /api/{path=**} (every method) through the same API Gateway to the management function, which only the gateway may invoke", () => {
    const doc = openapi();
    expect(doc).toContain("/api/{path=**}");
    for (const method of ["get", "post", "put", "patch", "delete"]) expect(doc).toContain(`management${method[0]!.toUpperCase()}${method.slice(1)}`);
    expect(doc).toContain(`${fn("management").type}.${fn("management").name}.service_config[0].uri`);
    expect(doc).toContain("APPEND_PATH_TO_ADDRESS");
    const invokers = resourcesOf(json, "google_cloud_run_v2_service_iam_member").filter((m) => m.path.includes("/management/invoker"));
    expect(invokers.map((m) => m.body.member)).toEqual([expect.stringContaining("identities_gateway")]);
    expect(invokers[0]!.body.role).toBe("roles/run.invoker");
    expect(block(fn("management").body.build_config).entry_point).toBe("management");
  });

  it("outputs management_url (the gateway + /api) and the command that prints the admin token", () => {
    const gateway = resourceAt(json, "google_api_gateway_gateway", "ingress/gateway");
    expect(json.output!.management_url!.value).toBe(`https://\${${gateway.type}.${gateway.name}.default_hostname}/api`);
    const token = secretNamed("admin-token");
    expect(json.output!.admin_token_command!.value).toBe(`gcloud secrets versions access latest --secret=\${${token.type}.${token.name}.secret_id} --project=hooks-test-project`);
    expect(env("management").WEBHOOKS_MANAGEMENT_BASE_PATH).toBe("/api");
  });

  it("connects as webhooks_app like the relay (verify-ca, its own small pool counted in the connection budget), through the connector to private ranges only", () => {
    expect(secretOf("management", "DATABASE_URL")).toEqual(secretOf("relay", "DATABASE_URL"));
    expect(env("management").WEBHOOKS_DATABASE_TLS).toBe("verify-ca");
    expect(env("management").WEBHOOKS_DATABASE_CA_CERT).toBe(env("relay").WEBHOOKS_DATABASE_CA_CERT);
    expect(env("management").WEBHOOKS_DB_POOL_MAX).toBe("2");
    const service = block(fn("management").body.service_config);
    expect(service).toMatchObject({ max_instance_count: 2, max_instance_request_concurrency: 8, vpc_connector_egress_settings: "PRIVATE_RANGES_ONLY" });
    expect(secretEnv("management").map((s) => s.key).sort()).toEqual(["ADMIN_TOKEN", "DATABASE_URL", "ENCRYPTION_KEYS"]);
    // Counted in the budget: 9 processors × 10 + relay 2 × 3 (two listening runs overlap) + migrate 1 + management 2 × 2 = 101, over 100 less 10 reserved.
    expect(() => synthStack("gcp", { processorConcurrency: 9, gcpProcessorRequestConcurrency: 10, cloudSqlMaxConnections: 100 })).toThrow(/relay 2 × 3 \+ migrate 1 \+ management 2 × 2 = 101 connections/);
  });

  it("runs as its own service account, which may read exactly the app URL, its admin token and the encryption keys", () => {
    const account = resourceAt(json, "google_service_account", "identities/management");
    expect(references(block(fn("management").body.service_config).service_account_email, account, "email")).toBe(true);
    const mine = resourcesOf(json, "google_secret_manager_secret_iam_member").filter((m) => String(m.body.member).includes(`${account.type}.${account.name}.`));
    const secrets = mine.map((m) => resourcesOf(json, "google_secret_manager_secret").find((s) => String(m.body.secret_id).includes(`${s.type}.${s.name}.`))!.body.secret_id).sort();
    expect(secrets).toEqual(["hooktest-admin-token", "hooktest-database-url", "hooktest-encryption-keys"]);
    const tokenReaders = resourcesOf(json, "google_secret_manager_secret_iam_member").filter((m) => String(m.body.secret_id).includes(`${secretNamed("admin-token").name}.`));
    expect(tokenReaders).toHaveLength(1);
    expect(secretOf("relay", "ENCRYPTION_KEYS")).toEqual(secretNamed("encryption-keys"));
  });

  it("#25: writes a generated first version only while its secret has none, and abandons it (never destroys) after", () => {
    // The provider drops a DESTROYED version from state; without this, the next apply would write a new generated value.
    expect((json.variable as Record<string, { type: string; default: unknown }>).existing_generated_secrets).toMatchObject({ type: "list(string)", default: [] });
    for (const name of ["admin-token", "encryption-keys"]) {
      const version = versionOf(secretNamed(name))!.body;
      expect(version.count).toBe(`\${contains(var.existing_generated_secrets, "${name}") ? 0 : 1}`);
      expect(version.deletion_policy).toBe("ABANDON");
    }
  });

  it("generates the first versions of the admin token and the encryption keys, write-only (never in state)", () => {
    const token = versionOf(secretNamed("admin-token"))!.body;
    const keys = versionOf(secretNamed("encryption-keys"))!.body;
    expect(token).toMatchObject({ secret_data_wo: '${sha256("${uuid()}${uuid()}${uuid()}")}', secret_data_wo_version: 1 });
    expect(keys.secret_data_wo).toBe('k${formatdate("YYYYMMDD", timestamp())}:${base64sha256("${uuid()}${uuid()}${uuid()}")}');
    expect(token.secret_data).toBeUndefined();
    expect(keys.secret_data).toBeUndefined();
  });
});
