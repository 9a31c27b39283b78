/**
 * The outbox relay: a VPC Lambda (database inside, webhook endpoints outside through the NAT
 * gateway) started by EventBridge Scheduler every few minutes. Each run drains due deliveries;
 * leases make overlapping runs safe.
 */
import type { ITerraformDependable } from "cdktf";
import { Construct } from "constructs";
import { SchedulerSchedule } from "@cdktf/provider-aws/lib/scheduler-schedule/index.js";
import type { StackConfig } from "../config.js";
import type { FunctionRoles } from "./functionRoles.js";
import { NodeFunction, type NodeFunctionProps } from "./nodeFunction.js";

export class RelaySchedule extends Construct {
  readonly functionName: string;

  constructor(
    scope: Construct,
    id: string,
    props: {
      prefix: string;
      config: StackConfig;
      roles: FunctionRoles;
      function: Omit<NodeFunctionProps, "config" | "timeoutSeconds">;
      /** What must be done before the first tick (the migration). */
      after: ITerraformDependable[];
    },
  ) {
    super(scope, id);
    const { config } = props;
    const relay = new NodeFunction(this, "relay", { ...props.function, config, timeoutSeconds: config.relayTimeoutSeconds });
    const schedulerRoleArn = props.roles.serviceRole("scheduler", "scheduler.amazonaws.com", [
      { Effect: "Allow", Action: ["lambda:InvokeFunction"], Resource: relay.fn.arn },
    ]);
    const minutes = config.relayIntervalMinutes;
    new SchedulerSchedule(this, "schedule", {
      name: `${props.prefix}-relay`,
      description: "Starts the outbox relay",
      scheduleExpression: `rate(${minutes} ${minutes === 1 ? "minute" : "minutes"})`,
      flexibleTimeWindow: { mode: "OFF" },
      target: {
        arn: relay.fn.arn,
        roleArn: schedulerRoleArn,
        // A missed tick is harmless (the next one drains the same outbox), so retry briefly.
        retryPolicy: { maximumRetryAttempts: 2, maximumEventAgeInSeconds: 60 * minutes },
      },
      dependsOn: props.after,
    });
    this.functionName = relay.fn.functionName;
  }
}
