/**
 * Must show 2: the demo runs end to end, and every number of its summary is what the database holds.
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDemo, type DemoRun } from "../../shared/demo/run.js";
import { DEMO_PARTNER } from "../../shared/demo/partner.js";
import { formatSummary } from "../../shared/demo/scenario.js";
import { describeEachBackend } from "../support/databases.js";

describeEachBackend("demo", (ctx) => {
  let run: DemoRun;
  const lines: string[] = [];

  beforeAll(async () => {
    run = await runDemo({ db: ctx.db, env: { PORT: "0", LOG_LEVEL: "silent" }, log: (l) => lines.push(l), timeoutMs: 40_000 });
  }, 180_000);
  afterAll(async () => {
    await run?.stop();
  });

  it("completes, and reports each step", () => {
    expect(run.summary.complete).toBe(true);
    expect(lines.join("\n")).toMatch(/partner sent .*accepted[\s\S]*orders:[\s\S]*dead letters[\s\S]*alerts[\s\S]*replayed/);
  });

  it("inbound numbers match the inbox and the orders", async () => {
    const s = run.summary.inbound;
    const entries = await ctx.db.query<{ status: string; deferrals: number }>("SELECT status, deferrals FROM inbox_entries WHERE partner_name = $1", [DEMO_PARTNER]);
    expect(s.sent - s.duplicatesSent).toBe(entries.rows.length);
    expect(s.entries).toBe(entries.rows.length);
    expect(s.accepted).toBe(s.sent);
    expect(s.duplicatesSent).toBeGreaterThan(0);
    expect(entries.rows.every((e) => e.status === "processed")).toBe(true);
    expect(s.deferredThenResolved).toBe(entries.rows.filter((e) => e.deferrals > 0).length);
    expect(s.deferredThenResolved).toBeGreaterThan(0);
    expect(s.quarantined).toBe(0);
    const orders = await ctx.db.query<{ id: string; state: string }>("SELECT entity_id AS id, state FROM inbound_entities WHERE machine = 'order' AND entity_id = ANY($1::text[])", [Object.keys(s.orders)]);
    expect(Object.fromEntries(orders.rows.map((o) => [o.id, o.state]))).toEqual(Object.fromEntries(Object.entries(s.orders).map(([id, o]) => [id, o.expected])));
  });

  it("outbound numbers match the deliveries, attempts and replays", async () => {
    const s = run.summary.outbound;
    const bySub = await ctx.db.query<{ description: string; status: string; n: number; replays: number }>(
      `SELECT s.description, d.status, count(*)::int AS n, sum(d.replays)::int AS replays
       FROM outbound_deliveries d JOIN outbound_subscriptions s ON s.id = d.subscription_id
       WHERE s.description LIKE 'demo %' GROUP BY 1, 2`,
    );
    const flaky = bySub.rows.filter((r) => r.description.endsWith("flaky receiver"));
    const broken = bySub.rows.filter((r) => r.description.endsWith("broken receiver"));
    expect(flaky).toEqual([expect.objectContaining({ status: "delivered", n: s.events })]);
    expect(s.flakyDelivered).toBe(s.events);
    expect(broken).toEqual([expect.objectContaining({ status: "delivered", n: s.deadLettered, replays: s.replayed })]);
    expect(s.replayed).toBe(s.deadLettered);
    expect(s.replayedDelivered).toBe(s.replayed);
    const refused = await ctx.db.query<{ description: string; n: number }>(
      `SELECT s.description, count(*)::int AS n FROM outbound_attempts a
       JOIN outbound_deliveries d ON d.id = a.delivery_id JOIN outbound_subscriptions s ON s.id = d.subscription_id
       WHERE s.description LIKE 'demo %' AND a.result <> 'delivered' GROUP BY 1`,
    );
    const refusedBy = (end: string) => refused.rows.find((r) => r.description.endsWith(end))?.n ?? 0;
    // The summary counts what the live lines said: the flaky receiver's refusals apart from the broken one's.
    expect(s.flakyRefused).toBe(refusedBy("flaky receiver"));
    expect(s.brokenRefused).toBe(refusedBy("broken receiver"));
    expect(s.brokenRefused).toBeGreaterThanOrEqual(s.deadLettered);
    const text = formatSummary(run.summary, { adminUrl: "a", token: "t", baseUrl: "b" });
    expect(text).toContain(`${s.flakyRefused} attempts it refused were retried with backoff`);
    expect(text).toContain("keeps serving");
    // Where to look lands on what the demo did (issue 27 item 9): the inbound webhooks with their
    // deferrals, the delivered deliveries (the replayed ones among them), the replay in the audit
    // log; not the dead letter list, which the replay emptied.
    expect(text).toContain("a?inbox=any");
    expect(text).toContain("a?deliveries=delivered");
    expect(text).toContain("npx webhooks inbox list --status processed");
    expect(text).toContain("npx webhooks audit --operation replayDeadLetters");
    expect(text).not.toContain("dlq list");
    const replays = await ctx.db.query<{ n: number }>("SELECT count(*)::int AS n FROM outbound_replays");
    expect(replays.rows[0]!.n).toBe(s.replayed);
  });

  it("alerts were raised for each dead letter and delivered, signed", async () => {
    const alerts = await ctx.db.query<{ status: string }>(
      `SELECT d.status FROM outbound_deliveries d JOIN outbound_events e ON e.id = d.event_id WHERE e.type = 'alert.dead_letter'`,
    );
    expect(alerts.rows.length).toBe(run.summary.outbound.deadLettered);
    expect(alerts.rows.every((a) => a.status === "delivered")).toBe(true);
    expect(run.summary.alerts.received).toBe(alerts.rows.length);
    expect(run.summary.alerts.badSignatures).toBe(0);
  });
});

describe("npm run demo", () => {
  it("prints the summary, the admin URL and the token, then keeps serving", async () => {
    const child = spawn(process.execPath, ["node_modules/tsx/dist/cli.mjs", "shared/server/main.ts", "--demo"], {
      env: { ...process.env, PORT: "0", ADMIN_TOKEN: "demo-test-token-0123456789", LOG_LEVEL: "silent", DATABASE_URL: "", DATA_DIR: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (out += c.toString()));
    try {
      const end = Date.now() + 150_000;
      while (!out.includes("Ctrl-C") && Date.now() < end && child.exitCode === null) await new Promise((r) => setTimeout(r, 200));
      expect(out).toContain("Demo finished");
      const admin = /Admin page:\s+(\S+)/.exec(out)?.[1];
      expect(out).toContain("Admin token: demo-test-token-0123456789");
      const page = await fetch(admin!);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("webhooks admin");
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
  }, 200_000);
});
