/**
 * Putting a leased delivery back unsent, due again later, without counting an attempt: for a
 * delivery the relay cannot sign because its subscription's secrets do not decrypt here (a key id
 * missing from ENCRYPTION_KEYS during a botched rotation, docs/secrets.md). It waits, kept
 * pending, until the key is back; it is never dead-lettered for it, and the endpoint's health is
 * not touched (the endpoint did nothing wrong).
 */
import type { Queryable } from "../../db/port.js";
import type { ClaimedDelivery } from "../types.js";

/** Seconds a delivery whose secrets cannot be decrypted waits before it is tried again. */
export const UNREADABLE_SECRET_RETRY_SECONDS = 60;

/** How `last_error` of such a delivery starts (migration 019 indexes them; /healthz reports them). */
export const UNSENT_PREFIX = "secrets unreadable: ";

/**
 * Releases the lease (still held with this token) and makes the delivery due in `seconds`; true
 * when it was. `why` goes into its `last_error` (after UNSENT_PREFIX), so the delivery itself says
 * why it waits.
 */
export async function deferUnsent(q: Queryable, delivery: Pick<ClaimedDelivery, "id" | "leaseToken">, why: string, seconds = UNREADABLE_SECRET_RETRY_SECONDS): Promise<boolean> {
  const { rowCount } = await q.query(
    `UPDATE outbound_deliveries
     SET lease_token = NULL, lease_expires_at = NULL, next_attempt_at = now() + $3::float8 * interval '1 second',
         last_error = $4, updated_at = now()
     WHERE id = $1 AND lease_token = $2::uuid AND status = 'pending'`,
    [delivery.id, delivery.leaseToken, seconds, `${UNSENT_PREFIX}${why}`],
  );
  return (rowCount ?? 0) > 0;
}
