/**
 * The GCP target: API Gateway (google-beta) → ingest Cloud Run function → Pub/Sub push →
 * processor function; Cloud Scheduler → relay function; Cloud SQL on a private IP; Secret
 * Manager; one service account per role.
 */
import { TerraformOutput, TerraformStack, TerraformVariable } from "cdktf";
import type { Construct } from "constructs";
import { DataGoogleProject } from "@cdktf/provider-google/lib/data-google-project/index.js";
import { GoogleProvider } from "@cdktf/provider-google/lib/provider/index.js";
import { GoogleBetaProvider } from "@cdktf/provider-google-beta/lib/provider/index.js";
import type { CloudStackProps } from "../aws/awsWebhooksStack.js";
import { ApiGatewayIngress } from "./apiGatewayIngress.js";
import { ClaimCheckBucket } from "./claimCheckBucket.js";
import { CloudRunFunction, type CloudRunFunctionProps } from "./cloudRunFunction.js";
import { CloudSqlDatabase } from "./cloudSqlDatabase.js";
import { FunctionSourceBucket } from "./functionSourceBucket.js";
import { Monitoring } from "./monitoring.js";
import { PrivateNetwork } from "./privateNetwork.js";
import { ProjectApis } from "./projectApis.js";
import { PubSubQueue } from "./pubSubQueue.js";
import { RelaySchedule } from "./relaySchedule.js";
import { SecretManagerSecrets } from "./secretManagerSecrets.js";
import { ServiceAccounts } from "./serviceAccounts.js";
import { relayBudgetSeconds } from "../config.js";

export class GcpWebhooksStack extends TerraformStack {
  constructor(scope: Construct, id: string, props: CloudStackProps) {
    super(scope, id);
    const { config, artifacts } = props;
    const prefix = config.namePrefix;
    const project = config.gcpProject;
    const region = config.gcpRegion;
    new GoogleProvider(this, "google", { project, region });
    const beta = new GoogleBetaProvider(this, "google-beta", { project, region });
    const projectInfo = new DataGoogleProject(this, "project", { projectId: project });
    const adminPassword = new TerraformVariable(this, "db_admin_password", {
      type: "string",
      sensitive: true,
      description: "Cloud SQL user password (TF_VAR_db_admin_password); stored in Secret Manager as the database URL",
    });

    const apis = new ProjectApis(this, "apis", { project });
    const network = new PrivateNetwork(this, "network", { prefix, region });
    const accounts = new ServiceAccounts(this, "identities", { prefix, project });
    const secrets = new SecretManagerSecrets(this, "secrets", { prefix });
    const database = new CloudSqlDatabase(this, "database", { prefix, region, config, network, secrets, adminPassword });
    const sources = new FunctionSourceBucket(this, "hosting", { prefix, project, region, buildServiceAccountEmail: accounts.emails.build });
    const topicName = `${prefix}-inbound`;
    const claimChecks = new ClaimCheckBucket(this, "claim-checks", { prefix, project, region, config });

    // Each function waits for its secrets' grants and first versions (see CloudRunFunctionProps).
    const partnerVersion = secrets.partnerSecretVersion;
    const urlVersion = database.urlSecretVersion;
    const secretDeps = {
      ingest: [secrets.allow(secrets.partnerSecret, "ingest", accounts.emails.ingest), partnerVersion],
      processor: [
        secrets.allow(database.urlSecret, "processor", accounts.emails.processor),
        secrets.allow(secrets.partnerSecret, "processor", accounts.emails.processor),
        urlVersion,
        partnerVersion,
      ],
      relay: [secrets.allow(database.urlSecret, "relay", accounts.emails.relay), urlVersion],
    };

    const fnProps = (name: "ingest" | "processor" | "relay", rest: Partial<CloudRunFunctionProps>): CloudRunFunctionProps => ({
      name: `${prefix}-${name}`,
      entryPoint: name,
      region,
      project,
      artifactDir: artifacts[name],
      sourceBucket: sources.name,
      buildServiceAccountId: accounts.ids.build,
      serviceAccountEmail: accounts.emails[name],
      memoryMb: config.functionMemoryMb,
      timeoutSeconds: 60,
      maxInstances: 10,
      environment: {},
      secrets: {},
      dependsOn: secretDeps[name],
      ...rest,
    });

    const processor = new CloudRunFunction(this, "workers", fnProps("processor", {
      timeoutSeconds: config.processorTimeoutSeconds,
      maxInstances: config.processorConcurrency,
      environment: { WEBHOOKS_TOPIC: topicName, GOOGLE_CLOUD_PROJECT: project, WEBHOOKS_CLAIM_CHECK_BUCKET: claimChecks.name },
      secrets: { DATABASE_URL: database.urlSecret, PARTNERS: secrets.partnerSecret },
      // Private ranges only: the database via the connector, Google APIs directly.
      vpc: { connectorId: network.connectorId, egress: "PRIVATE_RANGES_ONLY" },
    }));
    const queue = new PubSubQueue(this, "queue", {
      prefix,
      config,
      project: projectInfo,
      pushEndpoint: processor.uri,
      pushServiceAccountEmail: accounts.emails.push,
      pushServiceAccountId: accounts.ids.push,
    });
    processor.allowInvoker("push", accounts.emails.push);
    queue.allowPublisher("processor", accounts.emails.processor);

    new RelaySchedule(this, "relay", {
      prefix,
      region,
      config,
      schedulerEmail: accounts.emails.scheduler,
      relay: fnProps("relay", {
        timeoutSeconds: config.relayTimeoutSeconds,
        maxInstances: 1,
        environment: { WEBHOOKS_RELAY_BUDGET_SECONDS: String(relayBudgetSeconds(config.relayTimeoutSeconds)), GOOGLE_CLOUD_PROJECT: project, WEBHOOKS_TOPIC: topicName },
        secrets: { DATABASE_URL: database.urlSecret },
        // All traffic through the connector and Cloud NAT: deliveries leave from the static NAT IP.
        vpc: { connectorId: network.connectorId, egress: "ALL_TRAFFIC" },
      }),
    });

    const ingress = new ApiGatewayIngress(this, "ingress", {
      prefix,
      region,
      beta,
      gatewayEmail: accounts.emails.gateway,
      ingest: fnProps("ingest", {
        timeoutSeconds: 10,
        maxInstances: 100,
        environment: { WEBHOOKS_TOPIC: topicName, GOOGLE_CLOUD_PROJECT: project, WEBHOOKS_CLAIM_CHECK_BUCKET: claimChecks.name },
        secrets: { PARTNERS: secrets.partnerSecret },
      }),
    });
    queue.allowPublisher("ingest", accounts.emails.ingest);
    claimChecks.allow("ingest", "roles/storage.objectCreator", accounts.emails.ingest);
    claimChecks.allow("processor", "roles/storage.objectCreator", accounts.emails.processor);
    claimChecks.allow("processor", "roles/storage.objectViewer", accounts.emails.processor);

    new Monitoring(this, "observability", { prefix, project, config, deadLetterSubscription: queue.deadLetterSubscription.name });

    apis.requiredBy(this);

    new TerraformOutput(this, "ingest_url", { value: ingress.url });
    new TerraformOutput(this, "queue_name", { value: queue.topic.name, description: "Pub/Sub topic" });
    new TerraformOutput(this, "subscription_name", { value: queue.subscription.name });
    new TerraformOutput(this, "dead_letter_queue_name", { value: queue.deadLetterTopic.name });
    new TerraformOutput(this, "dead_letter_subscription_name", { value: queue.deadLetterSubscription.name });
    new TerraformOutput(this, "database_endpoint", { value: database.privateIp });
    new TerraformOutput(this, "claim_check_bucket", { value: claimChecks.name });
    new TerraformOutput(this, "database_connection_name", { value: database.connectionName });
  }
}
