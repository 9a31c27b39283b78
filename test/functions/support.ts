/**
 * Shared pieces of the cloud function tests: a partner signed by the reference `standardwebhooks`
 * library, order events, and reading the inbox back.
 */
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import type { Queryable } from "../../shared/db/port.js";
import { signed } from "../inbound/helpers.js";
import { useBundledHandlers } from "../../shared/cloud/bundledHandlers.js";
import orderHandlers from "../../examples/orders/handlers.js";

// The functions' sources run here, not a bundle: give their processors the example order domain,
// as a bundle built with INBOUND_HANDLERS=examples/orders/handlers.ts has it.
useBundledHandlers(orderHandlers);

// The same partner ("shop", Standard Webhooks, signed by the reference library) as the inbound tests.
export { PARTNERS_JSON, SECRET, orderState } from "../inbound/helpers.js";

/** A signed delivery with its body as text, as API Gateway and Functions hosts hand it over. */
export function signedDelivery(id: string, body: string, at = new Date()): { headers: Record<string, string>; body: string } {
  return { headers: signed(id, body, at).headers, body };
}

export const orderEvent = (orderId: string, type: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ type, data: { order_id: orderId, ...extra } });

/** The inbox entry of one partner event (the test partner `shop` unless said; null: whichever partner sent it). */
export async function inboxEntry(db: Queryable, eventId: string, partner: string | null = "shop"): Promise<{ status: string; failures: number; outcome: string | null } | undefined> {
  const r = await db.query<{ status: string; failures: number; outcome: string | null }>(
    "SELECT status, failures, outcome FROM inbox_entries WHERE ($2::text IS NULL OR partner_name = $2) AND partner_event_id = $1",
    [eventId, partner],
  );
  return r.rows[0];
}

/** Polls `probe` until it returns a truthy value; fails with `what` after `timeoutMs`. */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined | null | false>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Makes processing of one event fail inside the processor's transaction, as a broken business
 * rule or a constraint would: a real database error, not a mock.
 */
export async function poisonEvent(db: Queryable, eventId: string): Promise<void> {
  await db.query(`CREATE OR REPLACE FUNCTION test_poison() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.status = 'processed' AND NEW.partner_event_id = '${eventId.replace(/'/g, "")}' THEN
        RAISE EXCEPTION 'poisoned event for the test';
      END IF;
      RETURN NEW;
    END $$`);
  await db.query("DROP TRIGGER IF EXISTS test_poison ON inbox_entries");
  await db.query("CREATE TRIGGER test_poison BEFORE UPDATE ON inbox_entries FOR EACH ROW EXECUTE FUNCTION test_poison()");
}

/** A signed delivery as API Gateway's HTTP API (payload 2.0) hands it to the AWS ingest Lambda. */
export function apiGatewayEvent(partner: string, delivery: { headers: Record<string, string>; body: string }): APIGatewayProxyEventV2 {
  return {
    version: "2.0",
    routeKey: "POST /webhooks/{partner}",
    rawPath: `/webhooks/${partner}`,
    rawQueryString: "",
    headers: delivery.headers,
    pathParameters: { partner },
    isBase64Encoded: false,
    body: delivery.body,
    requestContext: {
      accountId: "123456789012", apiId: "api", domainName: "api.example", domainPrefix: "api",
      http: { method: "POST", path: `/webhooks/${partner}`, protocol: "HTTP/1.1", sourceIp: "203.0.113.9", userAgent: "partner" },
      requestId: "req", routeKey: "POST /webhooks/{partner}", stage: "$default", time: "", timeEpoch: Date.now(),
    },
  };
}
