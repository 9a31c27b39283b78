/**
 * PostgreSQL Flexible Server with private access (delegated subnet, no public endpoint), TLS
 * required by `require_secure_transport`, backups kept. Storage is always encrypted at rest by
 * the service. The connection URL is written to Key Vault; the admin password comes from the
 * sensitive Terraform variable `db_admin_password` (TF_VAR_db_admin_password).
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
const ADMIN = "webhooks_admin";

export class PostgresFlexibleServer extends Construct {
  readonly fqdn: string;
  readonly urlSecret: KeyVaultSecret;

  constructor(
    scope: Construct,
    id: string,
    props: AzureScope & { config: StackConfig; network: PrivateNetwork; secrets: KeyVaultSecrets; adminPassword: TerraformVariable },
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
      dependsOn: [props.network.dnsLink],
    });
    new PostgresqlFlexibleServerConfiguration(this, "require-tls", { serverId: server.id, name: "require_secure_transport", value: "ON" });
    new PostgresqlFlexibleServerConfiguration(this, "tls-version", { serverId: server.id, name: "ssl_min_protocol_version", value: "TLSv1.2" });
    new PostgresqlFlexibleServerConfiguration(this, "log-connections", { serverId: server.id, name: "log_connections", value: "on" });
    const database = new PostgresqlFlexibleServerDatabase(this, "database", { name: "webhooks", serverId: server.id, charset: "UTF8", collation: "en_US.utf8" });
    this.urlSecret = new KeyVaultSecret(this, "url", {
      name: DATABASE_URL_SECRET,
      keyVaultId: props.secrets.vault.id,
      contentType: "postgres-url",
      value: `postgres://${ADMIN}:${Fn.urlencode(props.adminPassword.stringValue)}@${server.fqdn}:5432/${database.name}?sslmode=require`,
      dependsOn: [props.secrets.deployerAccess],
    });
    this.fqdn = server.fqdn;
  }
}
