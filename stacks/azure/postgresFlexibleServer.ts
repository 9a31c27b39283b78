/**
 * PostgreSQL Flexible Server with private access (delegated subnet, no public endpoint), TLS
 * required by `require_secure_transport`, backups kept. Storage is always encrypted at rest by
 * the service. Two connection URLs go to Key Vault, without TLS parameters (the functions set
 * TLS explicitly, verify-full): the admin's (`database-admin-url`, read by the migrate function
 * alone) and the application role's (`database-url`, `webhooks_app`, read by the others). The
 * passwords come from the sensitive Terraform variables `db_admin_password` and
 * `db_app_password` (TF_VAR_…); the migrate function gives the role its password.
 */
import { Fn, type TerraformVariable } from "cdktf";
import { Construct } from "constructs";
import { KeyVaultSecret } from "@cdktf/provider-azurerm/lib/key-vault-secret/index.js";
import { PostgresqlFlexibleServer } from "@cdktf/provider-azurerm/lib/postgresql-flexible-server/index.js";
import { PostgresqlFlexibleServerConfiguration } from "@cdktf/provider-azurerm/lib/postgresql-flexible-server-configuration/index.js";
import { PostgresqlFlexibleServerDatabase } from "@cdktf/provider-azurerm/lib/postgresql-flexible-server-database/index.js";
import type { StackConfig } from "../config.js";
import type { KeyVaultSecrets } from "./keyVaultSecrets.js";
import type { AzureScope, PrivateNetwork } from "./privateNetwork.js";

export const DATABASE_URL_SECRET = "database-url";
export const DATABASE_ADMIN_URL_SECRET = "database-admin-url";
const ADMIN = "webhooks_admin";
/** The application role (shared/cloud/prepareDatabase.ts creates it). */
export const APP_ROLE = "webhooks_app";

export class PostgresFlexibleServer extends Construct {
  readonly fqdn: string;
  /** The application role's URL (ingest never reads it; processor, relay and migrate do). */
  readonly urlSecret: KeyVaultSecret;
  /** The owner's URL: the migrate function's alone. */
  readonly adminUrlSecret: KeyVaultSecret;

  constructor(
    scope: Construct,
    id: string,
    props: AzureScope & { config: StackConfig; network: PrivateNetwork; secrets: KeyVaultSecrets; adminPassword: TerraformVariable; appPassword: TerraformVariable },
  ) {
    super(scope, id);
    const { config } = props;
    const server = new PostgresqlFlexibleServer(this, "server", {
      name: `${props.prefix}-pg`,
      resourceGroupName: props.resourceGroupName,
      location: props.location,
      version: "16",
      skuName: config.azurePostgresSku,
      storageMb: config.azurePostgresStorageMb,
      delegatedSubnetId: props.network.databaseSubnetId,
      privateDnsZoneId: props.network.databaseDnsZoneId,
      publicNetworkAccessEnabled: false,
      administratorLogin: ADMIN,
      administratorPassword: props.adminPassword.stringValue,
      backupRetentionDays: config.backupRetentionDays,
      geoRedundantBackupEnabled: false,
      zone: "1",
      tags: props.tags,
      dependsOn: [props.network.dnsLink],
    });
    new PostgresqlFlexibleServerConfiguration(this, "require-tls", { serverId: server.id, name: "require_secure_transport", value: "ON" });
    new PostgresqlFlexibleServerConfiguration(this, "tls-version", { serverId: server.id, name: "ssl_min_protocol_version", value: "TLSv1.2" });
    new PostgresqlFlexibleServerConfiguration(this, "log-connections", { serverId: server.id, name: "log_connections", value: "on" });
    const database = new PostgresqlFlexibleServerDatabase(this, "database", { name: "webhooks", serverId: server.id, charset: "UTF8", collation: "en_US.utf8" });
    const url = (id: string, name: string, user: string, password: TerraformVariable) =>
      new KeyVaultSecret(this, id, {
        name,
        keyVaultId: props.secrets.vault.id,
        contentType: "postgres-url",
        value: `postgres://${user}:${Fn.urlencode(password.stringValue)}@${server.fqdn}:5432/${database.name}`,
        tags: props.tags,
        dependsOn: [props.secrets.writable],
      });
    this.urlSecret = url("url", DATABASE_URL_SECRET, APP_ROLE, props.appPassword);
    this.adminUrlSecret = url("admin-url", DATABASE_ADMIN_URL_SECRET, ADMIN, props.adminPassword);
    this.fqdn = server.fqdn;
  }
}
