/**
 * The Azure relay's two timers. Azure runs a timer function as a singleton and does not start a
 * tick while the previous one still runs, so one timer cannot overlap its own runs. In `listening`
 * mode the relay app has two timers, `relay` and `relayOffset`, half an interval apart; each run
 * listens for the interval less 5 s (then its 15 s reserve), so at any moment one of the two
 * listens, and at most two run at once (one per timer). In `scheduled` mode `relayOffset` does
 * nothing and `relay` drains once per interval, as before.
 */
import { relayBudgetSeconds, relayPoolSize, type StackConfig } from "../config.js";

/** Every N minutes at second 0, and the same shifted by N × 30 seconds (NCRONTAB, six fields). */
export function relaySchedules(intervalMinutes: number): { relay: string; offset: string } {
  const offsetSeconds = intervalMinutes * 30;
  const second = offsetSeconds % 60;
  const firstMinute = Math.floor(offsetSeconds / 60);
  return { relay: `0 */${intervalMinutes} * * * *`, offset: `${second} ${firstMinute}-59/${intervalMinutes} * * * *` };
}

/** What the relay app's settings say about its runs. */
export function azureRelaySettings(config: StackConfig): Record<string, string> {
  const schedules = relaySchedules(config.relayIntervalMinutes);
  const budget = relayBudgetSeconds(config.relayTimeoutSeconds);
  return {
    WEBHOOKS_RELAY_SCHEDULE: schedules.relay,
    WEBHOOKS_RELAY_OFFSET_SCHEDULE: schedules.offset,
    WEBHOOKS_RELAY_MODE: config.relayMode,
    // A listening run ends before its own timer's next tick (which Azure would hold back otherwise).
    WEBHOOKS_RELAY_BUDGET_SECONDS: String(config.relayMode === "listening" ? Math.min(budget, config.relayIntervalMinutes * 60 - 5) : budget),
    WEBHOOKS_DB_POOL_MAX: String(relayPoolSize(config)),
  };
}
