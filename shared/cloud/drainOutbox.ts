/**
 * The scheduled relay of a cloud target: drain due outbox deliveries, and inbox entries whose
 * retry the queue could not hold (deferrals beyond the service's delay limit), until close to
 * the invocation's time budget, then stop cleanly. A pass in flight when the budget runs out
 * finishes and writes its outcomes; a pass cut short by the platform leaves leases that expire
 * by themselves, so the next run takes the deliveries again (at-least-once, never lost).
 * Once drained, the time left goes to retention (finished work past its retention is deleted),
 * which stops between batches when the budget runs low: deliveries always come first.
 */
import type { Relay } from "../outbound/relay.js";
import type { InboxProcessor } from "../inbound/processor.js";
import type { PurgeResult } from "../outbound/retention.js";

export interface DrainOptions {
  relay: Pick<Relay, "runOnce">;
  inbox?: Pick<InboxProcessor, "runOnce">;
  /** Retention pass, run once the outbox is drained; stops early when `shouldStop()` says so. */
  purge?: (shouldStop: () => boolean) => Promise<PurgeResult>;
  /** Milliseconds left in this invocation. */
  remainingMs: () => number;
  /** Stop starting passes when less than this is left: a pass must fit. Default: 15 000 ms. */
  reserveMs?: number;
}

export interface DrainSummary {
  passes: number;
  deliveriesAttempted: number;
  inboxEntriesClaimed: number;
  stoppedBecause: "idle" | "budget";
  /** What the retention pass deleted (absent when there was none: no purge given, or no time left). */
  purged?: PurgeResult;
}

export async function drainOutbox(options: DrainOptions): Promise<DrainSummary> {
  const reserve = options.reserveMs ?? 15_000;
  const summary: DrainSummary = { passes: 0, deliveriesAttempted: 0, inboxEntriesClaimed: 0, stoppedBecause: "idle" };
  for (;;) {
    if (options.remainingMs() < reserve) {
      summary.stoppedBecause = "budget";
      return summary;
    }
    const attempted = await options.relay.runOnce();
    const claimed = options.inbox ? (await options.inbox.runOnce()).claimed : 0;
    summary.passes++;
    summary.deliveriesAttempted += attempted;
    summary.inboxEntriesClaimed += claimed;
    if (attempted === 0 && claimed === 0) {
      if (options.purge && options.remainingMs() >= reserve) summary.purged = await options.purge(() => options.remainingMs() < reserve);
      return summary;
    }
  }
}
