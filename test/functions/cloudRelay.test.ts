/**
 * The scheduled relay the cloud functions run: a pass never claims more than one HTTP turn, so it
 * fits the time the drain keeps for it (the attempt timeout and 5 s).
 */
import { afterEach, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { relayFor, runScheduledRelay } from "../../shared/cloud/relay.js";
import { loadConfig } from "../../shared/config.js";
import { createSubscription, enqueueMany } from "../../shared/outbound/index.js";
import { createLogger } from "../../shared/telemetry/log.js";
import { describeEachBackend } from "../support/databases.js";
import { resetOutbound, startReceiver, type Receiver } from "../outbound/support/receiver.js";

describeEachBackend("cloud relay pass", (ctx) => {
  let receiver: Receiver | undefined;
  afterEach(async () => {
    await receiver?.close();
    await resetOutbound(ctx.db);
  });

  it("claims at most 64 deliveries (one HTTP turn) whatever OUTBOUND_BATCH_SIZE, and keeps the timeout + 5 s for a pass", async () => {
    receiver = await startReceiver(() => ({ status: 204 }));
    await createSubscription(ctx.db, { url: receiver.url, eventTypes: ["*"] });
    await enqueueMany(ctx.db, Array.from({ length: 100 }, (_, i) => ({ id: `turn-${i}`, type: "a.b", data: i })));
    const config = loadConfig({ ADMIN_TOKEN: "cloud-relay-test-token", ALLOWED_DESTINATIONS: "127.0.0.1", OUTBOUND_BATCH_SIZE: "500", OUTBOUND_TIMEOUT_MS: "3000" });
    const { relay, passReserveMs, close } = relayFor(ctx.db, config, createLogger({ level: "silent" }));
    try {
      expect(passReserveMs).toBe(8000);
      // One round of the endpoint's turns per pass: its adaptive limit starts at 8 and doubles with
      // each round of successes (issue 15), never above one HTTP turn (64).
      const passes: number[] = [];
      for (let n = await relay.runOnce(); n > 0; n = await relay.runOnce()) passes.push(n);
      expect(passes).toEqual([8, 16, 32, 44]);
      expect(receiver.received).toHaveLength(100);
    } finally {
      await close();
    }
  });
  it("a scheduled run announces a new dead letter and delivers the alert, signed, in the same run", async () => {
    receiver = await startReceiver((r) => ({ status: JSON.parse(r.body).type === "a.b" ? 400 : 204 }));
    await createSubscription(ctx.db, { url: `${receiver.url}/broken`, eventTypes: ["a.b"], maxAttempts: 1 });
    await enqueueMany(ctx.db, [{ id: "doomed-1", type: "a.b", data: { n: 1 } }]);
    const secret = `whsec_${Buffer.from("alert-secret-for-the-cloud-relay!").toString("base64")}`;
    const config = loadConfig({ ADMIN_TOKEN: "cloud-relay-test-token", ALLOWED_DESTINATIONS: "127.0.0.1", ALERT_WEBHOOK_URL: `${receiver.url}/alerts`, ALERT_WEBHOOK_SECRET: secret });
    const summary = await runScheduledRelay(ctx.db, config, createLogger({ level: "silent" }), () => 60_000);
    expect(summary).toMatchObject({ alertsRaised: 1, stoppedBecause: "idle" });
    const alert = receiver.received.find((r) => JSON.parse(r.body).type === "alert.dead_letter");
    expect(alert, "the alert reached ALERT_WEBHOOK_URL").toBeDefined();
    const verified = new Webhook(secret).verify(alert!.body, alert!.headers as Record<string, string>) as { data: { eventId: string; attempts: number } };
    expect(verified.data).toMatchObject({ eventId: "doomed-1", attempts: 1 });
  });
});
