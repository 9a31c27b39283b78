/**
 * Cloud SQL for PostgreSQL with a private IP only (no public address), TLS required
 * (`ssl_mode = ENCRYPTED_ONLY`), backups with point-in-time recovery, and the logging flags
 * scanners expect. Storage is encrypted at rest by Google. The connection URL, password
 * included, goes to Secret Manager; the password comes from TF_VAR_db_admin_password.
 */
import { Fn, type TerraformVariable } from "cdktf";
import { Construct } from "constructs";
import { SecretManagerSecretVersion } from "@cdktf/provider-google/lib/secret-manager-secret-version/index.js";
import { SqlDatabase } from "@cdktf/provider-google/lib/sql-database/index.js";
import { SqlDatabaseInstance } from "@cdktf/provider-google/lib/sql-database-instance/index.js";
import { SqlUser } from "@cdktf/provider-google/lib/sql-user/index.js";
import type { StackConfig } from "../config.js";
import type { PrivateNetwork } from "./privateNetwork.js";
import type { SecretManagerSecrets } from "./secretManagerSecrets.js";

const ADMIN = "webhooks_admin";

export class CloudSqlDatabase extends Construct {
  readonly privateIp: string;
  readonly connectionName: string;
  readonly urlSecret;
  readonly urlSecretVersion: SecretManagerSecretVersion;

  constructor(
    scope: Construct,
    id: string,
    props: { prefix: string; region: string; config: StackConfig; network: PrivateNetwork; secrets: SecretManagerSecrets; adminPassword: TerraformVariable },
  ) {
    super(scope, id);
    const { config } = props;
    const flag = (name: string, value: string) => ({ name, value });
    const instance = new SqlDatabaseInstance(this, "instance", {
      name: `${props.prefix}-pg`,
      region: props.region,
      databaseVersion: "POSTGRES_16",
      deletionProtection: true,
      settings: {
        tier: config.cloudSqlTier,
        edition: "ENTERPRISE",
        availabilityType: "ZONAL",
        diskAutoresize: true,
        ipConfiguration: {
          ipv4Enabled: false,
          privateNetwork: props.network.networkId,
          sslMode: "ENCRYPTED_ONLY",
          enablePrivatePathForGoogleCloudServices: true,
        },
        backupConfiguration: {
          enabled: true,
          pointInTimeRecoveryEnabled: true,
          startTime: "02:00",
          backupRetentionSettings: { retainedBackups: config.backupRetentionDays },
        },
        databaseFlags: [
          flag("log_checkpoints", "on"),
          flag("log_connections", "on"),
          flag("log_disconnections", "on"),
          flag("log_lock_waits", "on"),
          flag("log_temp_files", "0"),
          flag("log_min_duration_statement", "-1"),
          flag("cloudsql.enable_pgaudit", "on"),
        ],
        insightsConfig: { queryInsightsEnabled: true },
      },
      dependsOn: [props.network.peering],
    });
    const database = new SqlDatabase(this, "database", { name: "webhooks", instance: instance.name });
    new SqlUser(this, "admin", { name: ADMIN, instance: instance.name, password: props.adminPassword.stringValue });
    const secret = props.secrets.secret("database-url");
    this.urlSecretVersion = new SecretManagerSecretVersion(this, "url", {
      secret: secret.id,
      secretData: `postgres://${ADMIN}:${Fn.urlencode(props.adminPassword.stringValue)}@${instance.privateIpAddress}:5432/${database.name}?sslmode=require`,
    });
    this.urlSecret = secret;
    this.privateIp = instance.privateIpAddress;
    this.connectionName = instance.connectionName;
  }
}
