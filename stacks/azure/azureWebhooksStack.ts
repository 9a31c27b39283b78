/**
 * The Azure target: an HTTP-triggered ingest Function (not API Management: see docs/clouds.md),
 * Service Bus, PostgreSQL Flexible Server, Key Vault, and Function Apps for the processor
 * (Service Bus trigger), the relay (timer trigger), the migrate step (timer with runOnStartup: it
 * runs at each deploy, before the others can use the schema; docs/deploy-azure.md) and the
 * management API (HTTP, its own app and identity, at `https://<app>/api`).
 */
import { TerraformOutput, TerraformStack, TerraformVariable } from "cdktf";
import type { Construct } from "constructs";
import { AzurermProvider } from "@cdktf/provider-azurerm/lib/provider/index.js";
import { ResourceGroup } from "@cdktf/provider-azurerm/lib/resource-group/index.js";
import type { FunctionName } from "../artifacts.js";
import type { CloudStackProps } from "../aws/awsWebhooksStack.js";
import { azureRelaySettings } from "./relayTimers.js";
import { CLAIM_CHECK_CONTAINER, ClaimCheckContainer } from "./claimCheckContainer.js";
import { FunctionHost } from "./functionHost.js";
import { ADMIN_TOKEN_SECRET_NAME, ALERT_SECRET_NAME, ENCRYPTION_KEYS_SECRET_NAME, KeyVaultSecrets, PARTNER_SECRETS_NAME } from "./keyVaultSecrets.js";
import { destinationsOf } from "../relayDestinations.js";
import { ManagedIdentities } from "./managedIdentities.js";
import { Monitoring } from "./monitoring.js";
import { telemetryEnvironment } from "../telemetry.js";
import { NodeFunctionApp } from "./nodeFunctionApp.js";
import { DATABASE_ADMIN_URL_SECRET, DATABASE_URL_SECRET, PostgresFlexibleServer } from "./postgresFlexibleServer.js";
import { PrivateNetwork } from "./privateNetwork.js";
import { RbacPropagation } from "./rbacPropagation.js";
import { ServiceBusQueue } from "./serviceBusQueue.js";

/**
 * Largest inbound body ingest accepts: the platform's own cap (64 MiB), below the Functions
 * host's HTTP request limit (100 MB, docs/deploy-azure.md). Bodies above a Service Bus Standard
 * message (256 KB) travel by claim-check.
 */
export const AZURE_MAX_INBOUND_BODY_BYTES = 64 * 1024 * 1024;
/** How often the migrate timer runs besides at start-up (each run is idempotent and cheap). */
export const MIGRATE_SCHEDULE = "0 */5 * * * *";
/**
 * The management API's path prefix: the Functions host's default route prefix, `api`. Not "" (the
 * root): the host keeps `/admin/…` for its own admin API, so the admin page would never be reached
 * (azure-functions-host#6990, #2590). The function strips it (WEBHOOKS_MANAGEMENT_BASE_PATH).
 */
export const AZURE_MANAGEMENT_BASE_PATH = "/api";

export class AzureWebhooksStack extends TerraformStack {
  constructor(scope: Construct, id: string, props: CloudStackProps) {
    super(scope, id);
    const { config, artifacts } = props;
    const prefix = config.namePrefix;
    // data_plane_available = false: the claim-check account has shared-key access off, and with the
    // data plane on, azurerm 4.x reads every account's queue and static-website properties with a key.
    new AzurermProvider(this, "azurerm", { features: [{ storage: [{ dataPlaneAvailable: false }] }], storageUseAzuread: false });
    RbacPropagation.declareProvider(this);
    const tags = { app: "multicloud-webhooks", stack: id };
    const group = new ResourceGroup(this, "group", { name: `${prefix}-rg`, location: config.azureLocation, tags });
    const where = { prefix, resourceGroupName: group.name, location: group.location, tags };
    const password = (name: string, description: string) => new TerraformVariable(this, name, { type: "string", sensitive: true, description });
    const adminPassword = password("db_admin_password", "PostgreSQL admin password (TF_VAR_db_admin_password); in Key Vault as database-admin-url, read by the migrate function only");
    const appPassword = password("db_app_password", "Password of the application role webhooks_app (TF_VAR_db_app_password); in Key Vault as database-url, set on the role by the migrate function");

    const network = new PrivateNetwork(this, "network", where);
    const secrets = new KeyVaultSecrets(this, "secrets", where);
    const bus = new ServiceBusQueue(this, "queue", { ...where, config });
    const database = new PostgresFlexibleServer(this, "database", { ...where, config, network, secrets, adminPassword, appPassword });
    const host = new FunctionHost(this, "hosting", where);
    const claimChecks = new ClaimCheckContainer(this, "claim-checks", { ...where, config });
    const monitoring = new Monitoring(this, "observability", { ...where, config, namespaceId: bus.namespace.id, queueName: bus.queue.name });
    const queueScope = bus.queue.id;
    const secretReader = (secret: Parameters<typeof KeyVaultSecrets.scopeOf>[0]) => ({ role: "Key Vault Secrets User" as const, scope: KeyVaultSecrets.scopeOf(secret) });
    const identities = new ManagedIdentities(this, "identities", {
      ...where,
      grants: {
        ingest: [
          { role: "Azure Service Bus Data Sender", scope: queueScope },
          secretReader(secrets.partnerSecret),
          { role: "Storage Blob Data Contributor", scope: claimChecks.scope },
        ],
        // Receiver to settle, Sender to schedule a copy for "retry after a delay".
        processor: [
          { role: "Azure Service Bus Data Receiver", scope: queueScope },
          { role: "Azure Service Bus Data Sender", scope: queueScope },
          secretReader(database.urlSecret),
          // The partners' forward destinations (issue 16): each verified event a partner forwards is
          // enqueued by the processor, in the inbox write's transaction. It never verifies: ingest did.
          secretReader(secrets.partnerSecret),
          // A forwarding partner's subscription secrets are written encrypted (issue 17).
          secretReader(secrets.encryptionKeysSecret),
          // Reads claim-checks only: ingest writes them, and lifecycle management deletes them.
          { role: "Storage Blob Data Reader", scope: claimChecks.scope },
        ],
        // The encryption keys to decrypt the subscriptions' signing secrets (issue 17); the alert
        // signing secret only where the relay sends alerts.
        relay: [
          secretReader(database.urlSecret),
          secretReader(secrets.encryptionKeysSecret),
          ...(config.alertWebhookUrl ? [secretReader(secrets.alertSecret)] : []),
          // Scheduled mode: its wake-up trigger reads the wake-up queue.
          ...(bus.wakeQueue ? [{ role: "Azure Service Bus Data Receiver" as const, scope: bus.wakeQueue.id }] : []),
          // Destinations beyond HTTP (issue 31): send, and only send, to each queue or topic listed.
          ...destinationsOf(config.relayDestinations, "azure").map((d) => ({ role: "Azure Service Bus Data Sender" as const, scope: d.resourceId })),
        ],
        // The owner's URL, and the application URL for the role's password.
        migrate: [secretReader(database.adminUrlSecret), secretReader(database.urlSecret)],
        // The database as webhooks_app, its bootstrap token, the keys of the subscriptions' secrets.
        // Scheduled mode: it sends the relay's wake-ups.
        management: [
          secretReader(database.urlSecret), secretReader(secrets.adminTokenSecret), secretReader(secrets.encryptionKeysSecret),
          ...(bus.wakeQueue ? [{ role: "Azure Service Bus Data Sender" as const, scope: bus.wakeQueue.id }] : []),
        ],
      },
    });

    const busConnection = (fn: FunctionName) => ({
      // Identity-based connection: the trigger and the SDK authenticate with the managed identity.
      ServiceBusConnection__fullyQualifiedNamespace: `${bus.namespace.name}.servicebus.windows.net`,
      ServiceBusConnection__credential: "managedidentity",
      ServiceBusConnection__clientId: identities.identities[fn].clientId,
    });
    const busSettings = (fn: FunctionName) => ({ ...busConnection(fn), WEBHOOKS_QUEUE_NAME: bus.queue.name });
    // Scheduled mode: the management app sends the relay's wake-ups, the relay app's trigger reads them.
    const wakeSettings = (fn: FunctionName): Record<string, string> => (bus.wakeQueue ? { ...busConnection(fn), WEBHOOKS_RELAY_WAKE_QUEUE: bus.wakeQueue.name } : {});
    const claimCheckSettings = { WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL: claimChecks.accountUrl, WEBHOOKS_CLAIM_CHECK_CONTAINER: CLAIM_CHECK_CONTAINER };
    // Flexible Server's certificate chains to public roots in Node's own store (docs/clouds.md).
    const databaseSettings = { DATABASE_URL: secrets.reference(DATABASE_URL_SECRET), WEBHOOKS_DATABASE_TLS: "verify-full" };
    const encryptionSettings = { ENCRYPTION_KEYS: secrets.reference(ENCRYPTION_KEYS_SECRET_NAME) };
    const app = (id: string, fn: FunctionName, appSettings: Record<string, string>, inVnet: boolean, scaleLimit?: number) =>
      new NodeFunctionApp(this, id, {
        ...where,
        name: `${prefix}-${fn}`,
        artifactDir: artifacts[fn],
        host,
        identity: identities.identities[fn],
        insightsConnectionString: monitoring.connectionString,
        appSettings,
        telemetry: telemetryEnvironment(config, "azure", `${prefix}-${fn}`, config.azureLocation),
        vnetSubnetId: inVnet ? network.functionsSubnetId : undefined,
        scaleLimit,
        // Key Vault references resolve when the app starts: its grants must be in force by then.
        dependsOn: [identities.propagated],
      });

    const ingest = app("ingress", "ingest", {
      ...busSettings("ingest"),
      ...claimCheckSettings,
      PARTNERS: secrets.reference(PARTNER_SECRETS_NAME),
      MAX_INBOUND_BODY_BYTES: String(AZURE_MAX_INBOUND_BODY_BYTES),
    }, false);
    app(
      "workers",
      "processor",
      {
        ...busSettings("processor"),
        ...claimCheckSettings,
        ...databaseSettings,
        ...encryptionSettings,
        PARTNERS: secrets.reference(PARTNER_SECRETS_NAME),
        // Failures before the inbox are retried with a growing delay this many times, then dead-lettered.
        WEBHOOKS_RETRY_MAX_ATTEMPTS: String(config.maxDeliveryAttempts),
        // host.json override: messages in flight per instance.
        AzureFunctionsJobHost__extensions__serviceBus__maxConcurrentCalls: String(config.processorBatchSize),
        AzureFunctionsJobHost__functionTimeout: timeSpan(config.processorTimeoutSeconds),
      },
      true,
      config.processorConcurrency,
    );
    const alerts: Record<string, string> = config.alertWebhookUrl ? { ALERT_WEBHOOK_URL: config.alertWebhookUrl, ALERT_WEBHOOK_SECRET: secrets.reference(ALERT_SECRET_NAME) } : {};
    app(
      "relay",
      "relay",
      {
        ...databaseSettings,
        ...encryptionSettings,
        ...alerts,
        ...azureRelaySettings(config),
        ...wakeSettings("relay"),
        // One woken run at a time (with the app's scale limit of 1, one at all), beside the timer's.
        ...(bus.wakeQueue ? { AzureFunctionsJobHost__extensions__serviceBus__maxConcurrentCalls: "1" } : {}),
        AzureFunctionsJobHost__functionTimeout: timeSpan(config.relayTimeoutSeconds),
      },
      true,
      1,
    );
    app(
      "migrate",
      "migrate",
      {
        ...databaseSettings,
        DATABASE_ADMIN_URL: secrets.reference(DATABASE_ADMIN_URL_SECRET),
        WEBHOOKS_MIGRATE_SCHEDULE: MIGRATE_SCHEDULE,
      },
      true,
      1,
    );
    const management = app(
      "management",
      "management",
      {
        ...databaseSettings,
        ...encryptionSettings,
        ADMIN_TOKEN: secrets.reference(ADMIN_TOKEN_SECRET_NAME),
        WEBHOOKS_MANAGEMENT_BASE_PATH: AZURE_MANAGEMENT_BASE_PATH,
        ...wakeSettings("management"),
      },
      true,
    );

    new TerraformOutput(this, "ingest_url", { value: `https://${ingest.app.defaultHostname}/api/webhooks/{partner}` });
    new TerraformOutput(this, "management_url", {
      value: `https://${management.app.defaultHostname}${AZURE_MANAGEMENT_BASE_PATH}`,
      description: "The management API (webhooks --url <this> …, or WEBHOOKS_URL=<this>) and admin page (<this>/admin)",
    });
    new TerraformOutput(this, "admin_token_command", {
      value: `az keyvault secret show --vault-name ${secrets.vault.name} --name ${ADMIN_TOKEN_SECRET_NAME} --query value -o tsv`,
      description: "Prints the management API's admin token",
    });
    new TerraformOutput(this, "queue_name", { value: bus.queue.name });
    new TerraformOutput(this, "dead_letter_queue_name", { value: `${bus.queue.name}/$DeadLetterQueue` });
    new TerraformOutput(this, "database_endpoint", { value: database.fqdn });
    new TerraformOutput(this, "key_vault_name", { value: secrets.vault.name, description: `Set ${PARTNER_SECRETS_NAME} (and ${ALERT_SECRET_NAME}) here` });
    new TerraformOutput(this, "service_bus_namespace", { value: bus.namespace.name });
    new TerraformOutput(this, "relay_identity_principal_id", {
      value: identities.identities.relay.principalId,
      description: "The relay's managed identity: the principal to assign \"Azure Service Bus Data Sender\" on a destination queue or topic (docs/deploy-azure.md)",
    });
    new TerraformOutput(this, "egress_ip", { value: network.egressIp, description: "Deliveries leave from this address (the NAT gateway's): receivers can allow-list it" });
  }
}

/** 75 → "00:01:15", the TimeSpan format of host.json. */
function timeSpan(seconds: number): string {
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(Math.floor(seconds / 3600))}:${two(Math.floor((seconds % 3600) / 60))}:${two(seconds % 60)}`;
}
