/**
 * The AWS target: one construct per component, wired together. Read top to bottom, it is the
 * architecture: network, secrets, queue, database, observability, identities, workers, relay,
 * ingress, outputs.
 */
import { TerraformOutput, TerraformStack } from "cdktf";
import type { Construct } from "constructs";
import { AwsProvider } from "@cdktf/provider-aws/lib/provider/index.js";
import type { FunctionName } from "../artifacts.js";
import type { StackConfig } from "../config.js";
import { AuroraDatabase, DATABASE_NAME } from "./auroraDatabase.js";
import { ClaimCheckBucket } from "./claimCheckBucket.js";
import { FunctionRoles } from "./functionRoles.js";
import { HttpIngress } from "./httpIngress.js";
import { Observability } from "./observability.js";
import { PrivateNetwork } from "./privateNetwork.js";
import { QueueWorker } from "./queueWorker.js";
import { RelaySchedule } from "./relaySchedule.js";
import { WebhookQueue } from "./webhookQueue.js";
import { WebhookSecrets } from "./webhookSecrets.js";

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

    const network = new PrivateNetwork(this, "network", { prefix });
    const secrets = new WebhookSecrets(this, "secrets", { prefix });
    const queue = new WebhookQueue(this, "queue", { prefix, config });
    const claimChecks = new ClaimCheckBucket(this, "claim-checks", { prefix, config });
    const database = new AuroraDatabase(this, "database", {
      prefix,
      config,
      subnetIds: network.privateSubnetIds,
      securityGroupId: network.databaseSecurityGroupId,
    });
    const observability = new Observability(this, "observability", { prefix, config, deadLetterQueueName: queue.deadLetterQueue.name });
    const logs = observability.functionLogGroups;
    const roles = new FunctionRoles(this, "identities", {
      prefix,
      queueArn: queue.queue.arn,
      deadLetterQueueArn: queue.deadLetterQueue.arn,
      partnerSecretsArn: secrets.partnerSecretsArn,
      databaseSecretArn: database.credentialsSecretArn,
      claimCheckBucketArn: claimChecks.bucket.arn,
      logGroupArns: { ingest: logs.ingest.arn, processor: logs.processor.arn, relay: logs.relay.arn },
    });

    const vpc = { subnetIds: network.privateSubnetIds, securityGroupIds: [network.functionSecurityGroupId] };
    const databaseEnv = {
      WEBHOOKS_DATABASE_HOST: database.endpoint,
      WEBHOOKS_DATABASE_PORT: String(database.port),
      WEBHOOKS_DATABASE_NAME: DATABASE_NAME,
      WEBHOOKS_DATABASE_SECRET_ARN: database.credentialsSecretArn,
    };
    const fn = (name: FunctionName, environment: Record<string, string>, inVpc: boolean) => ({
      functionName: `${prefix}-${name}`,
      artifactDir: artifacts[name],
      roleArn: roles.roleArns[name],
      logGroupName: logs[name].name,
      environment,
      vpc: inVpc ? vpc : undefined,
    });

    const worker = new QueueWorker(this, "workers", {
      config,
      queueArn: queue.queue.arn,
      function: fn(
        "processor",
        {
          ...databaseEnv,
          WEBHOOKS_QUEUE_URL: queue.queue.url,
          WEBHOOKS_DEAD_LETTER_QUEUE_URL: queue.deadLetterQueue.url,
          WEBHOOKS_PARTNER_SECRETS_ARN: secrets.partnerSecretsArn,
          WEBHOOKS_CLAIM_CHECK_BUCKET: claimChecks.bucket.bucket,
          WEBHOOKS_VERIFY_IN_PROCESSOR: String(config.awsDirectQueueIngress),
        },
        true,
      ),
    });
    const relay = new RelaySchedule(this, "relay", { prefix, config, roles, function: fn("relay", databaseEnv, true) });
    const ingress = new HttpIngress(this, "ingress", {
      prefix,
      config,
      roles,
      queueUrl: queue.queue.url,
      queueArn: queue.queue.arn,
      accessLogGroupArn: observability.apiAccessLogGroup.arn,
      ingest: fn(
        "ingest",
        { WEBHOOKS_QUEUE_URL: queue.queue.url, WEBHOOKS_PARTNER_SECRETS_ARN: secrets.partnerSecretsArn, WEBHOOKS_CLAIM_CHECK_BUCKET: claimChecks.bucket.bucket },
        false,
      ),
    });

    new TerraformOutput(this, "ingest_url", { value: ingress.url, description: `POST webhooks here (${ingress.mode} mode)` });
    new TerraformOutput(this, "queue_name", { value: queue.queue.name });
    new TerraformOutput(this, "dead_letter_queue_name", { value: queue.deadLetterQueue.name });
    new TerraformOutput(this, "database_endpoint", { value: database.endpoint });
    new TerraformOutput(this, "database_secret_arn", { value: database.credentialsSecretArn });
    new TerraformOutput(this, "partner_secrets_arn", { value: secrets.partnerSecretsArn, description: "Put the partners JSON here" });
    new TerraformOutput(this, "processor_function", { value: worker.functionName });
    new TerraformOutput(this, "relay_function", { value: relay.functionName });
    new TerraformOutput(this, "claim_check_bucket", { value: claimChecks.bucket.bucket });
    new TerraformOutput(this, "alerts_topic_arn", { value: observability.alertTopicArn });
  }
}
