/**
 * AWS relay: EventBridge Scheduler → raise alerts (new dead letters, quarantined inbox entries;
 * signed to ALERT_WEBHOOK_URL when the stack sets it), drain due outbox deliveries and the inbox
 * entries the queue does not hold (deferrals), until 15 s before the Lambda timeout, then stop.
 */
import type { Context } from "aws-lambda";
import type { DrainSummary } from "../../shared/cloud/drainOutbox.js";
import { runScheduledRelay } from "../../shared/cloud/relay.js";
import { awsRuntime, type AwsRuntime } from "./runtime.js";

export async function handleRelay(runtime: AwsRuntime, remainingMs: () => number): Promise<DrainSummary> {
  const db = await runtime.database();
  return runScheduledRelay(db, await runtime.relayTuning(), runtime.logger, remainingMs);
}

export const handler = (_event: unknown, context: Context): Promise<DrainSummary> =>
  handleRelay(awsRuntime(), () => context.getRemainingTimeInMillis());
