/**
 * The demo's scenario, driven through the management API exactly as an operator (or the CLI)
 * would: create two subscriptions, let the partner send, wait for the platform to settle, fix the
 * broken endpoint, replay its dead letters, and report what was observed.
 */
import { createApiClient, type ApiClient, type ApiQuery } from "../cli/api.js";
import { DEMO_PARTNER, type PartnerReport } from "./partner.js";
import type { DemoReceiver } from "./receiver.js";

export interface DemoSummary {
  inbound: {
    /** Webhooks the partner sent, duplicates included. */
    sent: number;
    duplicatesSent: number;
    /** Answered 2xx (all of them, duplicates too). */
    accepted: number;
    /** Distinct inbox entries (sent minus duplicates). */
    entries: number;
    /** Entries that arrived before their prerequisite, were deferred, then applied. */
    deferredThenResolved: number;
    quarantined: number;
    /** Final state of each order, and whether it is the state the in-order story ends in. */
    orders: Record<string, { state: string | null; expected: string }>;
  };
  outbound: {
    /** `order.*` events the reconciler published (one delivery each to the flaky receiver). */
    events: number;
    /** Distinct deliveries the flaky receiver acknowledged. */
    flakyDelivered: number;
    /** Attempts the flaky receiver refused (503, 429, 500), each retried with backoff. */
    flakyRefused: number;
    /** Attempts the broken endpoint refused, until each of its deliveries became a dead letter. */
    brokenRefused: number;
    /** Deliveries to the broken endpoint that became dead letters. */
    deadLettered: number;
    /** Of those, replayed after the fix. */
    replayed: number;
    /** Replayed deliveries the fixed endpoint acknowledged. */
    replayedDelivered: number;
  };
  alerts: {
    /** Signed alerts the alert receiver got and verified. */
    received: number;
    /** Requests whose signature did not verify, at any receiver (should be 0). */
    badSignatures: number;
  };
  /** Everything reached the expected end state before the time limit. */
  complete: boolean;
  elapsedMs: number;
}

export interface ScenarioInput {
  baseUrl: string;
  token: string;
  receiver: DemoReceiver;
  runId: string;
  log: (line: string) => void;
  timeoutMs: number;
  /** Runs the sample partner; `pauseMs` is the gap after the early events. */
  partner: (pauseMs: number) => Promise<PartnerReport>;
}


/** Polls `check` every 250 ms until it returns true or `timeoutMs` passes; false on timeout. */
async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function deliveries(api: ApiClient, subscriptionId: string, status?: ApiQuery<"/deliveries">["status"]) {
  const answer = await api.GET("/deliveries", { params: { query: { subscriptionId, status, limit: 1000 } } });
  return answer.deliveries;
}

export async function runScenario(input: ScenarioInput): Promise<DemoSummary> {
  const started = Date.now();
  const { receiver, log } = input;
  const api = createApiClient({ url: input.baseUrl, token: input.token });
  let complete = true;
  const wait = async (what: string, check: () => Promise<boolean>) => {
    const ok = await until(check, input.timeoutMs);
    if (!ok) {
      complete = false;
      log(`gave up waiting for ${what} after ${input.timeoutMs} ms`);
    }
    return ok;
  };

  // 1. Two endpoints: one that fails now and then (retries), one that is broken (dead letters).
  const flaky = await api.POST("/subscriptions", { body: { url: `${receiver.url}/flaky`, eventTypes: ["order.*"], description: `demo ${input.runId}: flaky receiver` } });
  const broken = await api.POST("/subscriptions", { body: { url: `${receiver.url}/broken`, eventTypes: ["order.shipped"], maxAttempts: 2, description: `demo ${input.runId}: broken receiver` } });
  receiver.setSecret("flaky", flaky.secrets![0]!);
  receiver.setSecret("broken", broken.secrets![0]!);
  log(`subscriptions: ${flaky.id} (order.*, flaky), ${broken.id} (order.shipped, broken, 2 attempts max)`);

  // 2. The partner sends: early events first, then the rest with duplicates.
  const partner = await input.partner(1500);
  log(`partner sent ${partner.sent} signed webhooks (${partner.duplicatesSent} duplicates, some out of order): ${partner.accepted} accepted`);

  // 3. The reconciler converges every order to the in-order end state.
  const orders: DemoSummary["inbound"]["orders"] = {};
  await wait("the orders to converge", async () => {
    for (const [id, expected] of Object.entries(partner.expectedOrders)) {
      const order = await api.GET("/entities/{machine}/{id}", { params: { path: { machine: "order", id } } }).catch(() => undefined);
      orders[id] = { state: order?.state ?? null, expected };
    }
    return Object.values(orders).every((o) => o.state === o.expected);
  });
  log(`orders: ${Object.entries(orders).map(([id, o]) => `${id} ${o.state}`).join(", ")}`);

  // 4. Every published event reaches the flaky receiver (after retries); the broken one dead-letters.
  await wait("the flaky receiver's deliveries", async () => {
    const rows = await deliveries(api, flaky.id);
    return rows.length > 0 && rows.every((d) => d.status === "delivered");
  });
  const flakyRows = await deliveries(api, flaky.id);
  log(`flaky receiver: ${receiver.stats.flaky.delivered.size} deliveries acknowledged after ${receiver.stats.flaky.failures} refused attempts (retried with backoff)`);
  await wait("the broken endpoint's dead letters", async () => {
    const rows = await deliveries(api, broken.id);
    return rows.length > 0 && rows.every((d) => d.status === "dead");
  });
  const dead = (await api.GET("/dead-letters", { params: { query: { subscriptionId: broken.id, limit: 1000 } } })).deadLetters;
  log(`broken endpoint: ${dead.length} dead letters (${receiver.stats.broken.failures} refused attempts)`);

  // 5. Alerts for those dead letters arrive, signed, through our own outbox.
  // Counted by type: the alert URL also gets the operational event delivery.exhausted (one per window and endpoint).
  const alertsReceived = () => receiver.stats.alerts.deliveredByType.get("alert.dead_letter")?.size ?? 0;
  await wait("the alerts", async () => alertsReceived() >= dead.length);
  log(`alerts: ${alertsReceived()} signed alert.dead_letter webhooks received`);

  // 6. Fix the endpoint, replay in bulk, see them delivered.
  receiver.fix();
  const replay = await api.POST("/dead-letters/replay", { body: { filter: { subscriptionId: broken.id } } });
  await wait("the replayed deliveries", async () => (await deliveries(api, broken.id)).every((d) => d.status === "delivered"));
  log(`replayed ${replay.replayed.length} dead letters after fixing the endpoint: ${receiver.stats.broken.delivered.size} delivered`);

  const processed = (await api.GET("/inbox", { params: { query: { status: "processed", partner: DEMO_PARTNER, limit: 1000 } } })).entries;
  const quarantined = (await api.GET("/inbox", { params: { query: { status: "quarantined", partner: DEMO_PARTNER, limit: 1000 } } })).entries;
  const stats = receiver.stats;
  return {
    inbound: {
      sent: partner.sent,
      duplicatesSent: partner.duplicatesSent,
      accepted: partner.accepted,
      entries: partner.inboxIds.size,
      deferredThenResolved: processed.filter((e) => e.deferrals > 0).length,
      quarantined: quarantined.length,
      orders,
    },
    outbound: {
      events: new Set(flakyRows.map((d) => d.eventId)).size,
      flakyDelivered: stats.flaky.delivered.size,
      flakyRefused: stats.flaky.failures,
      brokenRefused: stats.broken.failures,
      deadLettered: dead.length,
      replayed: replay.replayed.length,
      replayedDelivered: stats.broken.delivered.size,
    },
    alerts: { received: stats.alerts.deliveredByType.get("alert.dead_letter")?.size ?? 0, badSignatures: stats.flaky.badSignatures + stats.broken.badSignatures + stats.alerts.badSignatures },
    complete,
    elapsedMs: Date.now() - started,
  };
}

/** The summary as the terminal shows it. */
export function formatSummary(s: DemoSummary, where: { adminUrl: string; token: string; baseUrl: string }): string {
  const orders = Object.entries(s.inbound.orders).map(([id, o]) => `${id}: ${o.state ?? "missing"}${o.state === o.expected ? "" : ` (expected ${o.expected})`}`).join(", ");
  return [
    `Demo ${s.complete ? "finished" : "INCOMPLETE (see the lines above)"} in ${(s.elapsedMs / 1000).toFixed(1)} s.`,
    "",
    "Inbound (partner demo-shop → /webhooks/demo-shop):",
    `  ${s.inbound.sent} signed webhooks sent, ${s.inbound.duplicatesSent} of them duplicates: ${s.inbound.accepted} answered 2xx, ${s.inbound.entries} inbox entries`,
    `  ${s.inbound.deferredThenResolved} arrived before their prerequisite, were deferred, then applied; ${s.inbound.quarantined} quarantined`,
    `  orders: ${orders}`,
    "Outbound (order.* events published by the reconciler):",
    `  ${s.outbound.events} events, ${s.outbound.flakyDelivered} delivered to the flaky receiver; ${s.outbound.flakyRefused} attempts it refused were retried with backoff`,
    `  ${s.outbound.deadLettered} dead letters on the broken endpoint (${s.outbound.brokenRefused} refused attempts) → fixed → ${s.outbound.replayed} replayed → ${s.outbound.replayedDelivered} delivered`,
    `Alerts: ${s.alerts.received} signed alert.dead_letter webhooks received (bad signatures: ${s.alerts.badSignatures})`,
    "",
    `Admin page:  ${where.adminUrl}`,
    `Admin token: ${where.token}`,
    "Where to look (what the demo did; its dead letters were replayed, so that list is empty now):",
    `  inbound:   ${where.adminUrl}?inbox=any  (every webhook the partner sent; Deferrals: those that came early)`,
    `  outbound:  ${where.adminUrl}?deliveries=delivered  (the replayed ones among them: Attempts shows the refusals, then the delivery)`,
    `  CLI:       export WEBHOOKS_URL=${where.baseUrl} ADMIN_TOKEN=${where.token}`,
    "             npx webhooks inbox list --status processed",
    "             npx webhooks audit --operation replayDeadLetters   # the replay, recorded",
    "The demo is over; the platform keeps serving (try the admin page and the CLI). Ctrl-C stops it.",
  ].join("\n");
}
