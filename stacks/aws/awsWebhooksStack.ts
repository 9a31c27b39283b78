/**
 * The AWS target: one construct per component, wired together. Read top to bottom, it is the
 * architecture: network, secrets, queue, database, observability, identities, migration,
 * workers, relay, ingress, management API, outputs.
 */
import { TerraformOutput, TerraformStack, type ITerraformDependable } from "cdktf";
import type { Construct } from "constructs";
import { AwsProvider } from "@cdktf/provider-aws/lib/provider/index.js";
import { DataAwsCallerIdentity } from "@cdktf/provider-aws/lib/data-aws-caller-identity/index.js";
import type { FunctionName } from "../artifacts.js";
import type { StackConfig } from "../config.js";
import { AuroraDatabase, DATABASE_NAME } from "./auroraDatabase.js";
import { ClaimCheckBucket } from "./claimCheckBucket.js";
import { destinationsOf } from "../relayDestinations.js";
import { DatabaseMigration } from "./databaseMigration.js";
import { destinationStatements } from "./destinationGrants.js";
import { FunctionRoles, type AwsFunctionName } from "./functionRoles.js";
import { HttpIngress } from "./httpIngress.js";
import { MANAGEMENT_BASE_PATH, ManagementApi } from "./managementApi.js";
import { Observability } from "./observability.js";
import { PrivateNetwork } from "./privateNetwork.js";
import { QueueWorker } from "./queueWorker.js";
import { RelaySchedule, relayModeEnv } from "./relaySchedule.js";
import { WebhookQueue } from "./webhookQueue.js";
import { WebhookSecrets } from "./webhookSecrets.js";

/** The role the functions log in as (created by the migrate step). */
export const APP_DATABASE_USER = "webhooks_app";

/**
 * Amazon's CA bundle in the Lambda runtime. Node 20+ runtimes load it only when
 * NODE_EXTRA_CA_CERTS names it (AWS Lambda developer guide, "Building Lambda functions with
 * Node.js", CA certificate loading); Aurora's certificate chains to the RDS CAs in it.
 */
export const LAMBDA_CA_BUNDLE = "/var/runtime/ca-cert.pem";

/**
 * Largest inbound body ingest accepts: 4 MiB. The HTTP API takes 10 MB, but the ingest Lambda is
 * invoked synchronously with at most 6 MB of event, and a binary body arrives base64-encoded
 * (4 MiB → 5.33 MiB) next to its headers. Bodies above the queue's 256 KiB go by claim-check.
 */
export const MAX_INBOUND_BODY_BYTES = 4 * 1024 * 1024;

export interface CloudStackProps {
  config: StackConfig;
  artifacts: Record<FunctionName, string>;
}

export class AwsWebhooksStack extends TerraformStack {
  constructor(scope: Construct, id: string, props: CloudStackProps) {
    super(scope, id);
    const { config, artifacts } = props;
    const prefix = config.namePrefix;
    new AwsProvider(this, "aws", { region: config.awsRegion, defaultTags: [{ tags: { app: "multicloud-webhooks", stack: id } }] });
    const account = new DataAwsCallerIdentity(this, "account");

    const network = new PrivateNetwork(this, "network", { prefix });
    const secrets = new WebhookSecrets(this, "secrets", { prefix, alertWebhook: config.alertWebhookUrl !== undefined });
    const queue = new WebhookQueue(this, "queue", { prefix, config });
    const claimChecks = new ClaimCheckBucket(this, "claim-checks", { prefix, config });
    const database = new AuroraDatabase(this, "database", {
      prefix,
      config,
      subnetIds: network.privateSubnetIds,
      securityGroupId: network.databaseSecurityGroupId,
    });
    const observability = new Observability(this, "observability", { prefix, config, deadLetterQueueName: queue.deadLetterQueue.name, region: config.awsRegion });
    const logs = observability.functionLogGroups;
    const roles = new FunctionRoles(this, "identities", {
      prefix,
      queueArn: queue.queue.arn,
      deadLetterQueueArn: queue.deadLetterQueue.arn,
      partnerSecretsArn: secrets.partnerSecretsArn,
      databaseSecretArn: database.credentialsSecretArn,
      databaseUserArn: database.userArn(config.awsRegion, account.accountId, APP_DATABASE_USER),
      alertSecretArn: secrets.alertSecretArn,
      adminTokenSecretArn: secrets.adminTokenSecretArn,
      encryptionKeysSecretArn: secrets.encryptionKeysSecretArn,
      claimCheckBucketArn: claimChecks.bucket.arn,
      logGroupArns: { ingest: logs.ingest.arn, processor: logs.processor.arn, relay: logs.relay.arn, migrate: logs.migrate.arn, management: logs.management.arn },
      processorVerifies: config.awsDirectQueueIngress,
    });

    const inVpc = (securityGroupId: string) => ({ subnetIds: network.privateSubnetIds, securityGroupIds: [securityGroupId] });
    const databaseEnv = {
      WEBHOOKS_DATABASE_HOST: database.endpoint,
      WEBHOOKS_DATABASE_PORT: database.port,
      WEBHOOKS_DATABASE_NAME: DATABASE_NAME,
      WEBHOOKS_DATABASE_USER: APP_DATABASE_USER,
      WEBHOOKS_DATABASE_TLS: "verify-full",
      NODE_EXTRA_CA_CERTS: LAMBDA_CA_BUNDLE,
    };
    const fn = (name: AwsFunctionName, artifactDir: string, environment: Record<string, string>, vpc?: ReturnType<typeof inVpc>, after?: ITerraformDependable[]) => ({
      functionName: `${prefix}-${name}`,
      artifactDir,
      roleArn: roles.roleArns[name],
      logGroupName: logs[name].name,
      environment,
      vpc,
      after,
    });

    const migration = new DatabaseMigration(this, "migration", {
      config,
      function: fn("migrate", artifacts.migrate, { ...databaseEnv, WEBHOOKS_DATABASE_SECRET_ARN: database.credentialsSecretArn }, inVpc(network.workerSecurityGroupId)),
      after: [database.writer, roles.policies.migrate, ...network.egressReady],
    });
    // The subscriptions' secrets are encrypted at rest under these keys (issue 17).
    const encryptionEnv = { WEBHOOKS_ENCRYPTION_KEYS_SECRET_ARN: secrets.encryptionKeysSecretArn };
    const worker = new QueueWorker(this, "workers", {
      config,
      queueArn: queue.queue.arn,
      after: [migration.done, roles.policies.processor],
      function: fn(
        "processor",
        artifacts.processor,
        {
          ...databaseEnv,
          WEBHOOKS_QUEUE_URL: queue.queue.url,
          WEBHOOKS_DEAD_LETTER_QUEUE_URL: queue.deadLetterQueue.url,
          WEBHOOKS_CLAIM_CHECK_BUCKET: claimChecks.bucket.bucket,
          WEBHOOKS_VERIFY_IN_PROCESSOR: String(config.awsDirectQueueIngress),
          // The partners: for their forward destinations, and with direct ingress to verify.
          WEBHOOKS_PARTNER_SECRETS_ARN: secrets.partnerSecretsArn,
          // A forwarding partner's subscription (issue 16) is created with encrypted secrets.
          ...encryptionEnv,
        },
        inVpc(network.workerSecurityGroupId),
        // New code after the migration it expects (expand the schema first, then deploy the code).
        [migration.done, ...secrets.generated],
      ),
    });
    const alertEnv: Record<string, string> =
      config.alertWebhookUrl && secrets.alertSecretArn ? { ALERT_WEBHOOK_URL: config.alertWebhookUrl, WEBHOOKS_ALERT_SECRET_ARN: secrets.alertSecretArn } : {};
    // Destinations beyond HTTP (issue 31): the relay may send to exactly the queues, topics and buses listed.
    const relaySends = destinationStatements(destinationsOf(config.relayDestinations, "aws"));
    const destinationGrant = relaySends.length > 0 ? roles.grant("relay", "destinations", relaySends) : undefined;
    const relay = new RelaySchedule(this, "relay", {
      prefix,
      config,
      roles,
      after: [migration.done],
      function: fn("relay", artifacts.relay, { ...databaseEnv, ...encryptionEnv, ...alertEnv, ...relayModeEnv(config) }, inVpc(network.relaySecurityGroupId), [
        migration.done, ...secrets.generated, ...(destinationGrant ? [destinationGrant] : []),
      ]),
    });
    const ingress = new HttpIngress(this, "ingress", {
      prefix,
      config,
      roles,
      queueUrl: queue.queue.url,
      queueArn: queue.queue.arn,
      accessLogGroupArn: observability.apiAccessLogGroup.arn,
      ingest: fn("ingest", artifacts.ingest, {
        WEBHOOKS_QUEUE_URL: queue.queue.url,
        WEBHOOKS_PARTNER_SECRETS_ARN: secrets.partnerSecretsArn,
        WEBHOOKS_CLAIM_CHECK_BUCKET: claimChecks.bucket.bucket,
        MAX_INBOUND_BODY_BYTES: String(MAX_INBOUND_BODY_BYTES),
      }),
    });
    // Scheduled mode: a write that makes deliveries due wakes the relay (functions/aws/wakeRelay.ts).
    const wakeGrant = config.relayMode === "scheduled"
      ? roles.grant("management", "wake-relay", [{ Effect: "Allow", Action: ["lambda:InvokeFunction"], Resource: relay.functionArn }])
      : undefined;
    const management = new ManagementApi(this, "management", {
      config,
      ingress,
      function: fn(
        "management",
        artifacts.management,
        {
          ...databaseEnv,
          ...encryptionEnv,
          WEBHOOKS_ADMIN_TOKEN_SECRET_ARN: secrets.adminTokenSecretArn,
          WEBHOOKS_MANAGEMENT_BASE_PATH: MANAGEMENT_BASE_PATH,
          ...(wakeGrant ? { WEBHOOKS_RELAY_FUNCTION: relay.functionName } : {}),
        },
        inVpc(network.workerSecurityGroupId),
        // Served once the schema, its secrets' values and its own grants exist.
        [migration.done, ...secrets.generated, roles.policies.management, ...(wakeGrant ? [wakeGrant] : [])],
      ),
    });

    new TerraformOutput(this, "ingest_url", { value: ingress.url, description: `POST webhooks here (${ingress.mode} mode)` });
    new TerraformOutput(this, "management_url", { value: management.url, description: "The management API (webhooks --url <this> …, or WEBHOOKS_URL=<this>) and admin page (<this>/admin)" });
    new TerraformOutput(this, "admin_token_secret_arn", {
      value: secrets.adminTokenSecretArn,
      description: "The management API's admin token: aws secretsmanager get-secret-value --secret-id <this> --query SecretString --output text",
    });
    new TerraformOutput(this, "encryption_keys_secret_arn", { value: secrets.encryptionKeysSecretArn, description: "ENCRYPTION_KEYS of the subscriptions' secrets; rotate by prepending a key (docs/deploy.md)" });
    new TerraformOutput(this, "queue_name", { value: queue.queue.name });
    new TerraformOutput(this, "dead_letter_queue_name", { value: queue.deadLetterQueue.name });
    new TerraformOutput(this, "database_endpoint", { value: database.endpoint });
    new TerraformOutput(this, "database_secret_arn", { value: database.credentialsSecretArn, description: "Master credentials (RDS-managed); only the migrate function reads them" });
    new TerraformOutput(this, "partner_secrets_arn", { value: secrets.partnerSecretsArn, description: "Put the partners JSON here" });
    if (secrets.alertSecretArn) {
      new TerraformOutput(this, "alert_webhook_secret_arn", { value: secrets.alertSecretArn, description: "Put the alerts' signing secret (whsec_…) here; give it to the alert receiver" });
    }
    new TerraformOutput(this, "processor_function", { value: worker.functionName });
    new TerraformOutput(this, "relay_function", { value: relay.functionName });
    new TerraformOutput(this, "relay_role_arn", {
      value: roles.roleArns.relay,
      description: "The relay's identity: what a queue, topic or bus policy names to let it send (destinations beyond HTTP, docs/deploy-aws.md)",
    });
    new TerraformOutput(this, "management_function", { value: management.functionName });
    new TerraformOutput(this, "migrate_function", { value: migration.functionName, description: "Runs on every deploy that changes it; invoke it to rerun the migrations" });
    new TerraformOutput(this, "claim_check_bucket", { value: claimChecks.bucket.bucket });
    new TerraformOutput(this, "alerts_topic_arn", { value: observability.alertTopicArn });
    if (observability.alertEmail) {
      new TerraformOutput(this, "alert_email_confirmation", {
        value: `Confirm the subscription: AWS SNS sent ${observability.alertEmail} a link; until it is followed, dead-letter alarms reach no one.`,
      });
    }
    new TerraformOutput(this, "egress_ip", { value: network.egressIp, description: "The relay's source address (NAT gateway): receivers allow-list it" });
  }
}
