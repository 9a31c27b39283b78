/**
 * Keeping the leases a relay holds alive. A delivery claimed and not yet written or released is
 * "held"; its lease is renewed once a third of it has passed (checked every sixth of a lease), so a
 * delivery waiting long for an HTTP turn behind a slow endpoint is never taken over by another
 * relay. A lease then runs out only when its relay has died, lost the database for about half a
 * lease, or held the delivery past `maxHoldMs` (a relay alive but stuck gives it up, as a dead one
 * does).
 */
import type { Logger } from "pino";
import type { Database } from "../db/port.js";
import { leaseWrite, renewHolds } from "./sql/claimDeliveries.js";
import { renewLeases } from "./sql/renewLeases.js";
import type { ClaimedDelivery } from "./types.js";
import { failuresOf } from "../telemetry/repeatedFailures.js";

export interface LeaseKeeper {
  /** Starts keeping these (just claimed) deliveries' leases. */
  hold(deliveries: readonly ClaimedDelivery[]): void;
  /** Stops keeping them: written, released or given up. A newer claim of the same delivery stays held. */
  letGo(deliveries: readonly ClaimedDelivery[]): void;
  /** Starts renewing; the returned stop waits a few seconds at most for a renewal in progress, then forgets all. */
  renewWhileHeld(): () => Promise<void>;
}

/**
 * @param options.relayId the relay's row in outbound_relay_holds: its expiry is pushed on at every
 *   check while the relay holds deliveries, so its in-flight count runs out only with its leases.
 */
export function createLeaseKeeper(options: { db: Database; leaseSeconds: number; maxHoldMs: number; logger?: Logger; relayId?: string }): LeaseKeeper {
  const { db, leaseSeconds, maxHoldMs, logger, relayId } = options;
  const holding = new Map<string, { delivery: ClaimedDelivery; claimedAt: number; leasedAt: number }>();
  const renewEveryMs = (leaseSeconds * 1000) / 3;

  const letGo = (deliveries: readonly ClaimedDelivery[]) => {
    for (const d of deliveries) {
      if (holding.get(d.id)?.delivery.leaseToken === d.leaseToken) holding.delete(d.id);
    }
  };

  /**
   * Renews the leases set more than a third of a lease ago (most deliveries are written long before:
   * this only touches those waiting on slow endpoints). Another relay's lease is never extended.
   */
  const renewHeld = async () => {
    const now = Date.now();
    const due: ClaimedDelivery[] = [];
    const overdue: ClaimedDelivery[] = [];
    for (const h of holding.values()) {
      if (now - h.leasedAt < renewEveryMs) continue;
      (now - h.claimedAt < maxHoldMs ? due : overdue).push(h.delivery);
    }
    if (overdue.length > 0) {
      // Held too long: stop renewing and forget them; their leases run out and another relay (or
      // this one, once unstuck) takes them. A late completion of ours is then rejected as stale.
      logger?.warn({ deliveries: overdue.length, maxHoldSeconds: maxHoldMs / 1000 }, "deliveries held past maxHoldSeconds: their leases are left to run out");
      letGo(overdue);
    }
    if (relayId && holding.size > 0) {
      await leaseWrite(db, (tx) => renewHolds(tx, relayId, leaseSeconds))
        .catch((error) => failuresOf(logger).record("relay:renew", "error", { err: error }, "renewing the relay's in-flight count failed; retrying at the next check"));
    }
    if (due.length === 0) return;
    try {
      const renewed = await leaseWrite(db, (tx) => renewLeases(tx, due, leaseSeconds));
      for (const id of renewed) {
        const h = holding.get(id);
        if (h) h.leasedAt = now;
      }
    } catch (error) {
      failuresOf(logger).record("relay:renew", "error", { err: error, held: due.length }, "renewing leases failed; retrying at the next check");
    }
  };

  return {
    hold(deliveries) {
      const now = Date.now();
      for (const delivery of deliveries) holding.set(delivery.id, { delivery, claimedAt: now, leasedAt: now });
    },
    letGo,
    renewWhileHeld() {
      let renewing: Promise<void> | null = null;
      const timer = setInterval(() => {
        if (!renewing) renewing = renewHeld().finally(() => { renewing = null; });
      }, renewEveryMs / 2);
      timer.unref();
      return async () => {
        clearInterval(timer);
        if (renewing) await Promise.race([renewing, new Promise((r) => setTimeout(r, 5000).unref())]);
        holding.clear();
      };
    },
  };
}
