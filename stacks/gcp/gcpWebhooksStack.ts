/**
 * The GCP target: API Gateway (google-beta) → ingest Cloud Run function → Pub/Sub push →
 * processor function; the same gateway's `/api/**` → the management function; Cloud Scheduler →
 * relay function; a migrate function the deploy runs once (Cloud Scheduler job); Cloud SQL on a
 * private IP; Secret Manager; one service account per role.
 */
import { TerraformOutput, TerraformStack, TerraformVariable, type ITerraformDependable } from "cdktf";
import type { Construct } from "constructs";
import { DataGoogleProject } from "@cdktf/provider-google/lib/data-google-project/index.js";
import { GoogleProvider } from "@cdktf/provider-google/lib/provider/index.js";
import { GoogleBetaProvider } from "@cdktf/provider-google-beta/lib/provider/index.js";
import type { SecretManagerSecret } from "@cdktf/provider-google/lib/secret-manager-secret/index.js";
import type { CloudStackProps } from "../aws/awsWebhooksStack.js";
import { ApiGatewayIngress, GCP_MANAGEMENT_BASE_PATH } from "./apiGatewayIngress.js";
import {
  checkConnectionBudget,
  GCP_MAX_INBOUND_BODY_BYTES,
  MANAGEMENT_MAX_INSTANCES,
  MANAGEMENT_REQUEST_CONCURRENCY,
  poolSizes,
  pushDeliveryAttempts,
  relayTiming,
} from "./capacity.js";
import { ClaimCheckBucket } from "./claimCheckBucket.js";
import { CloudRunFunction, type CloudRunFunctionProps } from "./cloudRunFunction.js";
import { CloudSqlDatabase } from "./cloudSqlDatabase.js";
import { FunctionSourceBucket } from "./functionSourceBucket.js";
import { MigrateJob } from "./migrateJob.js";
import { destinationsOf } from "../relayDestinations.js";
import { DestinationPublishers } from "./destinationPublishers.js";
import { Monitoring } from "./monitoring.js";
import { telemetryEnvironment } from "../telemetry.js";
import { PrivateNetwork } from "./privateNetwork.js";
import { ProjectApis } from "./projectApis.js";
import { PubSubQueue } from "./pubSubQueue.js";
import { RelaySchedule } from "./relaySchedule.js";
import { RelayWakeTopic } from "./relayWakeTopic.js";
import { labelResources, stackLabels } from "./resourceLabels.js";
import { SecretManagerSecrets } from "./secretManagerSecrets.js";
import { ServiceAccounts } from "./serviceAccounts.js";

type GcpFunction = "ingest" | "processor" | "relay" | "migrate" | "management";

export class GcpWebhooksStack extends TerraformStack {
  constructor(scope: Construct, id: string, props: CloudStackProps) {
    super(scope, id);
    const { config, artifacts } = props;
    const prefix = config.namePrefix;
    const project = config.gcpProject;
    const region = config.gcpRegion;
    checkConnectionBudget(config);
    const pools = poolSizes(config);
    const labels = stackLabels(id);
    new GoogleProvider(this, "google", { project, region });
    const beta = new GoogleBetaProvider(this, "google-beta", { project, region });
    const projectInfo = new DataGoogleProject(this, "project", { projectId: project });
    const adminPassword = new TerraformVariable(this, "db_admin_password", {
      type: "string",
      sensitive: true,
      description: "Cloud SQL owner (webhooks_admin) password (TF_VAR_db_admin_password); in Secret Manager inside the admin URL, read by the migrate function only",
    });
    const appPassword = new TerraformVariable(this, "db_app_password", {
      type: "string",
      sensitive: true,
      description: "Password of the application role webhooks_app (TF_VAR_db_app_password, at least 16 characters); set by the migrate function, used by the processor and relay",
    });

    const apis = new ProjectApis(this, "apis", { project });
    const network = new PrivateNetwork(this, "network", { prefix, region });
    const accounts = new ServiceAccounts(this, "identities", { prefix, project });
    const existingGenerated = new TerraformVariable(this, "existing_generated_secrets", {
      type: "list(string)",
      default: [],
      description: "Generated secrets (admin-token, encryption-keys) that already have a version: Terraform writes no new one (npm run deploy sets it; stacks/gcp/existingSecrets.ts)",
    });
    const secrets = new SecretManagerSecrets(this, "secrets", { prefix, existingGenerated });
    const database = new CloudSqlDatabase(this, "database", { prefix, region, config, network, secrets, adminPassword, appPassword, labels });
    const sources = new FunctionSourceBucket(this, "hosting", { prefix, project, region, buildServiceAccountEmail: accounts.emails.build });
    const topicName = `${prefix}-inbound`;
    const deadLetterTopicName = `${prefix}-inbound-dlq`;
    const claimChecks = new ClaimCheckBucket(this, "claim-checks", { prefix, project, region, config });
    const alerts = config.alertWebhookUrl ? secrets.alertWebhookSecret() : undefined;

    // Each function waits for its secrets' grants and first versions (see CloudRunFunctionProps).
    const partnerVersion = secrets.partnerSecretVersion;
    const urlVersion = database.urlSecretVersion;
    const { adminToken, encryptionKeys } = secrets;
    /** Lets `fn`'s account read each secret; the function waits for the grants and the first versions. */
    const reads = (fn: GcpFunction, ...pairs: [SecretManagerSecret, ITerraformDependable][]) =>
      pairs.flatMap(([secret, version]) => [secrets.allow(secret, fn, accounts.emails[fn]), version]);
    const appUrl: [SecretManagerSecret, ITerraformDependable] = [database.urlSecret, urlVersion];
    // The keys of the subscriptions' signing secrets, encrypted at rest (issue 17).
    const keys: [SecretManagerSecret, ITerraformDependable] = [encryptionKeys.secret, encryptionKeys.version];
    const partners: [SecretManagerSecret, ITerraformDependable] = [secrets.partnerSecret, partnerVersion];
    const secretDeps = {
      ingest: reads("ingest", partners),
      processor: reads("processor", appUrl, partners, keys),
      relay: reads("relay", appUrl, keys, ...(alerts ? [[alerts.secret, alerts.version] as [SecretManagerSecret, ITerraformDependable]] : [])),
      migrate: reads("migrate", [database.adminUrlSecret, database.adminUrlSecretVersion], appUrl),
      management: reads("management", appUrl, [adminToken.secret, adminToken.version], keys),
    };
    // The Cloud SQL server certificate names the instance, not the private IP: verify the chain
    // against this instance's CA (shared/cloud/database.ts).
    const databaseTls = { WEBHOOKS_DATABASE_TLS: "verify-ca", WEBHOOKS_DATABASE_CA_CERT: database.serverCaPem };
    const privateRanges = { connectorId: network.connectorId, egress: "PRIVATE_RANGES_ONLY" as const };

    const fnProps = (name: GcpFunction, rest: Partial<CloudRunFunctionProps>): CloudRunFunctionProps => ({
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
      telemetry: telemetryEnvironment(config, "gcp", `${prefix}-${name}`, region),
      secrets: {},
      dependsOn: secretDeps[name],
      ...rest,
    });

    const processor = new CloudRunFunction(this, "workers", fnProps("processor", {
      timeoutSeconds: config.processorTimeoutSeconds,
      maxInstances: config.processorConcurrency,
      requestConcurrency: config.gcpProcessorRequestConcurrency,
      environment: {
        WEBHOOKS_TOPIC: topicName,
        WEBHOOKS_DEAD_LETTER_TOPIC: deadLetterTopicName,
        WEBHOOKS_MAX_DELIVERY_ATTEMPTS: String(pushDeliveryAttempts(config)),
        GOOGLE_CLOUD_PROJECT: project,
        WEBHOOKS_CLAIM_CHECK_BUCKET: claimChecks.name,
        WEBHOOKS_DB_POOL_MAX: String(pools.processor),
        ...databaseTls,
      },
      // PARTNERS for the partners' forward destinations (the processor enqueues each forwarded event
      // in the inbox write's transaction); it never verifies: ingest did, before publishing.
      // ENCRYPTION_KEYS: a forwarding partner's subscription secrets are written encrypted (issue 17).
      secrets: { DATABASE_URL: database.urlSecret, PARTNERS: secrets.partnerSecret, ENCRYPTION_KEYS: encryptionKeys.secret },
      // Private ranges only: the database via the connector, Google APIs directly.
      vpc: privateRanges,
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
    queue.allowDeadLetterPublisher("processor", accounts.emails.processor);

    // Destinations beyond HTTP (issue 31): the relay may publish to exactly the topics listed.
    const publishers = new DestinationPublishers(this, "destinations", { project, relayServiceAccountEmail: accounts.emails.relay, destinations: destinationsOf(config.relayDestinations, "gcp") });
    const relayTime = relayTiming(config);
    const relaySchedule = new RelaySchedule(this, "relay", {
      prefix,
      region,
      config,
      schedulerEmail: accounts.emails.scheduler,
      relay: fnProps("relay", {
        timeoutSeconds: relayTime.timeoutSeconds,
        // Listening runs overlap: as many instances as runs can be at once (capacity.ts).
        maxInstances: relayTime.maxInstances,
        environment: {
          WEBHOOKS_RELAY_BUDGET_SECONDS: String(relayTime.budgetSeconds),
          WEBHOOKS_RELAY_MODE: config.relayMode,
          GOOGLE_CLOUD_PROJECT: project,
          WEBHOOKS_DB_POOL_MAX: String(pools.relay),
          ...databaseTls,
          ...(config.alertWebhookUrl ? { ALERT_WEBHOOK_URL: config.alertWebhookUrl } : {}),
        },
        secrets: { DATABASE_URL: database.urlSecret, ENCRYPTION_KEYS: encryptionKeys.secret, ...(alerts ? { ALERT_WEBHOOK_SECRET: alerts.secret } : {}) },
        // All traffic through the connector and Cloud NAT: deliveries leave from the static NAT IP.
        vpc: { connectorId: network.connectorId, egress: "ALL_TRAFFIC" },
        dependsOn: [...secretDeps.relay, ...publishers.grants],
      }),
    });

    // Scheduled mode: a write that makes deliveries due wakes the relay through a topic (relayWakeTopic.ts).
    const wake = config.relayMode === "scheduled"
      ? new RelayWakeTopic(this, "relay-wake", { prefix, relay: relaySchedule.relay, relayTimeoutSeconds: relayTime.timeoutSeconds, pushServiceAccountEmail: accounts.emails.push })
      : undefined;
    wake?.allowPublisher("management", accounts.emails.management);

    const migrate = new MigrateJob(this, "migrate", {
      prefix,
      region,
      project,
      schedulerEmail: accounts.emails.scheduler,
      migrate: fnProps("migrate", {
        timeoutSeconds: 300,
        maxInstances: 1,
        environment: { GOOGLE_CLOUD_PROJECT: project, WEBHOOKS_DB_POOL_MAX: String(pools.migrate), ...databaseTls },
        secrets: { DATABASE_ADMIN_URL: database.adminUrlSecret, DATABASE_URL: database.urlSecret },
        vpc: privateRanges,
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
        environment: {
          WEBHOOKS_TOPIC: topicName,
          GOOGLE_CLOUD_PROJECT: project,
          WEBHOOKS_CLAIM_CHECK_BUCKET: claimChecks.name,
          MAX_INBOUND_BODY_BYTES: String(GCP_MAX_INBOUND_BODY_BYTES),
        },
        secrets: { PARTNERS: secrets.partnerSecret },
      }),
      management: new CloudRunFunction(this, "management", fnProps("management", {
        timeoutSeconds: 60,
        maxInstances: MANAGEMENT_MAX_INSTANCES,
        requestConcurrency: MANAGEMENT_REQUEST_CONCURRENCY,
        environment: {
          GOOGLE_CLOUD_PROJECT: project,
          WEBHOOKS_DB_POOL_MAX: String(pools.management),
          WEBHOOKS_MANAGEMENT_BASE_PATH: GCP_MANAGEMENT_BASE_PATH,
          ...(wake ? { WEBHOOKS_RELAY_WAKE_TOPIC: wake.topic.name } : {}),
          ...databaseTls,
        },
        secrets: { DATABASE_URL: database.urlSecret, ADMIN_TOKEN: adminToken.secret, ENCRYPTION_KEYS: encryptionKeys.secret },
        // The database through the connector; Google APIs directly.
        vpc: privateRanges,
      })),
    });
    queue.allowPublisher("ingest", accounts.emails.ingest);
    claimChecks.allow("ingest", "roles/storage.objectCreator", accounts.emails.ingest);
    claimChecks.allow("processor", "roles/storage.objectViewer", accounts.emails.processor);

    new Monitoring(this, "observability", { prefix, project, config, deadLetterSubscription: queue.deadLetterSubscription.name });

    apis.requiredBy(this);
    labelResources(this, labels);

    new TerraformOutput(this, "ingest_url", { value: ingress.url });
    new TerraformOutput(this, "management_url", { value: ingress.managementUrl, description: "The management API (webhooks --url <this> …, or WEBHOOKS_URL=<this>) and admin page (<this>/admin)" });
    new TerraformOutput(this, "admin_token_command", {
      value: `gcloud secrets versions access latest --secret=${adminToken.secret.secretId} --project=${project}`,
      description: "Prints the management API's admin token",
    });
    new TerraformOutput(this, "queue_name", { value: queue.topic.name, description: "Pub/Sub topic" });
    new TerraformOutput(this, "subscription_name", { value: queue.subscription.name });
    new TerraformOutput(this, "dead_letter_queue_name", { value: queue.deadLetterTopic.name });
    new TerraformOutput(this, "dead_letter_subscription_name", { value: queue.deadLetterSubscription.name });
    new TerraformOutput(this, "database_endpoint", { value: database.privateIp });
    new TerraformOutput(this, "claim_check_bucket", { value: claimChecks.name });
    new TerraformOutput(this, "database_connection_name", { value: database.connectionName });
    new TerraformOutput(this, "relay_service_account", { value: accounts.emails.relay, description: "The relay's identity: the member to grant roles/pubsub.publisher on a destination topic (docs/deploy-gcp.md)" });
    new TerraformOutput(this, "egress_ip", { value: network.egressIp, description: "Cloud NAT static address the relay's deliveries leave from: receivers allow-list it" });
    new TerraformOutput(this, "migrate_command", { value: migrate.command, description: "Run after every deploy: applies migrations and sets the webhooks_app role (docs/deploy-gcp.md)" });
  }
}
