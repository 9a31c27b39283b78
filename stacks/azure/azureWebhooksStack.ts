/**
 * The Azure target: an HTTP-triggered ingest Function (not API Management: see docs/clouds.md),
 * Service Bus, PostgreSQL Flexible Server, Key Vault, and Function Apps for the processor
 * (Service Bus trigger) and the relay (timer trigger).
 */
import { TerraformOutput, TerraformStack, TerraformVariable } from "cdktf";
import type { Construct } from "constructs";
import { AzurermProvider } from "@cdktf/provider-azurerm/lib/provider/index.js";
import { ResourceGroup } from "@cdktf/provider-azurerm/lib/resource-group/index.js";
import type { FunctionName } from "../artifacts.js";
import type { CloudStackProps } from "../aws/awsWebhooksStack.js";
import { relayBudgetSeconds } from "../config.js";
import { CLAIM_CHECK_CONTAINER, ClaimCheckContainer } from "./claimCheckContainer.js";
import { FunctionHost } from "./functionHost.js";
import { KeyVaultSecrets, PARTNER_SECRETS_NAME } from "./keyVaultSecrets.js";
import { ManagedIdentities } from "./managedIdentities.js";
import { Monitoring } from "./monitoring.js";
import { NodeFunctionApp } from "./nodeFunctionApp.js";
import { DATABASE_URL_SECRET, PostgresFlexibleServer } from "./postgresFlexibleServer.js";
import { PrivateNetwork } from "./privateNetwork.js";
import { ServiceBusQueue } from "./serviceBusQueue.js";

export class AzureWebhooksStack extends TerraformStack {
  constructor(scope: Construct, id: string, props: CloudStackProps) {
    super(scope, id);
    const { config, artifacts } = props;
    const prefix = config.namePrefix;
    new AzurermProvider(this, "azurerm", { features: [{}], storageUseAzuread: false });
    const group = new ResourceGroup(this, "group", { name: `${prefix}-rg`, location: config.azureLocation });
    const where = { prefix, resourceGroupName: group.name, location: group.location };
    const adminPassword = new TerraformVariable(this, "db_admin_password", {
      type: "string",
      sensitive: true,
      description: "PostgreSQL admin password (TF_VAR_db_admin_password); stored in Key Vault as the database URL",
    });

    const network = new PrivateNetwork(this, "network", where);
    const secrets = new KeyVaultSecrets(this, "secrets", where);
    const bus = new ServiceBusQueue(this, "queue", { ...where, config });
    const database = new PostgresFlexibleServer(this, "database", { ...where, config, network, secrets, adminPassword });
    const host = new FunctionHost(this, "hosting", where);
    const claimChecks = new ClaimCheckContainer(this, "claim-checks", { config, storageAccountId: host.storageAccountId, blobEndpoint: host.blobEndpoint });
    const monitoring = new Monitoring(this, "observability", { ...where, config, namespaceId: bus.namespace.id, queueName: bus.queue.name });
    const queueScope = bus.queue.id;
    const identities = new ManagedIdentities(this, "identities", {
      ...where,
      grants: {
        ingest: [
          { role: "Azure Service Bus Data Sender", scope: queueScope },
          { role: "Key Vault Secrets User", scope: KeyVaultSecrets.scopeOf(secrets.partnerSecret) },
          { role: "Storage Blob Data Contributor", scope: claimChecks.scope },
        ],
        // Receiver to settle, Sender to re-schedule a message for "retry after a delay".
        processor: [
          { role: "Azure Service Bus Data Receiver", scope: queueScope },
          { role: "Azure Service Bus Data Sender", scope: queueScope },
          { role: "Key Vault Secrets User", scope: KeyVaultSecrets.scopeOf(database.urlSecret) },
          { role: "Key Vault Secrets User", scope: KeyVaultSecrets.scopeOf(secrets.partnerSecret) },
          { role: "Storage Blob Data Contributor", scope: claimChecks.scope },
        ],
        relay: [{ role: "Key Vault Secrets User", scope: KeyVaultSecrets.scopeOf(database.urlSecret) }],
      },
    });

    const busSettings = (fn: FunctionName) => ({
      // Identity-based connection: the trigger and the SDK authenticate with the managed identity.
      ServiceBusConnection__fullyQualifiedNamespace: `${bus.namespace.name}.servicebus.windows.net`,
      ServiceBusConnection__credential: "managedidentity",
      ServiceBusConnection__clientId: identities.identities[fn].clientId,
      WEBHOOKS_QUEUE_NAME: bus.queue.name,
    });
    const claimCheckSettings = { WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL: claimChecks.accountUrl, WEBHOOKS_CLAIM_CHECK_CONTAINER: CLAIM_CHECK_CONTAINER };
    const app = (id: string, fn: FunctionName, appSettings: Record<string, string>, inVnet: boolean, scaleLimit?: number) =>
      new NodeFunctionApp(this, id, {
        ...where,
        name: `${prefix}-${fn}`,
        artifactDir: artifacts[fn],
        host,
        identity: identities.identities[fn],
        insightsConnectionString: monitoring.connectionString,
        appSettings,
        vnetSubnetId: inVnet ? network.functionsSubnetId : undefined,
        scaleLimit,
      });

    const ingest = app("ingress", "ingest", { ...busSettings("ingest"), ...claimCheckSettings, PARTNERS: secrets.reference(PARTNER_SECRETS_NAME) }, false);
    app(
      "workers",
      "processor",
      {
        ...busSettings("processor"),
        ...claimCheckSettings,
        DATABASE_URL: secrets.reference(DATABASE_URL_SECRET),
        PARTNERS: secrets.reference(PARTNER_SECRETS_NAME),
        // host.json override: messages in flight per instance.
        AzureFunctionsJobHost__extensions__serviceBus__maxConcurrentCalls: String(config.processorBatchSize),
        AzureFunctionsJobHost__functionTimeout: timeSpan(config.processorTimeoutSeconds),
      },
      true,
      config.processorConcurrency,
    );
    app(
      "relay",
      "relay",
      {
        ...busSettings("relay"),
        DATABASE_URL: secrets.reference(DATABASE_URL_SECRET),
        WEBHOOKS_RELAY_SCHEDULE: `0 */${config.relayIntervalMinutes} * * * *`,
        WEBHOOKS_RELAY_BUDGET_SECONDS: String(relayBudgetSeconds(config.relayTimeoutSeconds)),
        AzureFunctionsJobHost__functionTimeout: timeSpan(config.relayTimeoutSeconds),
      },
      true,
      1,
    );

    new TerraformOutput(this, "ingest_url", { value: `https://${ingest.app.defaultHostname}/api/webhooks/{partner}` });
    new TerraformOutput(this, "queue_name", { value: bus.queue.name });
    new TerraformOutput(this, "dead_letter_queue_name", { value: `${bus.queue.name}/$DeadLetterQueue` });
    new TerraformOutput(this, "database_endpoint", { value: database.fqdn });
    new TerraformOutput(this, "key_vault_name", { value: secrets.vault.name, description: `Set ${PARTNER_SECRETS_NAME} here` });
    new TerraformOutput(this, "service_bus_namespace", { value: bus.namespace.name });
  }
}

/** 75 → "00:01:15", the TimeSpan format of host.json. */
function timeSpan(seconds: number): string {
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(Math.floor(seconds / 3600))}:${two(Math.floor((seconds % 3600) / 60))}:${two(seconds % 60)}`;
}
