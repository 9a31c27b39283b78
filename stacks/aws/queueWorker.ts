/**
 * The processor: a VPC Lambda fed by the SQS event source mapping. It reports partial batch
 * failures (only the failed messages return to the queue) and its concurrency is capped by the
 * mapping, so a burst of webhooks cannot exhaust the database's connections.
 */
import type { ITerraformDependable } from "cdktf";
import { Construct } from "constructs";
import { LambdaEventSourceMapping } from "@cdktf/provider-aws/lib/lambda-event-source-mapping/index.js";
import type { StackConfig } from "../config.js";
import { NodeFunction, type NodeFunctionProps } from "./nodeFunction.js";

export class QueueWorker extends Construct {
  readonly functionName: string;

  constructor(
    scope: Construct,
    id: string,
    props: {
      config: StackConfig;
      queueArn: string;
      function: Omit<NodeFunctionProps, "config" | "timeoutSeconds">;
      /** What must be done before messages flow (the migration, the role's policy). */
      after: ITerraformDependable[];
    },
  ) {
    super(scope, id);
    const { config } = props;
    const processor = new NodeFunction(this, "processor", { ...props.function, config, timeoutSeconds: config.processorTimeoutSeconds });
    new LambdaEventSourceMapping(this, "queue-trigger", {
      eventSourceArn: props.queueArn,
      functionName: processor.fn.arn,
      batchSize: config.processorBatchSize,
      maximumBatchingWindowInSeconds: 1,
      functionResponseTypes: ["ReportBatchItemFailures"],
      scalingConfig: { maximumConcurrency: config.processorConcurrency },
      dependsOn: props.after,
    });
    this.functionName = processor.fn.functionName;
  }
}
