/**
 * Issue 29, Must show 3: an endpoint of application B driven into `disabled` by sustained failure
 * produces exactly one `endpoint.disabled`, signed, to the operator's destination and to B's own
 * subscription to `endpoint.*`; none to another application's (C subscribes to `endpoint.*` and
 * to `*`), none to B's `*`. Failing probes add nothing; a probe's success produces
 * `endpoint.recovered`; failing again at once is debounced (no second `endpoint.disabled` within
 * the window); an operator's re-enable produces `endpoint.enabled`. Both backends.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, expect, it } from "vitest";
import { scanForAlerts } from "../../shared/alerts.js";
import { generateSecret } from "../../shared/outbound/signature.js";
import { describeEachBackend } from "../support/databases.js";
import { eventually, startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "../operator/harness.js";

type Json = Record<string, any>;

describeEachBackend("operational events when an endpoint breaks", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  let failing = true;
  const operatorSecret = generateSecret();
  let appB: string;
  let appC: string;
  let endpoint: Json;
  let bOps: Json;

  beforeAll(async () => {
    receiver = await startTestReceiver();
    receiver.answer = ({ path }) => (path === "/b-endpoint" && failing ? 500 : 200);
    t = await startTestPlatform(ctx.db, {
      ALERT_WEBHOOK_URL: `${receiver.url}/operator`,
      ALERT_WEBHOOK_SECRET: operatorSecret,
      OUTBOUND_DEGRADE_AFTER: "2",
      OUTBOUND_DISABLE_AFTER: "3",
      OUTBOUND_BREAKER_WINDOW_SECONDS: "0",
      OUTBOUND_PROBE_INTERVAL_SECONDS: "1",
    });
    appB = (await t.api("POST", "/applications", { name: "B" })).id;
    appC = (await t.api("POST", "/applications", { name: "C" })).id;
    const sub = (applicationId: string, path: string, eventTypes: string[]) =>
      t.api("POST", "/subscriptions", { applicationId, url: `${receiver.url}${path}`, eventTypes });
    endpoint = await sub(appB, "/b-endpoint", ["order.*"]);
    bOps = await sub(appB, "/b-ops", ["endpoint.*"]);
    await sub(appB, "/b-star", ["*"]);
    await sub(appC, "/c-ops", ["endpoint.*"]);
    await sub(appC, "/c-star", ["*"]);
  }, 180_000);
  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
  });

  const eventsAt = (path: string, type?: string) => receiver.received
    .filter((r) => r.path === path && r.status === 200)
    .map((r) => ({ ...JSON.parse(r.body), headers: r.headers }))
    .filter((e) => (type ? e.type === type : String(e.type).startsWith("endpoint.")));
  const statusOf = async () => (await t.api("GET", `/subscriptions/${endpoint.id}`)).status as string;
  const send = async (n: number, tag: string) => {
    for (let i = 0; i < n; i++) await t.api("POST", "/events", { applicationId: appB, id: `${tag}-${ctx.backend}-${i}`, type: "order.paid", data: { i } });
  };
  const scanned = async <T>(what: string, check: () => Promise<T> | T) => eventually(what, async () => { await scanForAlerts(ctx.db); return check(); }, 40_000);

  it("disabled by sustained failure: exactly one endpoint.disabled, to the operator and to B's own subscription only", async () => {
    await send(5, "fail");
    await eventually("the endpoint disabled", async () => (await statusOf()) === "disabled", 40_000);
    await scanned("endpoint.disabled at the operator's destination", () => eventsAt("/operator", "endpoint.disabled").length > 0);
    await scanned("endpoint.disabled at B's subscription", () => eventsAt("/b-ops", "endpoint.disabled").length > 0);
    // Probes keep failing for a while: nothing more is raised.
    const probes = () => receiver.received.filter((r) => r.path === "/b-endpoint").length;
    const before = probes();
    await eventually("two failed probes", async () => probes() >= before + 2, 40_000);
    await scanForAlerts(ctx.db);

    const [toOperator] = eventsAt("/operator", "endpoint.disabled");
    expect(eventsAt("/operator", "endpoint.disabled")).toHaveLength(1);
    expect(eventsAt("/b-ops", "endpoint.disabled")).toHaveLength(1);
    expect(toOperator.data).toMatchObject({ subscriptionId: endpoint.id, applicationId: appB, url: `${receiver.url}/b-endpoint`, to: "disabled", reason: expect.stringContaining("circuit open") });
    expect(eventsAt("/b-ops", "endpoint.disabled")[0].data).toEqual(toOperator.data);
    // Signed like any event: with the operator's secret, and with B's subscription's own.
    const verify = (secret: string, path: string) => {
      const r = receiver.received.find((x) => x.path === path && x.body.includes("endpoint.disabled"))!;
      return new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
    };
    expect(verify(operatorSecret, "/operator")).toMatchObject({ type: "endpoint.disabled" });
    expect(verify(bOps.secrets[0], "/b-ops")).toMatchObject({ type: "endpoint.disabled" });
    // Never another application's, not even its `*`; nor B's `*` (operational events are asked for by name).
    for (const path of ["/c-ops", "/c-star", "/b-star"]) expect(eventsAt(path), path).toEqual([]);
    const { rows } = await ctx.db.query(
      `SELECT d.id FROM outbound_deliveries d JOIN outbound_events e ON e.id = d.event_id JOIN outbound_subscriptions s ON s.id = d.subscription_id
       WHERE e.type LIKE 'endpoint.%' AND s.application_id NOT IN ('app_platform', $1)`, [appB]);
    expect(rows).toEqual([]);
  }, 180_000);

  it("a probe's success closes the circuit: endpoint.recovered; failing again at once is debounced; an operator's enable: endpoint.enabled", async () => {
    failing = false;
    await scanned("endpoint.recovered at the operator's destination", () => eventsAt("/operator", "endpoint.recovered").length > 0);
    await scanned("endpoint.recovered at B's subscription", () => eventsAt("/b-ops", "endpoint.recovered").length > 0);
    expect(eventsAt("/operator", "endpoint.recovered")[0].data).toMatchObject({ subscriptionId: endpoint.id, from: "disabled", to: "active" });

    // It flaps: disabled again within the debounce window, and no second endpoint.disabled.
    failing = true;
    await send(5, "flap");
    await eventually("the endpoint disabled again", async () => (await statusOf()) === "disabled", 40_000);
    await scanned("the second disabling handled", async () => (await ctx.db.query(
      "SELECT 1 FROM outbound_health_transitions WHERE subscription_id = $1 AND to_status = 'disabled' AND handled_at IS NOT NULL", [endpoint.id])).rows.length === 2);
    const handled = await ctx.db.query<{ event_type: string; event_id: string | null }>(
      "SELECT event_type, event_id FROM outbound_health_transitions WHERE subscription_id = $1 AND to_status = 'disabled' ORDER BY id", [endpoint.id]);
    expect(handled.rows.map((r) => [r.event_type, r.event_id !== null])).toEqual([["endpoint.disabled", true], ["endpoint.disabled", false]]);
    expect(eventsAt("/operator", "endpoint.disabled")).toHaveLength(1);

    // An operator re-enables it: endpoint.enabled (not recovered), to both.
    failing = false;
    await t.api("POST", `/subscriptions/${endpoint.id}/enable`);
    await scanned("endpoint.enabled at the operator's destination", () => eventsAt("/operator", "endpoint.enabled").length > 0);
    await scanned("endpoint.enabled at B's subscription", () => eventsAt("/b-ops", "endpoint.enabled").length > 0);
    expect(eventsAt("/operator", "endpoint.enabled")).toHaveLength(1);
    expect(eventsAt("/operator", "endpoint.recovered")).toHaveLength(1);
    for (const path of ["/c-ops", "/c-star", "/b-star"]) expect(eventsAt(path), path).toEqual([]);
    // The operator sees them as events of the platform's application; B as its own.
    const platformEvents = (await t.api("GET", "/events?applicationId=app_platform&limit=100")).events.map((e: Json) => e.type);
    expect(platformEvents).toEqual(expect.arrayContaining(["endpoint.disabled", "endpoint.recovered", "endpoint.enabled"]));
    const bEvents = (await t.api("GET", `/events?applicationId=${appB}&limit=100`)).events.map((e: Json) => e.type).filter((type: string) => type.startsWith("endpoint."));
    expect(bEvents.filter((type: string) => type === "endpoint.disabled")).toHaveLength(1);
    expect(bEvents).toEqual(expect.arrayContaining(["endpoint.recovered", "endpoint.enabled"]));
  }, 180_000);
});
