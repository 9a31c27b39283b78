/**
 * A listening relay run (relay mode `listening`, and a run the management function woke): the
 * local relay's loop (LISTEN/NOTIFY, the poll backstop, leases renewed while held) and the inbox
 * sweep, kept running until close to the invocation's budget, so an event committed meanwhile
 * goes out within about a second and a retry, a Retry-After, a breaker probe, an ordered key's
 * next delivery or a rate-limit slot within the poll interval of its due time, as locally.
 *
 * Why this is safe across runs: the stacks schedule runs so that the next starts before the
 * previous stops listening (docs/functions.md, "The listening relay"); while both listen, each
 * claims with leases (FOR UPDATE SKIP LOCKED), so a delivery is claimed by one of them, never
 * both. A run stops claiming `reserveMs` before its budget ends, then lets what it holds finish
 * and writes it, and gives back what it claimed but had not started: a handover loses nothing
 * and sends nothing twice. A run the platform cuts off leaves only leases, which expire
 * (OUTBOUND_LEASE_SECONDS, INBOX_LEASE_SECONDS), and the next run takes those deliveries again.
 */
import type { InboxProcessor } from "../inbound/processor.js";
import type { Relay } from "../outbound/relay.js";
import type { DrainSummary } from "./drainOutbox.js";

export interface ListenOptions {
  relay: Pick<Relay, "start" | "stop">;
  /** The inbox sweep: due retries and deferrals of inbox entries, every `inboxPollMs`. */
  inbox?: Pick<InboxProcessor, "runOnce">;
  inboxPollMs?: number;
  /** A claimed inbox batch this full means more is waiting: the sweep goes again at once. */
  inboxBatchSize?: number;
  /** Milliseconds left in this invocation. */
  remainingMs: () => number;
  /** Stop claiming when less than this is left: what is held must finish and be written. */
  reserveMs: number;
  /** The alert scan, every `alertEveryMs` (default 5 000). */
  alerts?: () => Promise<number>;
  alertEveryMs?: number;
  /**
   * A woken run: stop once nothing was completed for this long (and no earlier than this after
   * the start). Absent: listen until the budget.
   */
  idleStopMs?: number;
  /** When the relay last completed a delivery (ms since the epoch); read for `idleStopMs`. */
  lastActivity?: () => number;
  /** How many deliveries the relay has completed so far (for the summary). */
  attempted?: () => number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));

export async function listenUntilBudget(options: ListenOptions): Promise<DrainSummary> {
  const started = Date.now();
  const summary: DrainSummary = { passes: 0, deliveriesAttempted: 0, inboxEntriesClaimed: 0, stoppedBecause: "budget" };
  const pollMs = options.inboxPollMs ?? 1000;
  const alertEveryMs = options.alertEveryMs ?? 5000;
  const shouldStop = () => {
    if (options.remainingMs() < options.reserveMs) return "budget" as const;
    if (options.idleStopMs !== undefined) {
      const last = Math.max(started, options.lastActivity?.() ?? started);
      if (Date.now() - last >= options.idleStopMs) return "idle" as const;
    }
    return undefined;
  };

  // Alerts first, as the drain does: one raised now is delivered by this run.
  if (options.alerts) await scan(options.alerts, summary);
  await options.relay.start();
  let nextAlert = Date.now() + alertEveryMs;
  let stopReason: "idle" | "budget" | undefined;
  try {
    while (!(stopReason = shouldStop())) {
      summary.passes++;
      let full = false;
      if (options.inbox) {
        try {
          const claimed = (await options.inbox.runOnce()).claimed;
          summary.inboxEntriesClaimed += claimed;
          full = claimed > 0 && claimed >= (options.inboxBatchSize ?? Infinity);
        } catch (error) {
          summary.inboxError = (error as Error)?.message ?? String(error);
        }
      }
      if (options.alerts && Date.now() >= nextAlert) {
        await scan(options.alerts, summary);
        nextAlert = Date.now() + alertEveryMs;
      }
      if (full) continue;
      // Wake up for the next sweep, or as soon as the budget or the idle limit says stop.
      const untilBudget = options.remainingMs() - options.reserveMs;
      await sleep(Math.min(pollMs, untilBudget + 1));
    }
  } finally {
    // Stops claiming, finishes and writes what it holds, gives back what it had not started.
    await options.relay.stop();
  }
  summary.stoppedBecause = stopReason;
  summary.deliveriesAttempted = options.attempted?.() ?? 0;
  summary.listenedMs = Date.now() - started;
  return summary;
}

async function scan(alerts: () => Promise<number>, summary: DrainSummary): Promise<void> {
  try {
    summary.alertsRaised = (summary.alertsRaised ?? 0) + (await alerts());
  } catch (error) {
    summary.alertsRaised ??= 0;
    summary.alertError = (error as Error)?.message ?? String(error);
  }
}
