/**
 * The outbox relay: a VPC Lambda (database inside, webhook endpoints outside through the NAT
 * gateway) started by EventBridge Scheduler every `relayIntervalMinutes`. In `listening` mode each
 * run listens until 15 s before its timeout, which is over the interval, so the next run starts
 * while it still listens: at most ceil(timeout / interval) runs at once (2 with the defaults),
 * more only while the scheduler retries a tick Lambda refused. Leases make overlapping runs safe.
 * In `scheduled` mode a run drains and stops; the management function wakes one (asynchronous
 * Invoke, functions/aws/wakeRelay.ts), which listens until idle. There the relay's reserved
 * concurrency (RELAY_RUNS_SCHEDULED) bounds the runs however many wake-ups a burst of API writes
 * sends, and a wake-up (or tick) Lambda could not start within a minute is dropped, not retried
 * for hours: the next tick drains what it would have.
 */
import type { ITerraformDependable } from "cdktf";
import { Construct } from "constructs";
import { SchedulerSchedule } from "@cdktf/provider-aws/lib/scheduler-schedule/index.js";
import type { StackConfig } from "../config.js";
import type { FunctionRoles } from "./functionRoles.js";
import { NodeFunction, type NodeFunctionProps } from "./nodeFunction.js";
import { relayPoolSize } from "../config.js";
import { LambdaFunctionEventInvokeConfig } from "@cdktf/provider-aws/lib/lambda-function-event-invoke-config/index.js";

/** Scheduled mode: relay runs at once at most (the reserved concurrency): a tick's drain and one woken run. */
export const RELAY_RUNS_SCHEDULED = 2;

/** The relay's settings for its mode: the mode, and a pool with room for LISTEN's connection. */
export function relayModeEnv(config: StackConfig): Record<string, string> {
  return { WEBHOOKS_RELAY_MODE: config.relayMode, WEBHOOKS_DB_POOL_MAX: String(relayPoolSize(config)) };
}

export class RelaySchedule extends Construct {
  readonly functionName: string;
  readonly functionArn: string;

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
    const scheduled = config.relayMode === "scheduled";
    const relay = new NodeFunction(this, "relay", {
      ...props.function, config, timeoutSeconds: config.relayTimeoutSeconds,
      ...(scheduled ? { reservedConcurrency: RELAY_RUNS_SCHEDULED } : {}),
    });
    if (scheduled) {
      new LambdaFunctionEventInvokeConfig(this, "wake-ups", {
        functionName: relay.fn.functionName,
        // A run that failed is not run again by Lambda: the next tick or wake-up does the same work.
        maximumRetryAttempts: 0,
        // The least Lambda allows: a queued wake-up older than that is stale (a tick has come).
        maximumEventAgeInSeconds: 60,
      });
    }
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
    this.functionArn = relay.fn.arn;
  }
}
