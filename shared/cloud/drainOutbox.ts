/**
 * The scheduled relay of a cloud target: drain due outbox deliveries, and inbox entries whose
 * retry the queue could not hold (deferrals beyond the service's delay limit), until close to
 * the invocation's time budget, then stop cleanly. A pass in flight when the budget runs out
 * finishes and writes its outcomes; a pass cut short by the platform leaves leases that expire
 * by themselves, so the next run takes the deliveries again (at-least-once, never lost).
 * Then, when a retention run is due (about hourly across all runs), the time left goes to it,
 * drained or not, stopping between batches a few seconds before the budget ends: deliveries come
 * first, but a relay that is always busy still purges. A retention failure is reported in the
 * summary and does not fail the run: the deliveries it made are what matters.
 */
import type { Relay } from "../outbound/relay.js";
import type { InboxProcessor } from "../inbound/processor.js";
import type { RetentionResult } from "../retention/run.js";

export interface DrainOptions {
  relay: Pick<Relay, "runOnce">;
  inbox?: Pick<InboxProcessor, "runOnce">;
  /** Retention pass, if one is due (null if not); stops between batches when `shouldStop()` says so. */
  purge?: (shouldStop: () => boolean) => Promise<RetentionResult | null>;
  /** Milliseconds left in this invocation. */
  remainingMs: () => number;
  /** Stop starting passes when less than this is left: a pass must fit. Default: 15 000 ms. */
  reserveMs?: number;
  /** Stop retention batches when less than this is left. Default: 5 000 ms. */
  purgeReserveMs?: number;
  /**
   * Raises alerts for new dead letters and quarantined entries (returns how many): called before
   * each pass, so an alert raised in this run is delivered in this run too. A failure is reported
   * in the summary, never fatal: the deliveries come first.
   */
  alerts?: () => Promise<number>;
}

export interface DrainSummary {
  passes: number;
  deliveriesAttempted: number;
  inboxEntriesClaimed: number;
  stoppedBecause: "idle" | "budget";
  /** What the retention pass deleted; absent when none ran (not due, no time left). */
  purged?: RetentionResult;
  /** Why the retention pass failed, if it did (it is retried by a later run). */
  purgeError?: string;
  /** Alerts raised in this run (absent without an alert hook). */
  alertsRaised?: number;
  /** Why the last alert scan failed, if one did (the next scan, or run, tries again). */
  alertError?: string;
  /** How the run went: drained until idle, or listened until its budget (shared/cloud/listenRelay.ts). */
  mode?: "drain" | "listen";
  /** A listening run: how long it listened. */
  listenedMs?: number;
  /** A listening run: why the last inbox sweep failed, if one did (the next sweep tries again). */
  inboxError?: string;
}

export async function drainOutbox(options: DrainOptions): Promise<DrainSummary> {
  const summary = await drain(options);
  await purgeWithTimeLeft(summary, options.purge, options.remainingMs, options.purgeReserveMs);
  return summary;
}

/** The retention pass, when one is due, with the run's time left (but `purgeReserveMs`); its outcome goes into `summary`. */
export async function purgeWithTimeLeft(summary: DrainSummary, purge: DrainOptions["purge"], remainingMs: () => number, purgeReserveMs = 5_000): Promise<void> {
  if (!purge || remainingMs() < purgeReserveMs) return;
  try {
    const purged = await purge(() => remainingMs() < purgeReserveMs);
    if (purged) summary.purged = purged;
  } catch (error) {
    summary.purgeError = (error as Error)?.message ?? String(error);
  }
}

async function drain(options: DrainOptions): Promise<DrainSummary> {
  const reserve = options.reserveMs ?? 15_000;
  const summary: DrainSummary = { passes: 0, deliveriesAttempted: 0, inboxEntriesClaimed: 0, stoppedBecause: "idle" };
  for (;;) {
    if (options.remainingMs() < reserve) {
      summary.stoppedBecause = "budget";
      return summary;
    }
    const raised = options.alerts ? await scanAlerts(options.alerts, summary) : 0;
    const attempted = await options.relay.runOnce();
    const claimed = options.inbox ? (await options.inbox.runOnce()).claimed : 0;
    summary.passes++;
    summary.deliveriesAttempted += attempted;
    summary.inboxEntriesClaimed += claimed;
    if (attempted === 0 && claimed === 0 && raised === 0) return summary;
  }
}

async function scanAlerts(alerts: () => Promise<number>, summary: DrainSummary): Promise<number> {
  try {
    const raised = await alerts();
    summary.alertsRaised = (summary.alertsRaised ?? 0) + raised;
    return raised;
  } catch (error) {
    summary.alertsRaised ??= 0;
    summary.alertError = (error as Error)?.message ?? String(error);
    return 0;
  }
}
