/**
 * Issue 32 must-show 1, in Chromium, both backends: the customer portal opened by a portal link.
 * - a link opens the portal for its application only (another application's endpoints are not
 *   there), and its token leaves the address bar;
 * - the same link again, or an expired one, opens nothing, and says why;
 * - a page of an allowed origin frames it (an iframe on another local origin: another port of
 *   127.0.0.1), and a page of an origin not allowed cannot: the browser refuses the frame, its
 *   script never runs, the link stays unused;
 * - a customer adds an endpoint (an event type picked from the catalogue), rotates its secret,
 *   opens a delivery's request (payload, headers) and response (status, body excerpt), and
 *   replays it; the receiver gets it again;
 * - and replays several failed deliveries at once, edits (a refused address is refused with the
 *   API's message), pauses, resumes, tests and deletes an endpoint.
 */
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeEachBackend } from "../support/databases.js";
import { chromiumAvailable, usePlatformInChromium } from "./chromium.js";
import { eventually, type TestPlatform, type TestReceiver } from "./harness.js";

const suite = chromiumAvailable ? describeEachBackend : (title: string) => describe.skip(title, () => { it("needs Chromium", () => {}); });

/** A page on its own origin that frames `src`. */
async function embedder(): Promise<{ origin: string; frame: (src: string) => string; close: () => Promise<void> }> {
  let src = "about:blank";
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><title>embedder</title><h1>The customer's own app</h1><iframe id="portal" src="${src.replace(/"/g, "&quot;")}" width="1000" height="700"></iframe>`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const origin = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  return {
    origin,
    frame: (to) => { src = to; return `${origin}/`; },
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

suite("customer portal in Chromium", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  let app: string;
  let otherSubUrl: string;
  let allowed: Awaited<ReturnType<typeof embedder>>;
  let refused: Awaited<ReturnType<typeof embedder>>;
  const openPage = usePlatformInChromium(() => ctx.db, (platform, r) => { t = platform; receiver = r; });

  beforeAll(async () => {
    allowed = await embedder();
    refused = await embedder();
    app = (await t.api("POST", "/applications", { name: "Acme Corp" })).id;
    const other = (await t.api("POST", "/applications", { name: "Globex" })).id;
    otherSubUrl = `${receiver.url}/globex-only`;
    await t.api("POST", "/subscriptions", { url: otherSubUrl, eventTypes: ["*"], applicationId: other });
    await t.api("POST", "/subscriptions", { url: `${receiver.url}/acme-existing`, eventTypes: ["order.*"], applicationId: app, description: "existing" });
    await t.api("POST", "/event-types", { name: "order.paid", description: "An order was paid", applicationId: app });
    await t.api("POST", "/event-types", { name: "order.refunded", applicationId: app });
    await t.api("PATCH", `/applications/${app}/portal-settings`, { frameAncestors: [allowed.origin], theme: { name: "Acme Webhooks", accentColor: "#aa3300" } });
  }, 120_000);
  afterAll(async () => {
    await allowed?.close();
    await refused?.close();
  });

  const link = async (body: Record<string, unknown> = { access: "write" }) => t.api("POST", `/applications/${app}/portal-links`, body);
  const linkRow = async (id: string) => ((await t.api("GET", `/applications/${app}/portal-links`)).links as any[]).find((l) => l.id === id);

  it("opens the portal for its application only, and takes the token out of the address bar", async () => {
    const made = await link({ access: "read" });
    const { page, pageErrors } = await openPage();
    await page.goto(made.url);
    await page.locator("#endpoint-rows tr[data-id]").first().waitFor({ timeout: 15_000 });
    expect(await page.textContent("#app-name")).toBe("Acme Webhooks");
    expect(await page.textContent("#access")).toBe("read-only");
    const rows = await page.locator("#endpoint-rows").textContent();
    expect(rows).toContain(`${receiver.url}/acme-existing`);
    expect(rows).not.toContain(otherSubUrl);
    expect(page.url()).not.toContain(made.token);
    expect(page.url()).not.toContain("#");
    // Read-only: no button that changes something.
    expect(await page.isVisible("#add-endpoint")).toBe(false);
    expect((await linkRow(made.id)).usedAt).not.toBeNull();
    expect(pageErrors).toEqual([]);
    await page.context().close();
  }, 120_000);

  it("refuses a link used already, and an expired one, saying why", async () => {
    const made = await link();
    const first = await openPage();
    await first.page.goto(made.url);
    await first.page.locator("#endpoint-rows tr[data-id]").first().waitFor({ timeout: 15_000 });
    await first.page.context().close();

    const again = await openPage();
    await again.page.goto(made.url);
    await again.page.locator("#message.error").waitFor({ timeout: 15_000 });
    expect(await again.page.textContent("#message")).toContain("used already");
    expect(await again.page.isVisible("#portal")).toBe(false);
    await again.page.context().close();

    const old = await link();
    await ctx.db.query("UPDATE portal_links SET expires_at = now() - interval '1 second' WHERE id = $1", [old.id]);
    const late = await openPage();
    await late.page.goto(old.url);
    await late.page.locator("#message.error").waitFor({ timeout: 15_000 });
    expect(await late.page.textContent("#message")).toContain("expired");
    expect(await late.page.isVisible("#portal")).toBe(false);
    expect(late.pageErrors).toEqual([]);
    await late.page.context().close();
  }, 120_000);

  it("is framed by an allowed origin, and refused by another", async () => {
    const ok = await link();
    const { page, pageErrors } = await openPage();
    await page.goto(allowed.frame(ok.url));
    const framed = page.frameLocator("#portal");
    await framed.locator("#endpoint-rows tr[data-id]").first().waitFor({ timeout: 15_000 });
    expect(await framed.locator("#app-name").textContent()).toBe("Acme Webhooks");
    expect(pageErrors).toEqual([]);
    await page.context().close();

    const no = await link();
    const other = await openPage();
    const refusals: string[] = [];
    other.page.on("console", (m) => { if (m.text().includes("frame-ancestors")) refusals.push(m.text()); });
    await other.page.goto(refused.frame(no.url));
    await eventually("the browser to refuse the frame", async () => refusals.length > 0, 15_000);
    // The policy names the allowed origin only; the refused page's is not in it.
    expect(refusals[0]).toContain(`frame-ancestors ${allowed.origin}`);
    expect(refusals[0]).not.toContain(refused.origin);
    // Its script never ran: nothing rendered in the frame, and the link was not exchanged.
    const frame = other.page.frames().find((f) => f !== other.page.mainFrame())!;
    expect(await frame.locator("#portal").count().catch(() => 0)).toBe(0);
    expect((await linkRow(no.id)).usedAt).toBeNull();
    await other.page.context().close();
  }, 120_000);

  it("lets a customer add an endpoint, rotate its secret, read a delivery's request and response, and replay it", async () => {
    const made = await link();
    const { page, pageErrors } = await openPage();
    page.on("dialog", (d) => void d.accept());
    await page.goto(made.url);
    await page.click("#add-endpoint");
    const url = `${receiver.url}/customer-${ctx.backend}`;
    await page.fill("#endpoint-url", url);
    await page.fill("#endpoint-description", "my endpoint");
    // The catalogue's types to pick from; no free-text pattern.
    await page.check('#event-type-list input[value="order.paid"]');
    await page.fill("#event-type-free", "");
    await page.click("#endpoint-save");
    const row = page.locator("#endpoint-rows tr", { hasText: url });
    await row.waitFor({ timeout: 15_000 });
    const subId = (await row.getAttribute("data-id"))!;
    const created = await t.api("GET", `/subscriptions/${subId}`);
    expect(created).toMatchObject({ applicationId: app, url, eventTypes: ["order.paid"], description: "my endpoint" });
    // The new secret is shown at once, unasked: the page shows it once the endpoint's panel has
    // loaded, which may be after its row appears (the race a clean-clone run lost).
    const [firstSecret] = (await t.api("GET", `/subscriptions/${subId}/secrets`)).secrets;
    await eventually("the new secret", async () => (await page.textContent("#secret"))!.includes(firstSecret));

    await page.click("#rotate-secret");
    await eventually("the rotated secrets", async () => (await page.textContent("#secret"))!.includes(firstSecret) && (await page.textContent("#secret"))!.length > firstSecret.length + 10);
    const rotated: string[] = (await t.api("GET", `/subscriptions/${subId}/secrets`)).secrets;
    expect(rotated).toHaveLength(2);
    expect(rotated[1]).toBe(firstSecret);
    expect(await page.textContent("#secret")).toContain(rotated[0]);

    // The platform sends an event; the customer opens its delivery.
    const sent = await t.api("POST", "/events", { type: "order.paid", data: { orderId: "o-77", total: 12.5 }, applicationId: app });
    const deliveryId: string = sent.deliveries.find((d: any) => d.subscriptionId === subId).id;
    await eventually("the delivery", async () => (await t.api("GET", `/deliveries/${encodeURIComponent(deliveryId)}`)).status === "delivered");
    await page.selectOption("#delivery-status", "delivered");
    const deliveryRow = page.locator(`#delivery-rows tr[data-id="${deliveryId}"]`);
    await deliveryRow.waitFor({ timeout: 15_000 });
    await deliveryRow.click();
    await page.locator("#attempts .attempt").first().waitFor({ timeout: 15_000 });
    expect(await page.textContent("#payload")).toContain('"orderId": "o-77"');
    const received = receiver.received.find((r) => r.headers["webhook-id"] === deliveryId)!;
    const headers = await page.textContent("#attempts .request-headers");
    expect(headers).toContain(`webhook-id: ${deliveryId}`);
    expect(headers).toContain(`webhook-signature: ${received.headers["webhook-signature"]}`);
    expect(await page.textContent("#attempts .response-status")).toBe("HTTP 200");
    expect(await page.textContent("#attempts .response-body")).toBe("ok");

    const before = receiver.received.filter((r) => r.path === `/customer-${ctx.backend}`).length;
    await page.click("#replay-delivery");
    await page.locator("#message", { hasText: "Replayed 1 delivery" }).waitFor({ timeout: 15_000 });
    await eventually("the replay at the receiver", async () => receiver.received.filter((r) => r.path === `/customer-${ctx.backend}`).length === before + 1);
    const again = receiver.received.filter((r) => r.path === `/customer-${ctx.backend}`).at(-1)!;
    expect(JSON.parse(again.body).data).toEqual({ orderId: "o-77", total: 12.5 });
    // Recorded as the session's doing.
    const entries = (await t.api("GET", `/audit-log?applicationId=${app}`)).entries as any[];
    const session = entries.find((e) => e.operation === "openPortalSession" && e.resourceId === made.id).actor;
    expect(entries.filter((e) => e.actor === session).map((e) => e.operation)).toEqual(expect.arrayContaining(["createSubscription", "rotateSecrets", "resendEvent"]));
    // Everything went through the documented API (the page's own files, and the browser's favicon, aside).
    expect((await t.undocumentedRequests()).filter((r) => !/^GET \/(portal(\/assets\/[^/]+)?|favicon\.ico)$/.test(r))).toEqual([]);
    expect(pageErrors).toEqual([]);
    await page.context().close();
  }, 180_000);

  it("lets a customer replay many failed deliveries at once, edit, pause, resume, test and delete an endpoint", async () => {
    const path = `/many-${ctx.backend}`;
    let failing = true;
    receiver.answer = (r) => (r.path === path && failing ? 400 : 200);
    const sub = await t.api("POST", "/subscriptions", { url: `${receiver.url}${path}`, eventTypes: ["order.refunded"], maxAttempts: 1, applicationId: app });
    const dead: string[] = [];
    for (const n of [1, 2]) {
      const sent = await t.api("POST", "/events", { type: "order.refunded", data: { n }, applicationId: app });
      dead.push(sent.deliveries.find((d: any) => d.subscriptionId === sub.id).id);
    }
    for (const id of dead) await eventually(`${id} dead`, async () => (await t.api("GET", `/deliveries/${encodeURIComponent(id)}`)).status === "dead");
    failing = false;

    const made = await link();
    const { page, pageErrors } = await openPage();
    page.on("dialog", (d) => void d.accept());
    await page.goto(made.url);
    const row = page.locator(`#endpoint-rows tr[data-id="${sub.id}"]`);
    await row.waitFor({ timeout: 15_000 });
    await row.click();
    await page.selectOption("#delivery-status", "dead");
    for (const id of dead) await page.locator(`#delivery-rows tr[data-id="${id}"]`).waitFor({ timeout: 15_000 });
    await page.check("#select-all");
    await page.click("#replay-selected");
    await page.locator("#message", { hasText: "Replayed 2 deliveries" }).waitFor({ timeout: 15_000 });
    for (const id of dead) await eventually(`${id} delivered after the replay`, async () => (await t.api("GET", `/deliveries/${encodeURIComponent(id)}`)).status === "delivered");

    await page.click("#edit-endpoint");
    await page.fill("#endpoint-description", "edited in the portal");
    await page.click("#endpoint-save");
    await page.locator("#message", { hasText: "Endpoint saved" }).waitFor({ timeout: 15_000 });
    expect((await t.api("GET", `/subscriptions/${sub.id}`)).description).toBe("edited in the portal");
    // The API's own validation and SSRF policy: an address it refuses is refused here too.
    await page.click("#edit-endpoint");
    await page.fill("#endpoint-url", "http://169.254.169.254/latest/meta-data");
    await page.click("#endpoint-save");
    await page.locator("#endpoint-error").waitFor({ state: "visible", timeout: 15_000 });
    expect(await page.textContent("#endpoint-error")).toMatch(/169\.254\.169\.254|destination|refused/i);
    expect((await t.api("GET", `/subscriptions/${sub.id}`)).url).toBe(`${receiver.url}${path}`);
    await page.click("#endpoint-cancel");

    await page.click("#pause-endpoint");
    await eventually("paused", async () => (await t.api("GET", `/subscriptions/${sub.id}`)).paused === true);
    await page.locator("#pause-endpoint", { hasText: "Resume" }).waitFor({ timeout: 15_000 });
    await page.click("#pause-endpoint");
    await eventually("resumed", async () => (await t.api("GET", `/subscriptions/${sub.id}`)).paused === false);

    await page.click("#send-test");
    await eventually("the test event at the receiver", async () => receiver.received.some((r) => r.path === path && JSON.parse(r.body).type === "webhooks.test"));

    await page.click("#delete-endpoint");
    await page.locator("#message", { hasText: "Endpoint deleted" }).waitFor({ timeout: 15_000 });
    const gone = await fetch(`${t.baseUrl}/subscriptions/${sub.id}`, { headers: { authorization: `Bearer ${t.token}` } });
    expect(gone.status).toBe(404);
    expect(await page.locator(`#endpoint-rows tr[data-id="${sub.id}"]`).count()).toBe(0);
    expect(pageErrors).toEqual([]);
    await page.context().close();
  }, 180_000);
});
