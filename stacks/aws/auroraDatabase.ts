/**
 * Aurora PostgreSQL Serverless v2 in the private subnets: storage encrypted, TLS forced by the
 * cluster parameter group, master password generated and kept by RDS in Secrets Manager
 * (`manage_master_user_password`: the password never appears in Terraform, and only the migrate
 * function reads it), IAM database authentication for the application role, backups kept.
 */
import { Token } from "cdktf";
import { Construct } from "constructs";
import { DbSubnetGroup } from "@cdktf/provider-aws/lib/db-subnet-group/index.js";
import { RdsCluster } from "@cdktf/provider-aws/lib/rds-cluster/index.js";
import { RdsClusterInstance } from "@cdktf/provider-aws/lib/rds-cluster-instance/index.js";
import { RdsClusterParameterGroup } from "@cdktf/provider-aws/lib/rds-cluster-parameter-group/index.js";
import type { StackConfig } from "../config.js";

export const DATABASE_NAME = "webhooks";

export class AuroraDatabase extends Construct {
  readonly endpoint: string;
  /** The cluster's port (5432), as a reference: the functions dial what the cluster says. */
  readonly port: string;
  /** ARN of the RDS-managed secret holding `{"username","password"}`. */
  readonly credentialsSecretArn: string;
  readonly clusterResourceId: string;
  /** The writer instance: the database accepts connections once it exists. */
  readonly writer: RdsClusterInstance;

  constructor(
    scope: Construct,
    id: string,
    props: { prefix: string; config: StackConfig; subnetIds: string[]; securityGroupId: string },
  ) {
    super(scope, id);
    const { config } = props;
    const subnets = new DbSubnetGroup(this, "subnets", { name: `${props.prefix}-db`, subnetIds: props.subnetIds });
    const parameters = new RdsClusterParameterGroup(this, "parameters", {
      name: `${props.prefix}-aurora-pg16`,
      family: "aurora-postgresql16",
      description: "TLS required, connections logged",
      parameter: [
        { name: "rds.force_ssl", value: "1" },
        { name: "log_connections", value: "1" },
        { name: "log_disconnections", value: "1" },
      ],
    });
    const cluster = new RdsCluster(this, "cluster", {
      clusterIdentifier: `${props.prefix}-db`,
      engine: "aurora-postgresql",
      engineMode: "provisioned",
      engineVersion: "16.6",
      databaseName: DATABASE_NAME,
      masterUsername: "webhooks_admin",
      manageMasterUserPassword: true,
      // The functions log in as webhooks_app with IAM tokens; only migrate uses the master user.
      iamDatabaseAuthenticationEnabled: true,
      storageEncrypted: true,
      dbSubnetGroupName: subnets.name,
      vpcSecurityGroupIds: [props.securityGroupId],
      dbClusterParameterGroupName: parameters.name,
      serverlessv2ScalingConfiguration: { minCapacity: config.auroraMinCapacity, maxCapacity: config.auroraMaxCapacity },
      backupRetentionPeriod: config.backupRetentionDays,
      preferredBackupWindow: "02:00-03:00",
      copyTagsToSnapshot: true,
      deletionProtection: true,
      skipFinalSnapshot: false,
      finalSnapshotIdentifier: `${props.prefix}-db-final`,
      enabledCloudwatchLogsExports: ["postgresql"],
      // AWS applies minor upgrades itself (auto_minor_version_upgrade on the writer). The provider
      // then reads the newer version into engine_version (its compareActualEngineVersion keeps the
      // configured value only when it is a prefix of the actual one: "16" for "16.8", not "16.6"),
      // and every later plan would try to take the cluster back to 16.6, which RDS refuses. The
      // configured version is the one a cluster is created with; a major upgrade is a code change
      // anyway (the parameter group's family).
      lifecycle: { ignoreChanges: ["engine_version"] },
    });
    this.writer = new RdsClusterInstance(this, "writer", {
      identifier: `${props.prefix}-db-writer`,
      clusterIdentifier: cluster.id,
      instanceClass: "db.serverless",
      engine: cluster.engine,
      engineVersion: cluster.engineVersion,
      publiclyAccessible: false,
      performanceInsightsEnabled: true,
      autoMinorVersionUpgrade: true,
      // Follows the cluster, whose upgrades AWS applies to its instances (see the cluster above).
      lifecycle: { ignoreChanges: ["engine_version"] },
    });
    this.endpoint = cluster.endpoint;
    this.port = Token.asString(cluster.port);
    this.credentialsSecretArn = cluster.masterUserSecret.get(0).secretArn;
    this.clusterResourceId = cluster.clusterResourceId;
  }

  /** The ARN `rds-db:connect` grants for logging in as `user` with an IAM token. */
  userArn(region: string, accountId: string, user: string): string {
    return `arn:aws:rds-db:${region}:${accountId}:dbuser:${this.clusterResourceId}/${user}`;
  }
}
