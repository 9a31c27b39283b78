/**
 * Applications (tenants): each of the operator's customers. Subscriptions and events belong to
 * one, deliveries to their subscription's. `app_default` always exists and takes every call that
 * names no application, so single-tenant use needs no set-up. docs/tenancy.md.
 */
import { randomBytes } from "node:crypto";
import * as z from "zod/mini";
import type { Database, Queryable } from "../db/port.js";
import { NotFoundError } from "../outbound/errors.js";
import { parseOrThrow } from "../outbound/validation.js";
import { DEFAULT_APPLICATION_ID, PLATFORM_APPLICATION_ID } from "./defaults.js";

export { DEFAULT_APPLICATION_ID, PLATFORM_APPLICATION_ID };

export interface Application {
  id: string;
  name: string;
  createdAt: Date;
}

export interface DeletedApplication {
  id: string;
  deletedAt: Date;
  /** Its subscriptions, deleted with it. */
  deletedSubscriptions: number;
  /** Their pending deliveries, now `cancelled` (kept, with their attempts, as history). */
  cancelledDeliveries: number;
  /** Its keys, revoked with it. */
  revokedKeys: number;
}

/** The application cannot be deleted as asked; `reason` says why and what to do. */
export class ApplicationInUseError extends Error {
  override name = "ApplicationInUseError";
  constructor(readonly applicationId: string, message: string, readonly counts?: { subscriptions: number; pendingDeliveries: number }) {
    super(message);
  }
}

export const applicationInputSchema = z.strictObject({
  name: z.string().check(z.minLength(1, "give the application a name"), z.maxLength(200, "at most 200 characters")),
});

interface Row { id: string; name: string; created_at: Date }
const toApplication = (r: Row): Application => ({ id: r.id, name: r.name, createdAt: r.created_at });

/** Creates an application (id `app_<random>`). */
export async function createApplication(q: Queryable, input: unknown): Promise<Application> {
  const valid = parseOrThrow(applicationInputSchema, input, "application");
  const id = `app_${randomBytes(12).toString("base64url")}`;
  const { rows } = await q.query<Row>("INSERT INTO outbound_applications (id, name) VALUES ($1, $2) RETURNING id, name, created_at", [id, valid.name]);
  return toApplication(rows[0]!);
}

/** One live application, or NotFoundError (a deleted one is not found either). */
export async function getApplication(q: Queryable, id: string): Promise<Application> {
  const { rows } = await q.query<Row>("SELECT id, name, created_at FROM outbound_applications WHERE id = $1 AND deleted_at IS NULL", [id]);
  if (!rows[0]) throw new NotFoundError("application", id);
  return toApplication(rows[0]);
}

/** Live applications in id order; `after` is the last id of the previous page. */
export async function listApplications(q: Queryable, options: { limit?: number; after?: string } = {}): Promise<Application[]> {
  const { rows } = await q.query<Row>(
    `SELECT id, name, created_at FROM outbound_applications
     WHERE deleted_at IS NULL AND ($1::text IS NULL OR id > $1) ORDER BY id LIMIT $2`,
    [options.after ?? null, options.limit ?? 100],
  );
  return rows.map(toApplication);
}

/**
 * Deletes an application. Nothing accepted vanishes: without `cascade`, one that still has
 * subscriptions is refused (ApplicationInUseError, with the counts); with it, its subscriptions are
 * deleted as `DELETE /subscriptions/:id` does (pending deliveries `cancelled`, kept as history, an
 * attempt in flight finishes and is logged, not applied). Its events, deliveries and dead letters
 * stay readable by operators; its keys are revoked; it takes no new subscriptions or events.
 * Neither the default application nor the platform's own can be deleted.
 */
export async function deleteApplication(db: Database, id: string, options: { cascade?: boolean; revokedBy?: string } = {}): Promise<DeletedApplication> {
  if (id === DEFAULT_APPLICATION_ID) {
    throw new ApplicationInUseError(id, "The default application cannot be deleted: calls that name no application use it. Delete its subscriptions instead.");
  }
  if (id === PLATFORM_APPLICATION_ID) {
    throw new ApplicationInUseError(id, `${PLATFORM_APPLICATION_ID} holds the platform's own subscriptions (alerts, forwarding) and cannot be deleted; unset ALERT_WEBHOOK_URL or a partner's forward, or delete one of its subscriptions.`);
  }
  return db.transaction(async (tx) => {
    // Locked first: a subscription created concurrently for it waits, then sees it deleted.
    const app = await tx.query<{ deleted_at: Date | null }>("SELECT deleted_at FROM outbound_applications WHERE id = $1 FOR UPDATE", [id]);
    if (!app.rows[0] || app.rows[0].deleted_at !== null) throw new NotFoundError("application", id);
    const counts = await tx.query<{ subscriptions: string; pending: string }>(
      `SELECT count(*) AS subscriptions,
              (SELECT count(*) FROM outbound_deliveries d JOIN outbound_subscriptions s2 ON s2.id = d.subscription_id
               WHERE s2.application_id = $1 AND s2.deleted_at IS NULL AND d.status = 'pending') AS pending
       FROM outbound_subscriptions s WHERE s.application_id = $1 AND s.deleted_at IS NULL`,
      [id],
    );
    const subscriptions = Number(counts.rows[0]!.subscriptions);
    const pendingDeliveries = Number(counts.rows[0]!.pending);
    if (subscriptions > 0 && !options.cascade) {
      throw new ApplicationInUseError(id,
        `Application ${id} still has ${subscriptions} subscription(s) with ${pendingDeliveries} pending deliveries; delete them first, or pass cascade=true to delete them with it (their pending deliveries are cancelled and kept as history).`,
        { subscriptions, pendingDeliveries });
    }
    const { rows } = await tx.query<{ deleted_at: Date; cancelled: string; subs: string; keys: string }>(
      `WITH gone AS (
         UPDATE outbound_subscriptions SET deleted_at = now(), paused_at = NULL, next_probe_at = NULL, updated_at = now()
         WHERE application_id = $1 AND deleted_at IS NULL RETURNING id
       ),
       cancelled AS (
         UPDATE outbound_deliveries SET status = 'cancelled', cancelled_at = now(), updated_at = now()
         WHERE subscription_id IN (SELECT id FROM gone) AND status = 'pending' RETURNING 1
       ),
       keys AS (
         UPDATE management_api_keys SET revoked_at = now(), revoked_by = $2 WHERE application_id = $1 AND revoked_at IS NULL RETURNING 1
       ),
       app AS (UPDATE outbound_applications SET deleted_at = now() WHERE id = $1 RETURNING deleted_at)
       SELECT app.deleted_at, (SELECT count(*) FROM cancelled) AS cancelled, (SELECT count(*) FROM gone) AS subs, (SELECT count(*) FROM keys) AS keys
       FROM app`,
      [id, options.revokedBy ?? null],
    );
    const r = rows[0]!;
    return { id, deletedAt: r.deleted_at, deletedSubscriptions: Number(r.subs), cancelledDeliveries: Number(r.cancelled), revokedKeys: Number(r.keys) };
  });
}
