/**
 * At the relay's start: the subscriptions whose URL this process's destination policy refuses.
 * A platform restarted without ALLOWED_DESTINATIONS (or with a shorter one) would otherwise
 * dead-letter every delivery to a local receiver as `destination_refused` with nothing said at
 * start; the warning names the subscriptions and the setting.
 */
import type { Logger } from "pino";
import type { Queryable } from "../db/port.js";
import { refusalOfUrl, type DestinationPolicy } from "./destinationPolicy.js";

/** How many refused subscriptions the warning lists by id (the count covers them all). */
const LISTED = 10;

/** The non-deleted subscriptions `policy` refuses, with why; ids in order. */
export async function refusedSubscriptions(q: Queryable, policy: Pick<DestinationPolicy, "checkHost">): Promise<{ id: string; url: string; refusal: string }[]> {
  const { rows } = await q.query<{ id: string; url: string }>("SELECT id, url FROM outbound_subscriptions WHERE deleted_at IS NULL ORDER BY id");
  return rows.flatMap((r) => {
    const refusal = refusalOfUrl(policy, r.url);
    return refusal ? [{ ...r, refusal }] : [];
  });
}

/** Logs one warning when any active subscription is refused; never throws (a start is not stopped for it). */
export async function warnRefusedSubscriptions(q: Queryable, policy: Pick<DestinationPolicy, "checkHost">, logger: Logger): Promise<void> {
  try {
    const refused = await refusedSubscriptions(q, policy);
    if (refused.length === 0) return;
    const hosts = [...new Set(refused.map((r) => new URL(r.url).hostname.replace(/^\[|\]$/g, "")))];
    const n = refused.length;
    logger.warn(
      { subscriptions: refused.slice(0, LISTED).map(({ id, url, refusal }) => ({ id, url, refusal })), more: Math.max(0, n - LISTED) },
      `${n} active subscription${n === 1 ? "" : "s"} point${n === 1 ? "s" : ""} at ${hosts.join(", ")}, which the destination policy refuses: ` +
        `their deliveries will be dead-lettered as destination_refused. To deliver there, set ALLOWED_DESTINATIONS=${hosts.join(",")} and restart (then replay their dead letters).`,
    );
  } catch (error) {
    logger.warn({ err: error }, "could not check the subscriptions against ALLOWED_DESTINATIONS");
  }
}
