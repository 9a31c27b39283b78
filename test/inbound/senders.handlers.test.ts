/**
 * Must-show (local): a handler module outside the repository, named by INBOUND_HANDLERS, processes
 * a GitHub `push` signed with @octokit/webhooks-methods and Stripe events signed with the stripe
 * SDK's test header, posted over HTTP to the platform; ids and types come from where each sender
 * puts them. The same module through each cloud's processor bundle: test/wiring/handlers.test.ts.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { entityState } from "../../shared/inbound/entities.js";
import { describeEachBackend } from "../support/databases.js";
import { startTestPlatform, type TestPlatform } from "../operator/harness.js";
import { githubPush, SENDER_PARTNERS, stripeInvoiceEvent, writeSenderHandlers } from "./support/realSenders.js";

async function eventually<T>(what: string, probe: () => Promise<T | undefined | null | false>, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describeEachBackend("real senders through a user's handler module (local)", (ctx) => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform(ctx.db, { PARTNERS: JSON.stringify(SENDER_PARTNERS), INBOUND_HANDLERS: writeSenderHandlers() });
  });
  afterAll(() => t.stop());
  const post = (partner: string, r: { headers: Record<string, string>; body: string }) =>
    fetch(`${t.baseUrl}/webhooks/${partner}`, { method: "POST", headers: r.headers, body: r.body });

  it("a GitHub push: id from X-GitHub-Delivery, type push; the handler's outbound event is enqueued", async () => {
    const push = await githubPush();
    const res = await post("github", push);
    expect(res.status).toBe(202);
    const { inboxId } = (await res.json()) as { inboxId: string };
    const entry = await eventually("the push processed", async () => {
      const e = await t.api("GET", `/inbox/${inboxId}`);
      return e.status === "processed" && e;
    });
    expect(entry).toMatchObject({ partnerName: "github", partnerEventId: push.delivery, eventType: "push", outcome: "applied" });
    const out = await ctx.db.query<{ type: string; body: string }>("SELECT type, body FROM outbound_events WHERE id = $1", [`gh-${push.delivery}`]);
    expect(out.rows[0]?.type).toBe("repo.pushed");
    expect(JSON.parse(out.rows[0]!.body).data).toEqual({ ref: "refs/heads/main", commits: 1 });
  });

  it("Stripe events: id and type from the body; paid before created converges to paid in the user's machine", async () => {
    const invoice = `in_${ctx.backend}_1`;
    const paid = stripeInvoiceEvent("invoice.paid", invoice);
    const created = stripeInvoiceEvent("invoice.created", invoice);
    expect((await post("stripe", paid)).status).toBe(202);
    expect((await post("stripe", created)).status).toBe(202);
    expect((await post("stripe", paid)).status).toBe(200); // Stripe retrying: a duplicate
    await eventually("the invoice paid", async () => (await entityState(ctx.db, "invoice", invoice)) === "paid");
    const entries = (await t.api("GET", "/inbox?partner=stripe")).entries as { partnerEventId: string; eventType: string; status: string }[];
    expect(entries.map((e) => [e.partnerEventId, e.eventType]).sort()).toEqual([[created.eventId, "invoice.created"], [paid.eventId, "invoice.paid"]].sort());
  });

  it("a GitHub event no handler takes is recorded as ignored, with its type including the action", async () => {
    const push = await githubPush();
    const body = JSON.stringify({ action: "opened", issue: { number: 1 } });
    const { sign } = await import("@octokit/webhooks-methods");
    const res = await post("github", { body, headers: { ...push.headers, "x-github-event": "issues", "x-hub-signature-256": await sign("It's a Secret to Everybody", body) } });
    const { inboxId } = (await res.json()) as { inboxId: string };
    const entry = await eventually("the issue event settled", async () => {
      const e = await t.api("GET", `/inbox/${inboxId}`);
      return e.status === "ignored" && e;
    });
    expect(entry).toMatchObject({ eventType: "issues.opened", lastError: "no handler takes github events of type issues.opened" });
  });
});
