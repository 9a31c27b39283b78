/**
 * The Azure relay's timer handler, apart from handlers.ts (the ingest and processor handlers):
 * the relay's bundle then reaches no Service Bus module at all. esbuild turns every dynamic
 * `import()` of a module it reaches into a chunk, even where tree shaking drops the caller.
 */
import type { Timer } from "@azure/functions";
import { drainOutbox, type DrainSummary } from "../../shared/cloud/drainOutbox.js";
import { inboxProcessorFor } from "../../shared/cloud/inboxProcessor.js";
import { relayFor } from "../../shared/cloud/relay.js";
import type { AzureRuntime } from "./runtime.js";

/** Timer trigger: drain until `budgetSeconds` is nearly spent. */
export async function relayTimer(runtime: AzureRuntime, _timer: Timer, budgetSeconds = runtime.settings.WEBHOOKS_RELAY_BUDGET_SECONDS): Promise<DrainSummary> {
  const deadline = Date.now() + budgetSeconds * 1000;
  const db = await runtime.database();
  const { relay, purge, passReserveMs, close } = relayFor(db, runtime.tuning, runtime.logger);
  try {
    const summary = await drainOutbox({ relay, purge, reserveMs: passReserveMs, inbox: inboxProcessorFor(db, runtime.tuning, runtime.logger), remainingMs: () => deadline - Date.now() });
    runtime.logger.info(summary, "relay run finished");
    return summary;
  } finally {
    await close();
  }
}
