/**
 * A Node.js 22 Lambda function from a built artifact directory: zipped by a TerraformAsset,
 * X-Ray tracing active, JSON logs into the log group Observability created, and (config
 * `telemetry`) the OTEL_* variables that start the functions' own OpenTelemetry SDK (stacks/telemetry.ts).
 */
import { Fn, type ITerraformDependable } from "cdktf";
import { Construct } from "constructs";
import { functionAsset } from "../functionAsset.js";
import { LambdaFunction } from "@cdktf/provider-aws/lib/lambda-function/index.js";
import type { StackConfig } from "../config.js";
import { telemetryEnvironment } from "../telemetry.js";

export interface NodeFunctionProps {
  functionName: string;
  artifactDir: string;
  roleArn: string;
  logGroupName: string;
  config: StackConfig;
  timeoutSeconds: number;
  /** Plain settings only: names, URLs, ARNs. Secret values are read from Secrets Manager. */
  environment: Record<string, string>;
  vpc?: { subnetIds: string[]; securityGroupIds: string[] };
  /** What must be in place before this code is deployed (the migration its code expects). */
  after?: ITerraformDependable[];
  /** Most instances at once (reserved concurrency); absent: the account's unreserved pool. */
  reservedConcurrency?: number;
}

export class NodeFunction extends Construct {
  readonly fn: LambdaFunction;

  constructor(scope: Construct, id: string, props: NodeFunctionProps) {
    super(scope, id);
    const code = functionAsset(this, "code", props.artifactDir);
    this.fn = new LambdaFunction(this, "function", {
      functionName: props.functionName,
      runtime: "nodejs22.x",
      architectures: ["arm64"],
      handler: "index.handler",
      filename: code.path,
      sourceCodeHash: Fn.filebase64sha256(code.path),
      role: props.roleArn,
      memorySize: props.config.functionMemoryMb,
      timeout: props.timeoutSeconds,
      environment: { variables: { NODE_OPTIONS: "--enable-source-maps", ...telemetryEnvironment(props.config, "aws", props.functionName, props.config.awsRegion), ...props.environment } },
      tracingConfig: { mode: "Active" },
      loggingConfig: { logFormat: "JSON", logGroup: props.logGroupName },
      vpcConfig: props.vpc,
      reservedConcurrentExecutions: props.reservedConcurrency,
      dependsOn: props.after,
    });
  }
}
