/** Extending the leases a live relay still holds, so they only run out when their relay is gone. */
import type { Queryable } from "../../db/port.js";
import { prepared } from "../../db/prepared.js";
import type { ClaimedDelivery } from "../types.js";

/** A HOT update like the claim: the lease columns are in no index. */
const RENEW = prepared("outbound_renew_leases", `UPDATE outbound_deliveries d
   SET lease_expires_at = now() + $3::float8 * interval '1 second'
   FROM unnest($1::text[], $2::uuid[]) AS h(id, token)
   WHERE d.id = h.id AND d.lease_token = h.token AND d.status = 'pending'
   RETURNING d.id`);

/**
 * Pushes the expiry of these leases to `leaseSeconds` from now, where the token still matches;
 * returns the ids renewed (a lease already taken over by another relay is not, and stays lost).
 */
export async function renewLeases(q: Queryable, deliveries: readonly Pick<ClaimedDelivery, "id" | "leaseToken">[], leaseSeconds: number): Promise<string[]> {
  if (deliveries.length === 0) return [];
  const { rows } = await q.query<{ id: string }>(RENEW, [deliveries.map((d) => d.id), deliveries.map((d) => d.leaseToken), leaseSeconds]);
  return rows.map((r) => r.id);
}
