/** Extending the leases a live relay still holds, so they only run out when their relay is gone. */
import type { Queryable } from "../../db/port.js";
import { prepared } from "../../db/prepared.js";
import type { ClaimedDelivery } from "../types.js";

/**
 * A HOT update like the claim (the lease columns are in no index). The rows are picked with SKIP
 * LOCKED: a row locked right now is being completed or released (the only other writers of a held
 * delivery), so there is nothing to renew, and waiting for it could deadlock with a completion
 * batch locking the same rows in another order. If that write rolls back, the next check renews it.
 */
const RENEW = prepared("outbound_renew_leases", `UPDATE outbound_deliveries d
   SET lease_expires_at = now() + $3::float8 * interval '1 second'
   WHERE d.id = ANY (ARRAY(
     SELECT h.id
     FROM unnest($1::text[], $2::uuid[]) AS h(id, token)
     JOIN outbound_deliveries x ON x.id = h.id AND x.lease_token = h.token AND x.status = 'pending'
     FOR UPDATE OF x SKIP LOCKED
   ))
   RETURNING d.id`);

/**
 * Pushes the expiry of these leases to `leaseSeconds` from now, where the token still matches and
 * nobody else is writing the row; returns the ids renewed (a lease already taken over by another
 * relay is not, and stays lost).
 */
export async function renewLeases(q: Queryable, deliveries: readonly Pick<ClaimedDelivery, "id" | "leaseToken">[], leaseSeconds: number): Promise<string[]> {
  if (deliveries.length === 0) return [];
  const { rows } = await q.query<{ id: string }>(RENEW, [deliveries.map((d) => d.id), deliveries.map((d) => d.leaseToken), leaseSeconds]);
  return rows.map((r) => r.id);
}
