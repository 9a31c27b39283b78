/**
 * A forwarding partner's destinations through the API (issue 30 item 4): one partner's events fan
 * out by content. Each destination is an outbound subscription of the platform's application,
 * so its url, secrets, filter and transformation are validated exactly as a subscription's are
 * (createSubscription: the filter language of shared/outbound/filters.ts, the transformation
 * compiled in the sandbox of shared/outbound/transformations.ts, the destination policy), and
 * its other settings, health and secret rotation are the subscription's (`/subscriptions/:id`).
 * `default` is the destination of the partner's `forward.url` in PARTNERS: shown here, changed
 * there (forward.ts keeps it in step at start).
 *
 * @example
 * await addForwardDestination(db, partners, "stripe", { name: "big-orders", url: "https://billing.internal/big", filter: { "data.data.object.amount": { $gt: 10000 } } });
 */
import * as z from "zod/mini";
import type { Database, Queryable } from "../db/port.js";
import type { DestinationPolicy } from "../outbound/destinationPolicy.js";
import { NotFoundError, OutboundValidationError } from "../outbound/errors.js";
import type { Filter } from "../outbound/filters.js";
import { createSubscription, getSubscription, subscriptionInputSchema, type Subscription } from "../outbound/subscriptions.js";
import { deleteSubscription, updateSubscription } from "../outbound/subscriptionChanges.js";
import { parseOrThrow } from "../outbound/validation.js";
import { PLATFORM_APPLICATION_ID } from "../tenancy/defaults.js";
import { DEFAULT_DESTINATION, forwardEventType } from "./forward.js";
import type { PartnerConfig } from "./verify/index.js";

/** One destination as the API shows it. `secrets` only in the answer that created it. */
export interface ForwardDestination {
  name: string;
  /** The outbound subscription that delivers to it (its deliveries, health, dead letters). */
  subscriptionId: string;
  /** `config`: the partner's forward.url in PARTNERS (the `default` destination); `api`: added here. */
  source: "config" | "api";
  url: string;
  filter: Filter | null;
  transformation: string | null;
  description: string | null;
  status: Subscription["status"];
  paused: boolean;
  secrets?: string[];
  warnings?: string[];
}

/** A partner's forwarding: whether its configuration forwards, and to which destinations. */
export interface Forwarding {
  partner: string;
  /** The partner's PARTNERS entry has `forward` (a url, or `true`): its events are forwarded to `destinations`. */
  enabled: boolean;
  destinations: ForwardDestination[];
}

/** The partner does not forward (no `forward` in its PARTNERS entry): a destination would never be sent to. */
export class ForwardingDisabledError extends Error {
  override name = "ForwardingDisabledError";
  constructor(readonly partner: string) {
    super(`Partner ${JSON.stringify(partner)} does not forward: set "forward": true (or a forward url and secrets) in its PARTNERS entry and restart, then add destinations; none would be sent to until then.`);
  }
}

/** The change conflicts with what exists: the name is taken, or `default` is changed here instead of in PARTNERS. */
export class ForwardDestinationConflictError extends Error {
  override name = "ForwardDestinationConflictError";
}

const NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const shape = subscriptionInputSchema.shape;
const nameSchema = z.string().check(
  z.regex(NAME, "must be 1-64 lowercase letters, digits, - or _, starting with a letter or digit"),
  z.refine((n: string) => n !== DEFAULT_DESTINATION, `"${DEFAULT_DESTINATION}" is the destination of the partner's forward.url in PARTNERS; choose another name`),
);

/** What `addForwardDestination` accepts. */
export const newForwardDestinationSchema = z.strictObject({
  name: nameSchema,
  // Forwarding goes to HTTP endpoints only (a subscription's url is optional since it may have a destination instead).
  url: shape.url.def.innerType,
  secrets: shape.secrets,
  description: shape.description,
  headers: shape.headers,
  filter: shape.filter,
  transformation: shape.transformation,
});

/** What `updateForwardDestination` accepts: the given fields change; `filter`/`transformation` null removes them. */
export const forwardDestinationChangeSchema = z.strictObject({
  url: shape.url,
  description: shape.description,
  headers: shape.headers,
  filter: z.optional(z.nullable(shape.filter.def.innerType)),
  transformation: z.optional(z.nullable(shape.transformation.def.innerType)),
}).check(z.refine((v) => Object.keys(v).length > 0, "send at least one field to change (url, description, headers, filter, transformation)"));

interface Row { name: string; subscription_id: string }

function view(row: Row, sub: Subscription & { warnings?: string[] }): ForwardDestination {
  return {
    name: row.name,
    subscriptionId: sub.id,
    source: row.name === DEFAULT_DESTINATION ? "config" : "api",
    url: sub.url,
    filter: sub.filter,
    transformation: sub.transformation,
    description: sub.description,
    status: sub.status,
    paused: sub.paused,
    ...(sub.secrets ? { secrets: sub.secrets } : {}),
    ...(sub.warnings ? { warnings: sub.warnings } : {}),
  };
}

function partnerOf(partners: ReadonlyMap<string, PartnerConfig>, name: string): PartnerConfig {
  const partner = partners.get(name);
  if (!partner) throw new NotFoundError("partner", name);
  return partner;
}

async function rowOf(q: Queryable, partner: string, name: string): Promise<Row> {
  const { rows } = await q.query<Row>(
    `SELECT d.name, d.subscription_id FROM inbound_forward_destinations d
     JOIN outbound_subscriptions s ON s.id = d.subscription_id AND s.deleted_at IS NULL
     WHERE d.partner = $1 AND d.name = $2`,
    [partner, name],
  );
  if (!rows[0]) throw new NotFoundError("forward destination", `${partner}/${name}`);
  return rows[0];
}

function refuseDefault(name: string): void {
  if (name === DEFAULT_DESTINATION) {
    throw new ForwardDestinationConflictError(`The "${DEFAULT_DESTINATION}" destination follows the partner's forward.url and forward.secrets in PARTNERS; change it there and restart (its subscription's other settings: PATCH /subscriptions/:id).`);
  }
}

/** The partner's forwarding and its destinations, by name. NotFoundError for a partner not in PARTNERS. */
export async function getForwarding(q: Queryable, partners: ReadonlyMap<string, PartnerConfig>, partnerName: string): Promise<Forwarding> {
  const partner = partnerOf(partners, partnerName);
  const { rows } = await q.query<Row>(
    `SELECT d.name, d.subscription_id FROM inbound_forward_destinations d
     JOIN outbound_subscriptions s ON s.id = d.subscription_id AND s.deleted_at IS NULL
     WHERE d.partner = $1 ORDER BY d.name`,
    [partner.name],
  );
  const destinations = await Promise.all(rows.map(async (r) => view(r, await getSubscription(q, r.subscription_id))));
  return { partner: partner.name, enabled: Boolean(partner.forward), destinations };
}

/** Every partner that forwards (PARTNERS `forward`), by name, each with its destinations: the admin page's list. */
export async function listForwarding(q: Queryable, partners: ReadonlyMap<string, PartnerConfig>): Promise<Forwarding[]> {
  const forwarding = [...partners.values()].filter((p) => p.forward).sort((a, b) => (a.name < b.name ? -1 : 1));
  return Promise.all(forwarding.map((p) => getForwarding(q, partners, p.name)));
}

/**
 * Adds a destination: its subscription (a secret generated when none is given, returned in this
 * answer only) and its name, in one transaction. Events stored from its commit on are forwarded to
 * it when its filter matches.
 */
export async function addForwardDestination(
  db: Database,
  partners: ReadonlyMap<string, PartnerConfig>,
  partnerName: string,
  input: unknown,
  options: { destinationPolicy?: Pick<DestinationPolicy, "checkHost"> } = {},
): Promise<ForwardDestination> {
  const partner = partnerOf(partners, partnerName);
  const valid = parseOrThrow(newForwardDestinationSchema, input, "forward destination");
  if (!partner.forward) throw new ForwardingDisabledError(partner.name);
  const { name, ...settings } = valid;
  return db.transaction(async (tx) => {
    // Locks the name: a concurrent add of the same name waits here, then finds it taken. A name
    // whose subscription was deleted (DELETE /subscriptions/:id) is free again: the insert below
    // points it at the new one.
    const { rows: taken } = await tx.query(
      `SELECT 1 FROM inbound_forward_destinations d JOIN outbound_subscriptions s ON s.id = d.subscription_id AND s.deleted_at IS NULL
       WHERE d.partner = $1 AND d.name = $2 FOR UPDATE OF d`,
      [partner.name, name],
    );
    if (taken.length > 0) throw new ForwardDestinationConflictError(`Partner ${JSON.stringify(partner.name)} already has a destination ${JSON.stringify(name)}; change it (PATCH) or choose another name.`);
    const sub = await createSubscription(tx, {
      ...settings,
      description: settings.description ?? `forwarding of partner ${partner.name} to ${name}`,
      eventTypes: [forwardEventType(partner.name)],
      applicationId: PLATFORM_APPLICATION_ID,
    }, options).catch((error: unknown) => {
      // The subscription's own messages, named as the destination's ("Invalid forward destination: filter…").
      if (error instanceof OutboundValidationError) throw new OutboundValidationError(error.message.replace(/^Invalid subscription/, "Invalid forward destination"), error.issues, { cause: error });
      throw error;
    });
    const row = { name, subscription_id: sub.id };
    await tx.query(
      "INSERT INTO inbound_forward_destinations (partner, name, subscription_id) VALUES ($1, $2, $3) ON CONFLICT (partner, name) DO UPDATE SET subscription_id = EXCLUDED.subscription_id",
      [partner.name, name, sub.id],
    );
    return view(row, sub);
  });
}

/** Changes a destination's url, description, headers, filter or transformation (the others stay). */
export async function updateForwardDestination(
  db: Database,
  partners: ReadonlyMap<string, PartnerConfig>,
  partnerName: string,
  name: string,
  input: unknown,
  options: { destinationPolicy?: Pick<DestinationPolicy, "checkHost"> } = {},
): Promise<ForwardDestination> {
  const partner = partnerOf(partners, partnerName);
  const valid = parseOrThrow(forwardDestinationChangeSchema, input, "forward destination change");
  refuseDefault(name);
  const row = await rowOf(db, partner.name, name);
  const sub = await updateSubscription(db, row.subscription_id, valid, options);
  return view(row, sub);
}

/**
 * Removes a destination: its subscription is deleted (its pending deliveries cancelled, its history
 * kept, listable by subscription id) and the name freed.
 */
export async function removeForwardDestination(db: Database, partners: ReadonlyMap<string, PartnerConfig>, partnerName: string, name: string): Promise<{ name: string; subscriptionId: string; cancelledDeliveries: number }> {
  const partner = partnerOf(partners, partnerName);
  refuseDefault(name);
  return db.transaction(async (tx) => {
    const row = await rowOf(tx, partner.name, name);
    const deleted = await deleteSubscription(tx, row.subscription_id);
    await tx.query("DELETE FROM inbound_forward_destinations WHERE partner = $1 AND name = $2", [partner.name, name]);
    return { name, subscriptionId: row.subscription_id, cancelledDeliveries: deleted.cancelledDeliveries };
  });
}
