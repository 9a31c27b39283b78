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

  it("keeps the admin password in a sensitive variable and the URL in Key Vault", () => {
    expect(json.variable?.db_admin_password).toMatchObject({ sensitive: true });
    const secret = resourceAt(json, "azurerm_key_vault_secret", "database/url").body;
    expect(String(secret.value)).toContain("var.db_admin_password");
    expect(String(secret.value)).toContain("sslmode=require");
  });
});

describe("Azure stack: functions, secrets and identities", () => {
  it("runs three Node 22 Function Apps with their own user-assigned identity", () => {
    for (const id of ["ingress", "workers", "relay"]) {
      const a = app(id);
      expect(block(block(a.site_config).application_stack).node_version).toBe("22");
      expect(a.https_only).toBe(true);
      expect(block(a.identity).type).toBe("UserAssigned");
      expect([a.key_vault_reference_identity_id]).toEqual(block(a.identity).identity_ids);
      expect(String(a.zip_deploy_file)).toMatch(/^assets\/.+\.zip$/);
    }
  });

  it("puts secrets in app settings only as Key Vault references", () => {
    for (const id of ["ingress", "workers", "relay"]) {
      for (const [key, value] of Object.entries(settings(id))) {
        if (/DATABASE_URL|PARTNERS|SECRET|PASSWORD/.test(key)) expect(value, key).toMatch(/^@Microsoft\.KeyVault\(/);
        expect(value, key).not.toContain("var.db_admin_password");
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

  it("grants each identity only queue- and secret-scoped roles", () => {
    const grants = resourcesOf(json, "azurerm_role_assignment").filter((r) => r.component === "identities");
    const queue = resourcesOf(json, "azurerm_servicebus_queue")[0]!;
    for (const g of grants) {
      if (String(g.body.role_definition_name).startsWith("Azure Service Bus")) expect(references(g.body.scope, queue, "id")).toBe(true);
      else if (g.body.role_definition_name === "Storage Blob Data Contributor") {
        expect(references(g.body.scope, resourcesOf(json, "azurerm_storage_container")[0]!, "id")).toBe(true);
      } else {
        expect(g.body.role_definition_name).toBe("Key Vault Secrets User");
        const secret = resourcesOf(json, "azurerm_key_vault_secret").find((k) => references(g.body.scope, k, "resource_versionless_id"));
        expect(["database-url", "partner-signing-secrets"]).toContain(secret?.body.name);
      }
    }
    const ingestRoles = grants.filter((g) => g.path.includes("ingest-grant")).map((g) => g.body.role_definition_name);
    expect(ingestRoles.sort()).toEqual(["Azure Service Bus Data Sender", "Key Vault Secrets User", "Storage Blob Data Contributor"]);
    const relayRoles = grants.filter((g) => g.path.includes("relay-grant")).map((g) => g.body.role_definition_name);
    expect(relayRoles).toEqual(["Key Vault Secrets User"]);
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

  it("outputs the ingest URL, queue names and database endpoint", () => {
    expect(Object.keys(json.output ?? {})).toEqual(expect.arrayContaining(["ingest_url", "queue_name", "dead_letter_queue_name", "database_endpoint"]));
  });

  it("builds one construct per component", () => {
    const components = new Set(allResources(json).map((r) => r.component));
    expect([...components].sort()).toEqual(
      ["claim-checks", "database", "group", "hosting", "identities", "ingress", "network", "observability", "queue", "relay", "secrets", "workers"],
    );
  });
});
