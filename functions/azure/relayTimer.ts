/**
 * The Azure relay's timer handler, apart from handlers.ts (the ingest and processor handlers):
 * the relay's bundle then reaches no Service Bus module at all. esbuild turns every dynamic
 * `import()` of a module it reaches into a chunk, even where tree shaking drops the caller.
 */
import type { Timer } from "@azure/functions";
import type { DrainSummary } from "../../shared/cloud/drainOutbox.js";
import { runScheduledRelay } from "../../shared/cloud/relay.js";
import type { AzureRuntime } from "./runtime.js";
import { observeGauges } from "../telemetry.js";
import { AZURE_TELEMETRY } from "./telemetry.js";

/**
 * Timer trigger: the alert scan (alerts go to ALERT_WEBHOOK_URL when the stack sets it), then
 * deliver until `budgetSeconds` is nearly spent: listening (`listening` mode), or until idle.
 */
export async function relayTimer(runtime: AzureRuntime, _timer: Timer, budgetSeconds = runtime.settings.WEBHOOKS_RELAY_BUDGET_SECONDS, woken = false): Promise<DrainSummary> {
  const deadline = Date.now() + budgetSeconds * 1000;
  const db = await runtime.database();
  await observeGauges(AZURE_TELEMETRY, db);
  return runScheduledRelay(db, runtime.tuning, runtime.logger, () => deadline - Date.now(), { mode: runtime.settings.WEBHOOKS_RELAY_MODE, woken });
}

/**
 * The second timer (`relayOffset`, half an interval after `relay`): Azure runs each timer function
 * as a singleton and never starts a tick while the previous one runs, so one timer cannot overlap
 * its own runs. Two timers half an interval apart, each listening for most of an interval, can:
 * at any moment one of them listens. In `scheduled` mode it does nothing (one drain per interval).
 */
export async function relayOffsetTimer(runtime: AzureRuntime, timer: Timer): Promise<DrainSummary | undefined> {
  if (runtime.settings.WEBHOOKS_RELAY_MODE !== "listening") return undefined;
  return relayTimer(runtime, timer);
}

/**
 * Scheduled mode, the `relayWake` Service Bus trigger: the management app's wake-up. A woken run
 * delivers and listens until idle (WOKEN_LINGER_MS), within the same budget as a timer's run; the
 * message is completed when it returns. (The relay app's host runs one message at a time: the
 * stack sets maxConcurrentCalls 1, and the app's scale limit is 1.)
 */
export async function relayWoken(runtime: AzureRuntime): Promise<DrainSummary> {
  const deadline = Date.now() + runtime.settings.WEBHOOKS_RELAY_BUDGET_SECONDS * 1000;
  const db = await runtime.database();
  await observeGauges(AZURE_TELEMETRY, db);
  return runScheduledRelay(db, runtime.tuning, runtime.logger, () => deadline - Date.now(), { mode: runtime.settings.WEBHOOKS_RELAY_MODE, woken: true });
}
