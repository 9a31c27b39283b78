import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { TerraformJson } from "../../stacks/app.js";
import { allResources, block, references, resourceAt, resourcesOf } from "../../stacks/terraformJson.js";
import { synthStack, TEST_OVERRIDES } from "./synthFixture.js";

let json: TerraformJson;
beforeAll(() => {
  json = synthStack("azure");
});

const app = (id: string) => resourceAt(json, "azurerm_linux_function_app", `${id}/app`).body;
const settings = (id: string) => app(id).app_settings as Record<string, string>;
const APPS = ["ingress", "workers", "relay", "migrate", "management"];
const dependsOn = (r: { body: Record<string, unknown> }) => (r.body.depends_on ?? []) as string[];
const ref = (r: { type: string; name: string }) => `${r.type}.${r.name}`;
/** The roles a function's identity holds, by construct path (`identities/<fn>-grant<i>`). */
const rolesOf = (fn: string) => resourcesOf(json, "azurerm_role_assignment").filter((g) => g.path.includes(`identities/${fn}-grant`));
const secretNamed = (name: string) => resourcesOf(json, "azurerm_key_vault_secret").find((k) => k.body.name === name)!;
const readsSecret = (fn: string, name: string) => rolesOf(fn).some((g) => references(g.body.scope, secretNamed(name), "resource_versionless_id"));

describe("Azure stack: Service Bus", () => {
  it("dead-letters after the configured delivery count and on expiry", () => {
    const queue = resourcesOf(json, "azurerm_servicebus_queue")[0]!.body;
    expect(queue.max_delivery_count).toBe(TEST_OVERRIDES.maxDeliveryAttempts);
    expect(queue.dead_lettering_on_message_expiration).toBe(true);
    expect(queue.default_message_ttl).toBe(`P${TEST_OVERRIDES.queueRetentionDays}D`);
    expect(queue.lock_duration).toBe(`PT${TEST_OVERRIDES.processorTimeoutSeconds}S`);
  });

  it("requires TLS 1.2 and Entra ID (local SAS auth disabled)", () => {
    const ns = resourcesOf(json, "azurerm_servicebus_namespace")[0]!.body;
    expect(ns.minimum_tls_version).toBe("1.2");
    expect(ns.local_auth_enabled).toBe(false);
  });
});

describe("Azure stack: database", () => {
  it("is private (delegated subnet, no public access) with TLS required and backups", () => {
    const server = resourcesOf(json, "azurerm_postgresql_flexible_server")[0]!;
    expect(server.body.public_network_access_enabled).toBe(false);
    expect(references(server.body.delegated_subnet_id, resourceAt(json, "azurerm_subnet", "network/database"), "id")).toBe(true);
    expect(server.body.backup_retention_days).toBe(TEST_OVERRIDES.backupRetentionDays);
    const tls = resourcesOf(json, "azurerm_postgresql_flexible_server_configuration").find((c) => c.body.name === "require_secure_transport");
    expect(tls?.body.value).toBe("ON");
    expect(references(tls?.body.server_id, server, "id")).toBe(true);
  });

  it("keeps both passwords in sensitive variables and the URLs in Key Vault, without sslmode (TLS is explicit)", () => {
    expect(json.variable?.db_admin_password).toMatchObject({ sensitive: true });
    expect(json.variable?.db_app_password).toMatchObject({ sensitive: true });
    const appUrl = String(resourceAt(json, "azurerm_key_vault_secret", "database/url").body.value);
    const adminUrl = String(resourceAt(json, "azurerm_key_vault_secret", "database/admin-url").body.value);
    expect(appUrl).toMatch(/^postgres:\/\/webhooks_app:\$\{urlencode\(var\.db_app_password\)\}@/);
    expect(adminUrl).toMatch(/^postgres:\/\/webhooks_admin:\$\{urlencode\(var\.db_admin_password\)\}@/);
    for (const url of [appUrl, adminUrl]) expect(url).not.toMatch(/[?&]ssl/);
  });

  // Defect 8: every function connected as the admin.
  it("gives the admin URL to the migrate app alone; the others connect as webhooks_app over verify-full", () => {
    for (const id of ["ingress", "workers", "relay"]) {
      expect(Object.values(settings(id)).join(" "), id).not.toContain("database-admin-url");
    }
    expect(settings("migrate").DATABASE_ADMIN_URL).toContain("SecretName=database-admin-url");
    expect(settings("migrate").DATABASE_URL).toContain("SecretName=database-url");
    for (const id of ["workers", "relay", "migrate"]) expect(settings(id).WEBHOOKS_DATABASE_TLS, id).toBe("verify-full");
    expect(readsSecret("migrate", "database-admin-url")).toBe(true);
    for (const fn of ["ingest", "processor", "relay"]) expect(readsSecret(fn, "database-admin-url"), fn).toBe(false);
    expect(readsSecret("ingest", "database-url")).toBe(false);
  });

  it("runs the migrate app in the VNet, one instance, on the shared plan", () => {
    const migrate = app("migrate");
    expect(migrate.virtual_network_subnet_id).toBeDefined();
    expect(block(migrate.site_config).vnet_route_all_enabled).toBe(true);
    expect(block(migrate.site_config).app_scale_limit).toBe(1);
    expect(migrate.service_plan_id).toBe(app("workers").service_plan_id);
    expect(settings("migrate").WEBHOOKS_MIGRATE_SCHEDULE).toMatch(/^0 \S+ \S+ \* \* \*$/);
  });
});

describe("Azure stack: functions, secrets and identities", () => {
  it("runs five Node 22 Function Apps with their own user-assigned identity", () => {
    for (const id of APPS) {
      const a = app(id);
      expect(block(block(a.site_config).application_stack).node_version).toBe("22");
      expect(a.https_only).toBe(true);
      expect(block(a.identity).type).toBe("UserAssigned");
      expect([a.key_vault_reference_identity_id]).toEqual(block(a.identity).identity_ids);
      expect(String(a.zip_deploy_file)).toMatch(/^assets\/.+\.zip$/);
    }
  });

  it("puts secrets in app settings only as Key Vault references", () => {
    for (const id of APPS) {
      for (const [key, value] of Object.entries(settings(id))) {
        if (/DATABASE_URL|DATABASE_ADMIN_URL|PARTNERS|SECRET|PASSWORD|TOKEN|ENCRYPTION_KEYS/.test(key)) expect(value, key).toMatch(/^@Microsoft\.KeyVault\(/);
        expect(value, key).not.toMatch(/var\.db_(admin|app)_password/);
      }
    }
    expect(settings("workers").DATABASE_URL).toContain("SecretName=database-url");
  });

  it("caps processor concurrency and connects to Service Bus with the managed identity", () => {
    expect(block(app("workers").site_config).app_scale_limit).toBe(TEST_OVERRIDES.processorConcurrency);
    expect(settings("workers").AzureFunctionsJobHost__extensions__serviceBus__maxConcurrentCalls).toBe(String(TEST_OVERRIDES.processorBatchSize));
    expect(settings("workers").ServiceBusConnection__credential).toBe("managedidentity");
    expect(settings("relay").WEBHOOKS_RELAY_SCHEDULE).toBe("0 */1 * * * *");
    expect(app("workers").virtual_network_subnet_id).toBeDefined();
    expect(block(app("relay").site_config).vnet_route_all_enabled).toBe(true);
  });

  it("grants each identity only queue-, container- and secret-scoped roles", () => {
    const grants = resourcesOf(json, "azurerm_role_assignment").filter((r) => r.component === "identities");
    const queue = resourcesOf(json, "azurerm_servicebus_queue")[0]!;
    const container = resourcesOf(json, "azurerm_storage_container")[0]!;
    for (const g of grants) {
      if (String(g.body.role_definition_name).startsWith("Azure Service Bus")) expect(references(g.body.scope, queue, "id")).toBe(true);
      else if (String(g.body.role_definition_name).startsWith("Storage Blob Data")) expect(references(g.body.scope, container, "id")).toBe(true);
      else {
        expect(g.body.role_definition_name).toBe("Key Vault Secrets User");
        const secret = resourcesOf(json, "azurerm_key_vault_secret").find((k) => references(g.body.scope, k, "resource_versionless_id"));
        expect(["database-url", "database-admin-url", "partner-signing-secrets", "alert-webhook-secret", "admin-token", "encryption-keys"]).toContain(secret?.body.name);
      }
    }
    const names = (fn: string) => rolesOf(fn).map((g) => g.body.role_definition_name).sort();
    expect(names("ingest")).toEqual(["Azure Service Bus Data Sender", "Key Vault Secrets User", "Storage Blob Data Contributor"]);
    // The database URL and the encryption keys of the subscriptions' secrets (issue 17).
    expect(names("relay")).toEqual(["Key Vault Secrets User", "Key Vault Secrets User"]);
    expect(readsSecret("relay", "encryption-keys")).toBe(true);
    expect(readsSecret("relay", "alert-webhook-secret")).toBe(false); // no alertWebhookUrl in this config
    expect(names("migrate")).toEqual(["Key Vault Secrets User", "Key Vault Secrets User"]);
  });

  // Defect 11: the processor held Blob Data Contributor.
  it("lets the processor only read claim-checks (Storage Blob Data Reader)", () => {
    const blob = rolesOf("processor").filter((g) => String(g.body.role_definition_name).startsWith("Storage Blob"));
    expect(blob.map((g) => g.body.role_definition_name)).toEqual(["Storage Blob Data Reader"]);
  });

  // Defect 9: claim-checks lived in the runtime account, whose key every app gets.
  it("keeps claim-checks in their own account with shared-key access off, out of the relay's reach", () => {
    const accounts = resourcesOf(json, "azurerm_storage_account");
    const claimAccount = accounts.find((a) => a.component === "claim-checks");
    expect(claimAccount?.body.shared_access_key_enabled).toBe(false);
    const container = resourcesOf(json, "azurerm_storage_container")[0]!;
    expect(references(container.body.storage_account_id, claimAccount!, "id")).toBe(true);
    const runtimeAccount = accounts.find((a) => a.component === "hosting")!;
    expect(references(container.body.storage_account_id, runtimeAccount, "id")).toBe(false);
    for (const id of APPS) {
      expect(references(app(id).storage_account_access_key, claimAccount!)).toBe(false);
      expect(JSON.stringify(settings(id))).not.toContain(`${claimAccount!.type}.${claimAccount!.name}.primary_access_key`);
    }
    expect(references(settings("ingress").WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL, claimAccount!, "primary_blob_endpoint")).toBe(true);
    expect(references(settings("workers").WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL, claimAccount!, "primary_blob_endpoint")).toBe(true);
    expect(settings("relay").WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL).toBeUndefined();
    expect(rolesOf("relay").some((g) => String(g.body.role_definition_name).startsWith("Storage"))).toBe(false);
    // With shared keys off, azurerm must not read the account's data plane with a key.
    const features = block((json.provider as Record<string, unknown[]>).azurerm![0] as Record<string, unknown>);
    expect(block(block(features.features).storage).data_plane_available).toBe(false);
  });

  // Defect 1: SCM basic auth off + zip_deploy_file → the provider's Kudu zip deploy answers 401.
  it("keeps SCM basic auth that azurerm's zip deploy uses, with FTP off", () => {
    for (const id of APPS) {
      const a = app(id);
      expect(a.zip_deploy_file, id).toBeDefined();
      expect(a.webdeploy_publish_basic_authentication_enabled, id).toBe(true);
      expect(a.ftp_publish_basic_authentication_enabled, id).toBe(false);
      expect(settings(id).WEBSITE_RUN_FROM_PACKAGE).toBe("1");
    }
  });

  // Defect 4: secrets written (and Key Vault references resolved) before RBAC had propagated.
  it("waits for RBAC to propagate before writing secrets and before starting the apps", () => {
    expect(((json as unknown as { terraform: unknown }).terraform as { required_providers?: Record<string, { source?: string }> }).required_providers?.time?.source).toBe("hashicorp/time");
    const sleeps = resourcesOf(json, "time_sleep");
    const deployerWait = sleeps.find((t) => t.component === "secrets")!;
    const deployer = resourceAt(json, "azurerm_role_assignment", "secrets/deployer");
    expect(deployerWait.body.create_duration).toMatch(/^\d+s$/);
    expect(Number.parseInt(String(deployerWait.body.create_duration), 10)).toBeGreaterThanOrEqual(60);
    expect(dependsOn(deployerWait)).toContain(ref(deployer));
    for (const secret of resourcesOf(json, "azurerm_key_vault_secret")) {
      expect(dependsOn(secret), secret.body.name as string).toContain(ref(deployerWait));
    }
    const grantsWait = sleeps.find((t) => t.component === "identities")!;
    for (const g of resourcesOf(json, "azurerm_role_assignment").filter((r) => r.component === "identities")) {
      expect(dependsOn(grantsWait)).toContain(ref(g));
    }
    for (const id of APPS) expect(dependsOn(resourceAt(json, "azurerm_linux_function_app", `${id}/app`)), id).toContain(ref(grantsWait));
  });

  // Defect 12: ingest refused bodies above MAX_PAYLOAD_BYTES, so claim-check never carried a large one.
  it("lets ingest accept bodies up to 64 MiB (under the Functions HTTP limit) so large ones go by claim-check", () => {
    expect(settings("ingress").MAX_INBOUND_BODY_BYTES).toBe(String(64 * 1024 * 1024));
    expect(Number(settings("ingress").MAX_INBOUND_BODY_BYTES)).toBeLessThan(100 * 1024 * 1024);
  });

  // Defect 13: the processor's transient failures burnt every delivery at once.
  it("bounds the processor's delayed retries by maxDeliveryAttempts", () => {
    expect(settings("workers").WEBHOOKS_RETRY_MAX_ATTEMPTS).toBe(String(TEST_OVERRIDES.maxDeliveryAttempts));
  });

  it("protects Key Vault (purge protection, RBAC)", () => {
    const vault = resourcesOf(json, "azurerm_key_vault")[0]!.body;
    expect(vault.purge_protection_enabled).toBe(true);
    expect(vault.rbac_authorization_enabled).toBe(true);
  });
});

describe("Azure stack: observability and outputs", () => {
  it("sends telemetry to Application Insights and alerts on dead letters", () => {
    const insights = resourcesOf(json, "azurerm_application_insights")[0]!;
    expect(block(app("workers").site_config).application_insights_connection_string).toContain(`${insights.type}.${insights.name}.connection_string`);
    const alert = block(resourcesOf(json, "azurerm_monitor_metric_alert")[0]!.body.criteria);
    expect(alert.metric_name).toBe("DeadletteredMessages");
  });

  // Defect 7: the metric alert told no one; the relay had no alert destination.
  it("e-mails the dead-letter alert through an action group when alertEmail is set", () => {
    expect(resourcesOf(json, "azurerm_monitor_action_group")).toEqual([]);
    const configured = synthStack("azure", { alertEmail: "ops@example.com", alertWebhookUrl: "https://alerts.example.com/hooks" });
    const group = resourcesOf(configured, "azurerm_monitor_action_group")[0]!;
    expect(block(group.body.email_receiver)).toMatchObject({ email_address: "ops@example.com" });
    expect(String(group.body.short_name).length).toBeLessThanOrEqual(12);
    const alert = resourcesOf(configured, "azurerm_monitor_metric_alert")[0]!;
    expect(references(block(alert.body.action).action_group_id, group, "id")).toBe(true);
    const relay = resourceAt(configured, "azurerm_linux_function_app", "relay/app").body.app_settings as Record<string, string>;
    expect(relay.ALERT_WEBHOOK_URL).toBe("https://alerts.example.com/hooks");
    expect(relay.ALERT_WEBHOOK_SECRET).toMatch(/^@Microsoft\.KeyVault\(VaultName=.+;SecretName=alert-webhook-secret\)$/);
    const secret = resourcesOf(configured, "azurerm_key_vault_secret").find((k) => k.body.name === "alert-webhook-secret")!;
    const relayIdentity = resourceAt(configured, "azurerm_user_assigned_identity", "identities/relay-identity");
    expect(resourcesOf(configured, "azurerm_role_assignment").some((g) => references(g.body.principal_id, relayIdentity, "principal_id")
      && references(g.body.scope, secret, "resource_versionless_id"))).toBe(true);
    expect(secret.body.lifecycle).toMatchObject({ ignore_changes: expect.arrayContaining(["value"]) });
    expect(settings("relay").ALERT_WEBHOOK_URL).toBeUndefined();
  });

  it("outputs the ingest URL, queue names, database endpoint and the egress IP", () => {
    expect(Object.keys(json.output ?? {})).toEqual(expect.arrayContaining(["ingest_url", "queue_name", "dead_letter_queue_name", "database_endpoint", "egress_ip"]));
    // Defect 18: the static egress IP the docs tell receivers to allow-list.
    expect(references(json.output!.egress_ip!.value, resourceAt(json, "azurerm_public_ip", "network/nat-ip"), "ip_address")).toBe(true);
  });

  // Defect 18: no Azure resource had tags.
  it("tags every resource whose type takes tags (app, stack)", () => {
    const lib = join(dirname(createRequire(import.meta.url).resolve("@cdktf/provider-azurerm/package.json")), "lib");
    const takesTags = new Map<string, boolean>();
    const tagged = allResources(json).filter((r) => {
      if (!r.type.startsWith("azurerm_")) return false;
      if (!takesTags.has(r.type)) {
        const typings = readFileSync(join(lib, r.type.replace(/^azurerm_/, "").replace(/_/g, "-"), "index.d.ts"), "utf8");
        takesTags.set(r.type, /^\s+readonly tags\?: \{/m.test(typings));
      }
      return takesTags.get(r.type);
    });
    expect(tagged.length).toBeGreaterThan(20);
    for (const r of tagged) expect(r.body.tags, `${r.type} ${r.path}`).toEqual({ app: "multicloud-webhooks", stack: "webhooks-azure" });
  });

  it("builds one construct per component", () => {
    const components = new Set(allResources(json).map((r) => r.component));
    expect([...components].sort()).toEqual(
      ["claim-checks", "database", "group", "hosting", "identities", "ingress", "management", "migrate", "network", "observability", "queue", "relay", "secrets", "workers"],
    );
  });
});

describe("Azure stack: issue 13: management function", () => {
  it("runs the management API in its own Function App on the shared plan, in the VNet, at https://<app>/api", () => {
    const management = resourceAt(json, "azurerm_linux_function_app", "management/app");
    expect(management.body.name).toBe("hooktest-management");
    expect(app("management").service_plan_id).toBe(app("relay").service_plan_id);
    expect(app("management").virtual_network_subnet_id).toBe(app("relay").virtual_network_subnet_id);
    expect(block(app("management").site_config).vnet_route_all_enabled).toBe(true);
    // The Functions host's default route prefix: the root would give /admin to the host's own admin API.
    expect(json.output!.management_url!.value).toBe(`https://\${${ref(management)}.default_hostname}/api`);
    expect(settings("management").WEBHOOKS_MANAGEMENT_BASE_PATH).toBe("/api");
    expect(String(json.output!.admin_token_command!.value)).toMatch(/^az keyvault secret show --vault-name \$\{azurerm_key_vault\.[^}]+\.name\} --name admin-token --query value -o tsv$/);
  });

  it("connects as webhooks_app like the relay, and reads its token and the encryption keys as Key Vault references", () => {
    expect(settings("management").DATABASE_URL).toBe(settings("relay").DATABASE_URL);
    expect(settings("management").WEBHOOKS_DATABASE_TLS).toBe("verify-full");
    expect(settings("management").DATABASE_ADMIN_URL).toBeUndefined();
    expect(settings("management").ADMIN_TOKEN).toMatch(/^@Microsoft\.KeyVault\(VaultName=\$\{[^}]+\};SecretName=admin-token\)$/);
    expect(settings("management").ENCRYPTION_KEYS).toMatch(/;SecretName=encryption-keys\)$/);
    expect(settings("relay").ENCRYPTION_KEYS).toBe(settings("management").ENCRYPTION_KEYS);
    // The processor too: a forwarding partner's subscription secrets are written encrypted.
    expect(settings("workers").ENCRYPTION_KEYS).toBe(settings("management").ENCRYPTION_KEYS);
    for (const fn of ["processor", "relay", "management"]) expect(readsSecret(fn, "encryption-keys"), fn).toBe(true);
    for (const fn of ["ingest", "migrate"]) expect(readsSecret(fn, "encryption-keys"), fn).toBe(false);
    for (const id of ["ingress", "workers", "relay", "migrate"]) expect(settings(id).ADMIN_TOKEN, id).toBeUndefined();
  });

  it("grants its identity Key Vault Secrets User on exactly database-url, admin-token and encryption-keys; no queue, no blobs", () => {
    const grants = rolesOf("management");
    expect(grants.map((g) => g.body.role_definition_name)).toEqual(["Key Vault Secrets User", "Key Vault Secrets User", "Key Vault Secrets User"]);
    for (const name of ["database-url", "admin-token", "encryption-keys"]) expect(readsSecret("management", name), name).toBe(true);
    for (const fn of ["ingest", "processor", "relay", "migrate"]) expect(readsSecret(fn, "admin-token"), fn).toBe(false);
    const identity = resourceAt(json, "azurerm_user_assigned_identity", "identities/management-identity");
    expect(block(app("management").identity).identity_ids).toEqual([`\${${ref(identity)}.id}`]);
    // Its Key Vault references resolve at start: the grants must have propagated by then.
    expect(dependsOn(resourceAt(json, "azurerm_linux_function_app", "management/app")).some((d) => d.includes("identities_propagation"))).toBe(true);
  });

  it("generates the admin token and the encryption keys at the first apply, write-only (never in state)", () => {
    for (const name of ["admin-token", "encryption-keys"]) {
      const secret = secretNamed(name);
      expect(secret.body.value, name).toBeUndefined();
      expect(secret.body.value_wo_version, name).toBe(1);
      expect(dependsOn(secret).some((d) => d.includes("deployer-propagation")), name).toBe(true);
    }
    expect(secretNamed("admin-token").body.value_wo).toBe('${sha256("${uuid()}${uuid()}${uuid()}")}');
    expect(secretNamed("encryption-keys").body.value_wo).toBe('k${formatdate("YYYYMMDD", timestamp())}:${base64sha256("${uuid()}${uuid()}${uuid()}")}');
  });
});

describe("Azure #25: docs/deploy-azure.md counts what the stack creates", () => {
  const WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"];
  it("names as many identities and Function Apps as the synthesized stack has", () => {
    const doc = readFileSync("docs/deploy-azure.md", "utf8").replace(/\s+/g, " ");
    const counts: Record<string, number> = {
      identities: resourcesOf(json, "azurerm_user_assigned_identity").length,
      "Function Apps": resourcesOf(json, "azurerm_linux_function_app").length,
      apps: resourcesOf(json, "azurerm_linux_function_app").length,
    };
    expect(counts.identities).toBe(5);
    for (const [noun, count] of Object.entries(counts)) {
      const said = [...doc.matchAll(new RegExp(`\\b(${WORDS.join("|")}) ${noun}\\b`, "gi"))].map((m) => m[0]);
      for (const phrase of said) expect(WORDS.indexOf(phrase.split(" ")[0]!.toLowerCase()), `docs/deploy-azure.md: "${phrase}"`).toBe(count);
    }
  });
});
