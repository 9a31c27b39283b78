/**
 * The audit log: every management change (each non-GET operation that succeeded), who made it (a
 * key id, or `bootstrap` for ADMIN_TOKEN), what (operation id, resource id, application) and when.
 * Written by the route layer (shared/tenancy/access.ts) after the change, never by the change
 * itself, so no repository has to remember it. Kept: retention does not purge it.
 */
import type { Queryable } from "../db/port.js";

export interface AuditEntry {
  id: number;
  at: Date;
  /** A key id (`key_…`) or `bootstrap` (ADMIN_TOKEN). */
  actor: string;
  /** The OpenAPI operation id, e.g. `deleteSubscription`. */
  operation: string;
  method: string;
  path: string;
  /** The resource changed (a subscription, event, delivery, application or key id), when there is one. */
  resourceId: string | null;
  applicationId: string | null;
  /** The HTTP status answered. */
  status: number;
}

export type NewAuditEntry = Omit<AuditEntry, "id" | "at">;

export async function recordChange(q: Queryable, entry: NewAuditEntry): Promise<void> {
  await q.query(
    `INSERT INTO management_audit_log (actor, operation, method, path, resource_id, application_id, status)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [entry.actor, entry.operation, entry.method, entry.path.slice(0, 2000), entry.resourceId?.slice(0, 500) ?? null, entry.applicationId, entry.status],
  );
}

export interface AuditFilter {
  actor?: string;
  operation?: string;
  applicationId?: string;
  resourceId?: string;
  /** Page size. Default: 100. */
  limit?: number;
  /** The id of the last entry of the previous page (newest first). */
  before?: number;
}

/** Entries matching `filter`, newest first. */
export async function listAuditLog(q: Queryable, filter: AuditFilter = {}): Promise<AuditEntry[]> {
  const { rows } = await q.query<Omit<AuditEntry, "id"> & { id: string | number }>(
    `SELECT id, at, actor, operation, method, path, resource_id AS "resourceId", application_id AS "applicationId", status
     FROM management_audit_log
     WHERE ($1::text IS NULL OR actor = $1) AND ($2::text IS NULL OR operation = $2)
       AND ($3::text IS NULL OR application_id = $3) AND ($4::text IS NULL OR resource_id = $4)
       AND ($5::bigint IS NULL OR id < $5)
     ORDER BY id DESC LIMIT $6`,
    [filter.actor ?? null, filter.operation ?? null, filter.applicationId ?? null, filter.resourceId ?? null, filter.before ?? null, filter.limit ?? 100],
  );
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}
