/** Giving leases back (graceful shutdown): the deliveries, still due, can be claimed again at once. */
import type { Queryable } from "../../db/port.js";
import type { ClaimedDelivery } from "../types.js";

/** Releases the leases still held with these tokens; returns how many were released. */
export async function releaseDeliveries(q: Queryable, deliveries: readonly Pick<ClaimedDelivery, "id" | "leaseToken">[]): Promise<number> {
  if (deliveries.length === 0) return 0;
  const { rowCount } = await q.query(
    `UPDATE outbound_deliveries d
     SET lease_token = NULL, lease_expires_at = NULL, updated_at = now()
     FROM unnest($1::text[], $2::uuid[]) AS r(id, token)
     WHERE d.id = r.id AND d.lease_token = r.token AND d.status = 'pending'`,
    [deliveries.map((d) => d.id), deliveries.map((d) => d.leaseToken)],
  );
  return rowCount ?? 0;
}
