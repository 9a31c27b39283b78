/**
 * Cloud Scheduler calls the relay function every few minutes with an OIDC token of the
 * scheduler service account, the only account allowed to invoke it.
 */
import { Construct } from "constructs";
import { CloudSchedulerJob } from "@cdktf/provider-google/lib/cloud-scheduler-job/index.js";
import type { StackConfig } from "../config.js";
import { relayTiming } from "./capacity.js";
import { CloudRunFunction, type CloudRunFunctionProps } from "./cloudRunFunction.js";

export class RelaySchedule extends Construct {
  readonly relay: CloudRunFunction;

  constructor(scope: Construct, id: string, props: { prefix: string; region: string; config: StackConfig; relay: CloudRunFunctionProps; schedulerEmail: string }) {
    super(scope, id);
    const relay = new CloudRunFunction(this, "relay", props.relay);
    const invoker = relay.allowInvoker("scheduler", props.schedulerEmail);
    new CloudSchedulerJob(this, "job", {
      name: `${props.prefix}-relay`,
      region: props.region,
      schedule: `*/${props.config.relayIntervalMinutes} * * * *`,
      timeZone: "Etc/UTC",
      // Scheduler's deadline lies within 15 s..30 min; the relay's timeout is at most the interval.
      attemptDeadline: `${Math.min(1800, Math.max(15, relayTiming(props.config).timeoutSeconds))}s`,
      // A missed tick is harmless: the next run drains the same outbox.
      retryConfig: { retryCount: 1 },
      httpTarget: {
        uri: relay.uri,
        httpMethod: "POST",
        oidcToken: { serviceAccountEmail: props.schedulerEmail, audience: relay.uri },
      },
      dependsOn: [invoker],
    });
    this.relay = relay;
  }
}
