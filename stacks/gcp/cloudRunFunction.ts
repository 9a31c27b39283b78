/**
 * A Cloud Run function (gen2) on Node.js 22 built from a source zip: the TerraformAsset is
 * uploaded to the source bucket under a content-hashed name, so new code means a new object
 * and a redeploy. No container build of ours is needed; Cloud Build runs the buildpack.
 */
import type { ITerraformDependable } from "cdktf";
import { Construct } from "constructs";
import { functionAsset } from "../functionAsset.js";
import { CLOUD_RUN_CONCURRENCY_MIN_CPU, CLOUD_RUN_FUNCTION_CPU } from "../serviceFacts.js";
import { Cloudfunctions2Function } from "@cdktf/provider-google/lib/cloudfunctions2-function/index.js";
import { CloudRunV2ServiceIamMember } from "@cdktf/provider-google/lib/cloud-run-v2-service-iam-member/index.js";
import { StorageBucketObject } from "@cdktf/provider-google/lib/storage-bucket-object/index.js";
import type { SecretManagerSecret } from "@cdktf/provider-google/lib/secret-manager-secret/index.js";

export interface CloudRunFunctionProps {
  name: string;
  /** The Functions Framework target the code registers (`http("processor", …)`). */
  entryPoint: string;
  region: string;
  project: string;
  artifactDir: string;
  sourceBucket: string;
  buildServiceAccountId: string;
  serviceAccountEmail: string;
  memoryMb: number;
  timeoutSeconds: number;
  maxInstances: number;
  /** Requests one instance serves at once. Default: 1. */
  requestConcurrency?: number;
  /** Plain settings only. */
  environment: Record<string, string>;
  /** The OTEL_* settings of the function's own OpenTelemetry SDK (stacks/telemetry.ts); none: off. */
  telemetry?: Record<string, string>;
  /** Environment variable → secret, resolved by the platform from Secret Manager. */
  secrets: Record<string, SecretManagerSecret>;
  vpc?: { connectorId: string; egress: "PRIVATE_RANGES_ONLY" | "ALL_TRAFFIC" };
  /** Secret grants and versions: Cloud Run checks access to "latest" when it deploys. */
  dependsOn?: ITerraformDependable[];
}

/**
 * The vCPU to ask for, or undefined to take what the memory size comes with: a function serving
 * requests concurrently needs at least CLOUD_RUN_CONCURRENCY_MIN_CPU, which 512 MiB (0.333 vCPU)
 * does not come with. Written out as a string, as the API takes it ("1").
 */
export function cpuFor(memoryMb: number, requestConcurrency: number): string | undefined {
  if (requestConcurrency <= 1) return undefined;
  const included = CLOUD_RUN_FUNCTION_CPU.value[`${memoryMb}Mi`] ?? 0;
  return included >= CLOUD_RUN_CONCURRENCY_MIN_CPU.value ? undefined : String(CLOUD_RUN_CONCURRENCY_MIN_CPU.value);
}

export class CloudRunFunction extends Construct {
  readonly fn: Cloudfunctions2Function;
  readonly uri: string;

  constructor(scope: Construct, id: string, private readonly props: CloudRunFunctionProps) {
    super(scope, id);
    const code = functionAsset(this, "code", props.artifactDir);
    const object = new StorageBucketObject(this, "source", {
      bucket: props.sourceBucket,
      name: `${props.name}-${code.assetHash}.zip`,
      source: code.path,
    });
    this.fn = new Cloudfunctions2Function(this, "function", {
      name: props.name,
      location: props.region,
      buildConfig: {
        runtime: "nodejs22",
        entryPoint: props.entryPoint,
        serviceAccount: props.buildServiceAccountId,
        source: { storageSource: { bucket: props.sourceBucket, object: object.name } },
      },
      serviceConfig: {
        serviceAccountEmail: props.serviceAccountEmail,
        availableMemory: `${props.memoryMb}Mi`,
        availableCpu: cpuFor(props.memoryMb, props.requestConcurrency ?? 1),
        timeoutSeconds: props.timeoutSeconds,
        maxInstanceCount: props.maxInstances,
        maxInstanceRequestConcurrency: props.requestConcurrency ?? 1,
        // Reachable from outside Google (API Gateway, Pub/Sub push, Scheduler), but every call
        // must carry an identity token allowed by run.invoker: no allUsers binding exists.
        ingressSettings: "ALLOW_ALL",
        allTrafficOnLatestRevision: true,
        environmentVariables: { NODE_OPTIONS: "--enable-source-maps", ...props.telemetry, ...props.environment },
        secretEnvironmentVariables: Object.entries(props.secrets).map(([key, secret]) => ({
          key,
          projectId: props.project,
          secret: secret.secretId,
          version: "latest",
        })),
        vpcConnector: props.vpc?.connectorId,
        vpcConnectorEgressSettings: props.vpc?.egress,
      },
      dependsOn: props.dependsOn,
    });
    this.uri = this.fn.serviceConfig.uri;
  }

  /** Grants `roles/run.invoker` on this function's service to one service account. */
  allowInvoker(who: string, serviceAccountEmail: string): CloudRunV2ServiceIamMember {
    return new CloudRunV2ServiceIamMember(this, `invoker-${who}`, {
      project: this.props.project,
      location: this.props.region,
      name: this.fn.name,
      role: "roles/run.invoker",
      member: `serviceAccount:${serviceAccountEmail}`,
    });
  }
}
