import { expect, it } from "vitest";
import { deliveriesPerMinute } from "../../shared/admin/stats.js";
import { describeEachBackend } from "../support/databases.js";
import { eventually, makeDeadLetter, usePlatformAndReceiver, type TestPlatform, type TestReceiver } from "./harness.js";

describeEachBackend("deliveries per minute", (ctx) => {
  it("counts attempts by outcome and dead letters per minute, zero-filled, probes left out", async () => {
    const db = ctx.db;
    await db.query(`INSERT INTO outbound_subscriptions (id, url, event_types, secrets) VALUES ('sub_s', 'https://example.com', '{*}', '{whsec_x}')`);
    for (const e of ["e1", "e2", "e3", "e4"]) {
      await db.query(`INSERT INTO outbound_events (id, type, body) VALUES ($1, 'order.paid', '{}')`, [e]);
      await db.query(`INSERT INTO outbound_deliveries (id, event_id, subscription_id) VALUES ($1, $2, 'sub_s')`, [`${e}:sub_s`, e]);
    }
    await db.query(`UPDATE outbound_deliveries SET status = 'dead', dead_at = now() - interval '2 minutes' WHERE id = 'e3:sub_s'`);
    // e4 had one allowed attempt (maxAttempts 1): its retryable failure ended it, nothing retries it.
    await db.query(`UPDATE outbound_deliveries SET status = 'dead', attempts = 1, dead_at = now() WHERE id = 'e4:sub_s'`);
    const attempt = (d: string, result: string, ago: string, probe = false) =>
      db.query(`INSERT INTO outbound_attempt_rows (delivery_id, attempt_number, result, status, latency_ms, probe, created_at)
                VALUES ($1, 1, $2, 200, 5, $3, now() - $4::interval)`, [d, result, probe, ago]);
    await attempt("e1:sub_s", "delivered", "0 minutes");
    await attempt("e2:sub_s", "retryable", "0 minutes");
    await attempt("e2:sub_s", "delivered", "0 minutes");
    await attempt("e3:sub_s", "permanent", "2 minutes");
    await attempt("e3:sub_s", "gone", "2 minutes");
    await attempt("e4:sub_s", "retryable", "0 minutes");
    await attempt("e1:sub_s", "retryable", "0 minutes", true); // a probe: not counted
    await attempt("e1:sub_s", "delivered", "3 hours"); // outside the window

    const series = await deliveriesPerMinute(db, 10);
    expect(series).toHaveLength(10);
    const minutes = series.map((b) => Date.parse(b.minute));
    expect(minutes.every((m, i) => i === 0 || m - minutes[i - 1]! === 60_000)).toBe(true);
    // Tolerate a minute boundary between the inserts and the query by summing the last three buckets.
    const tail = series.slice(-4);
    const sum = (k: "delivered" | "retried" | "failed" | "deadLettered") => tail.reduce((s, b) => s + b[k], 0);
    expect({ delivered: sum("delivered"), retried: sum("retried"), failed: sum("failed"), deadLettered: sum("deadLettered") })
      .toEqual({ delivered: 2, retried: 1, failed: 3, deadLettered: 2 });
    expect(series.slice(0, -4).every((b) => b.delivered + b.retried + b.failed + b.deadLettered === 0)).toBe(true);
  });
});


/**
 * Issue 27 item 8, through the real relay and the page's endpoint: what the chart shows must not
 * change when a dead letter is replayed, and the application selector must narrow it.
 */
describeEachBackend("deliveries per minute, as the admin page asks for them", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  usePlatformAndReceiver(() => ctx.db, (platform, r) => { t = platform; receiver = r; });
  const totals = async (query = "") => {
    const { series } = await t.api("GET", `/stats/deliveries-per-minute?minutes=10${query}`);
    const sum = (k: string) => series.reduce((s: number, b: Record<string, number>) => s + b[k]!, 0);
    return { delivered: sum("delivered"), retried: sum("retried"), failed: sum("failed"), deadLettered: sum("deadLettered") };
  };

  it("a dead letter's last attempt stays 'failed, not retried' after the dead letter is replayed and delivered", async () => {
    receiver.answer = 503; // retryable; maxAttempts 1: exhausted at once
    const { deliveryId } = await makeDeadLetter(t, `${receiver.url}/replayed`, `stats-replay-${ctx.backend}`);
    expect(await totals()).toEqual({ delivered: 0, retried: 0, failed: 1, deadLettered: 1 });

    receiver.answer = 200;
    await t.api("POST", `/dead-letters/${encodeURIComponent(deliveryId)}/replay`);
    await eventually(`${deliveryId} delivered`, async () => (await t.api("GET", `/deliveries/${encodeURIComponent(deliveryId)}`)).status === "delivered");
    // The 503 was the end of its run: it was not retried; the replay was a new run, delivered.
    expect(await totals()).toEqual({ delivered: 1, retried: 0, failed: 1, deadLettered: 0 });
  }, 60_000);

  it("?applicationId= counts that application's deliveries only (the page's application selector)", async () => {
    receiver.answer = 400;
    const app = await t.api("POST", "/applications", { name: `Stats ${ctx.backend}` });
    await t.api("POST", "/subscriptions", { url: `${receiver.url}/app`, eventTypes: ["stats.app"], maxAttempts: 1, applicationId: app.id });
    const sent = await t.api("POST", "/events", { id: `stats-app-${ctx.backend}`, type: "stats.app", data: {}, applicationId: app.id });
    const id: string = sent.deliveries[0].id;
    await eventually(`${id} dead`, async () => (await t.api("GET", `/deliveries/${encodeURIComponent(id)}`)).status === "dead");

    expect(await totals(`&applicationId=${app.id}`)).toEqual({ delivered: 0, retried: 0, failed: 1, deadLettered: 1 });
    // The default application's rows (the test above) are not in it, and are still in the whole.
    expect((await totals("&applicationId=app_default")).delivered).toBe(1);
    expect((await totals("&applicationId=app_default")).failed).toBe(1);
    expect((await totals()).failed).toBe(2);
  }, 60_000);
});
