/**
 * The Azure relay's timer handler, apart from handlers.ts (the ingest and processor handlers):
 * the relay's bundle then reaches no Service Bus module at all. esbuild turns every dynamic
 * `import()` of a module it reaches into a chunk, even where tree shaking drops the caller.
 */
import type { Timer } from "@azure/functions";
import type { DrainSummary } from "../../shared/cloud/drainOutbox.js";
import { runScheduledRelay } from "../../shared/cloud/relay.js";
import type { AzureRuntime } from "./runtime.js";

/**
 * Timer trigger: the alert scan (alerts go to ALERT_WEBHOOK_URL when the stack sets it), then
 * drain until `budgetSeconds` is nearly spent.
 */
export async function relayTimer(runtime: AzureRuntime, _timer: Timer, budgetSeconds = runtime.settings.WEBHOOKS_RELAY_BUDGET_SECONDS): Promise<DrainSummary> {
  const deadline = Date.now() + budgetSeconds * 1000;
  return runScheduledRelay(await runtime.database(), runtime.tuning, runtime.logger, () => deadline - Date.now());
}
