/**
 * The management function's wake-up of the relay in `relayMode: "scheduled"` (issue 24): after a
 * write that makes deliveries due (a send, a resend, a test, a replay), it starts a relay run at
 * once instead of leaving the work for the next scheduled run. Each cloud sends the wake-up its own
 * way (functions/<cloud>/wakeRelay.ts); this is what they share:
 *
 * - **Coalesced**: a woken run listens until it has been idle for WOKEN_LINGER_MS
 *   (shared/cloud/relay.ts), so a wake-up sent while one is on its way or recent starts nothing
 *   new. One instance sends at most one per `minGapMs`; sends that arrive meanwhile share it. (Two
 *   management instances may each send one: two woken runs, both safe under leases, and the
 *   cloud's own bound on relay runs holds; see docs/functions.md.)
 * - **Never the request's failure**: the write is committed; a wake-up that cannot be sent is
 *   logged by the caller and the scheduled run delivers, as it would have without the wake-up.
 */
export interface RelayWaker {
  /** Resolves once the wake-up is sent (or a recent one stands for it); rejects when sending failed. */
  wake(): Promise<void>;
}

/** How long a sent wake-up stands for later ones: well under WOKEN_LINGER_MS, so a woken run is still listening. */
export const WAKE_GAP_MS = 2_000;

export function coalescedWaker(send: () => Promise<void>, options: { minGapMs?: number; now?: () => number } = {}): RelayWaker {
  const gap = options.minGapMs ?? WAKE_GAP_MS;
  const now = options.now ?? Date.now;
  let inFlight: Promise<void> | null = null;
  let lastSentAt = -Infinity;
  return {
    wake() {
      if (inFlight) return inFlight;
      if (now() - lastSentAt < gap) return Promise.resolve();
      // A failed send is not recorded as sent: the next write tries again.
      inFlight = send().then(() => { lastSentAt = now(); }).finally(() => { inFlight = null; });
      return inFlight;
    },
  };
}

/**
 * The management host's `wakeRelay` for a cloud: opens its waker on the first wake-up (its SDK
 * loads then, not at cold start) and keeps it. An open that failed is tried again at the next
 * wake-up rather than kept, so one unreachable moment does not silence the wake-ups for the
 * instance's life.
 */
export function wakeOnFirstUse(open: () => Promise<RelayWaker>): () => Promise<void> {
  let waker: Promise<RelayWaker> | undefined;
  return async () => {
    const opening = (waker ??= open());
    let opened: RelayWaker;
    try {
      opened = await opening;
    } catch (error) {
      if (waker === opening) waker = undefined;
      throw error;
    }
    await opened.wake();
  };
}
