/**
 * AWS relay: EventBridge Scheduler (or, in scheduled mode, the management function's wake-up) →
 * raise alerts (new dead letters, quarantined inbox entries; signed to ALERT_WEBHOOK_URL when the
 * stack sets it), deliver due outbox deliveries and the inbox entries the queue does not hold:
 * listening until 15 s before the Lambda timeout (`listening` mode), or until idle (`scheduled`).
 */
import type { Context } from "aws-lambda";
import type { DrainSummary } from "../../shared/cloud/drainOutbox.js";
import { runScheduledRelay } from "../../shared/cloud/relay.js";
import { awsRuntime, type AwsRuntime } from "./runtime.js";
import { observeGauges, withTelemetry } from "../telemetry.js";
import { AWS_TELEMETRY } from "./telemetry.js";

export async function handleRelay(runtime: AwsRuntime, remainingMs: () => number, event?: unknown): Promise<DrainSummary> {
  const db = await runtime.database();
  await observeGauges(AWS_TELEMETRY, db);
  return runScheduledRelay(db, await runtime.relayTuning(), runtime.logger, remainingMs, { mode: runtime.settings.WEBHOOKS_RELAY_MODE, woken: isWakeUp(event) });
}

/** The management function's wake-up (functions/aws/wakeRelay.ts) sends `{"wake": true}`; the schedule sends `{}`. */
export const isWakeUp = (event: unknown): boolean => typeof event === "object" && event !== null && (event as { wake?: unknown }).wake === true;

export const handler = withTelemetry(AWS_TELEMETRY, (event: unknown, context: Context): Promise<DrainSummary> =>
  handleRelay(awsRuntime(), () => context.getRemainingTimeInMillis(), event));
