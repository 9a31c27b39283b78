/**
 * AWS relay: EventBridge Scheduler → drain due outbox deliveries (and inbox entries the queue
 * could not hold) until 15 s before the Lambda timeout, then stop cleanly.
 */
import type { Context } from "aws-lambda";
import { drainOutbox, type DrainSummary } from "../../shared/cloud/drainOutbox.js";
import { inboxProcessorFor } from "../../shared/cloud/inboxProcessor.js";
import { relayFor } from "../../shared/cloud/relay.js";
import { awsRuntime, type AwsRuntime } from "./runtime.js";

export async function handleRelay(runtime: AwsRuntime, remainingMs: () => number): Promise<DrainSummary> {
  const db = await runtime.database();
  const { relay, purge, passReserveMs, close } = relayFor(db, runtime.tuning, runtime.logger);
  try {
    const summary = await drainOutbox({ relay, purge, reserveMs: passReserveMs, inbox: inboxProcessorFor(db, runtime.tuning, runtime.logger), remainingMs });
    runtime.logger.info(summary, "relay run finished");
    return summary;
  } finally {
    await close();
  }
}

export const handler = (_event: unknown, context: Context): Promise<DrainSummary> =>
  handleRelay(awsRuntime(), () => context.getRemainingTimeInMillis());
