/**
 * Cloud SQL for PostgreSQL with a private IP only (no public address), TLS required
 * (`ssl_mode = ENCRYPTED_ONLY`), backups with point-in-time recovery, and the logging flags
 * scanners expect. Storage is encrypted at rest by Google.
 *
 * Two URLs go to Secret Manager, neither with TLS parameters (the functions are told
 * `WEBHOOKS_DATABASE_TLS=verify-ca` and the instance's server CA instead: its per-instance CA
 * names the instance, not the private IP dialled):
 * - `database-url`: the application role `webhooks_app` (TF_VAR_db_app_password), which the
 *   processor and relay use. The role is created by the migrate function (`prepareDatabase`)
 *   with only DML rights, not as a Cloud SQL user: every user Cloud SQL creates is a member of
 *   `cloudsqlsuperuser` (CREATEROLE, CREATEDB).
 * - `database-admin-url`: the owner `webhooks_admin` (TF_VAR_db_admin_password), for migrate only.
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
/** The role prepareDatabase creates (shared/cloud/prepareDatabase.ts APP_ROLE); the migrate function reads it from the URL. */
const APP = "webhooks_app";

export class CloudSqlDatabase extends Construct {
  readonly privateIp: string;
  readonly connectionName: string;
  /** The application role's URL (processor, relay, and migrate for the role's password). */
  readonly urlSecret;
  readonly urlSecretVersion: SecretManagerSecretVersion;
  /** The owner's URL (migrate only). */
  readonly adminUrlSecret;
  readonly adminUrlSecretVersion: SecretManagerSecretVersion;
  /** PEM of the instance's server CA: public, given to the functions as a plain setting. */
  readonly serverCaPem: string;

  constructor(
    scope: Construct,
    id: string,
    props: {
      prefix: string;
      region: string;
      config: StackConfig;
      network: PrivateNetwork;
      secrets: SecretManagerSecrets;
      adminPassword: TerraformVariable;
      appPassword: TerraformVariable;
      labels: Record<string, string>;
    },
  ) {
    super(scope, id);
    const { config } = props;
    const flag = (name: string, value: string) => ({ name, value });
    const instance = new SqlDatabaseInstance(this, "instance", {
      name: `${props.prefix}-pg`,
      region: props.region,
      databaseVersion: "POSTGRES_16",
      deletionProtection: config.cloudSqlDeletionProtection,
      settings: {
        tier: config.cloudSqlTier,
        userLabels: props.labels,
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
          // Set, not left to the tier's default, so the stack can check every pool fits (capacity.ts).
          flag("max_connections", String(config.cloudSqlMaxConnections)),
        ],
        insightsConfig: { queryInsightsEnabled: true },
      },
      dependsOn: [props.network.peering],
    });
    const database = new SqlDatabase(this, "database", { name: "webhooks", instance: instance.name });
    new SqlUser(this, "admin", { name: ADMIN, instance: instance.name, password: props.adminPassword.stringValue });
    const url = (user: string, password: TerraformVariable) =>
      `postgres://${user}:${Fn.urlencode(password.stringValue)}@${instance.privateIpAddress}:5432/${database.name}`;
    this.urlSecret = props.secrets.secret("database-url");
    this.urlSecretVersion = new SecretManagerSecretVersion(this, "url", { secret: this.urlSecret.id, secretData: url(APP, props.appPassword) });
    this.adminUrlSecret = props.secrets.secret("database-admin-url");
    this.adminUrlSecretVersion = new SecretManagerSecretVersion(this, "admin-url", { secret: this.adminUrlSecret.id, secretData: url(ADMIN, props.adminPassword) });
    this.serverCaPem = instance.serverCaCert.get(0).cert;
    this.privateIp = instance.privateIpAddress;
    this.connectionName = instance.connectionName;
  }
}
