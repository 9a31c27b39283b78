/**
 * At-least-once, asserted exactly (for relay tests whose receiver counts requests): every delivery
 * reached the receiver, and one reached it more than once only after an attempt the relay logged
 * as failed and so retried, for instance a timeout on a loaded machine, where the receiver got the
 * request but the relay did not see the answer in time (an event loop stalled past the deadline
 * runs the timeout before the socket's answer). A request sent but not logged is a defect, and so
 * is a stale attempt: these tests' leases (60 s) outlast them, so none can be lost, and a completion
 * rejected as stale would mean two relays held one delivery.
 */
import { expect } from "vitest";
import type { Database } from "../../../shared/db/port.js";

export async function countDelivered(db: Database): Promise<number> {
  const { rows } = await db.query<{ n: string }>("SELECT count(*) AS n FROM outbound_deliveries WHERE status = 'delivered'");
  return Number(rows[0]!.n);
}

/** `received`: the webhook-id of every request the receiver got, in any order. */
export async function expectEachSentOnceUnlessRetried(db: Database, received: readonly string[], deliveries: number): Promise<void> {
  const { rows: attempts } = await db.query<{ delivery_id: string; result: string; error_class: string | null; stale: boolean }>(
    "SELECT delivery_id, result, error_class, stale FROM outbound_attempts ORDER BY id",
  );
  const requests = new Map<string, number>();
  for (const id of received) requests.set(id, (requests.get(id) ?? 0) + 1);
  expect(requests.size).toBe(deliveries);
  for (const [id, n] of requests) {
    const own = attempts.filter((a) => a.delivery_id === id);
    const explain = `${id}: ${n} requests; attempts logged: ${JSON.stringify(own)}`;
    expect(own.filter((a) => a.stale), explain).toEqual([]);
    // One success, last; each request before it is a failed attempt logged (and so retried).
    expect(own.map((a) => a.result === "delivered"), explain).toEqual([...own.slice(1).map(() => false), true]);
    expect(n, explain).toBeLessThanOrEqual(own.length);
  }
}
