/**
 * Issue 30 must-show 5: the admin page lists the event catalogue (name, version, validation,
 * deprecation, description, the JSON Schema and examples folded under their names) and shows a
 * subscription's filter and transformation, in Chromium. An operator sees the chosen application's
 * catalogue; an application key sees its own application's and no other's. And the forwarding
 * partners' destinations (issue 30 item 4), with their filters and transformations.
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateSecret } from "../../shared/outbound/signature.js";
import { describeEachBackend } from "../support/databases.js";
import { chromiumAvailable, launchChromium, usePlatformInChromium } from "./chromium.js";
import { startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "./harness.js";

const suite = chromiumAvailable ? describeEachBackend : (title: string) => describe.skip(title, () => { it("needs Chromium", () => {}); });

suite("admin page in Chromium: the event catalogue, a subscription's filter and transformation", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  const openPage = usePlatformInChromium(() => ctx.db, (platform, r) => { t = platform; receiver = r; });

  it("lists the catalogue with its schemas, and shows each subscription's filter and transformation as given", async () => {
    const schema = { type: "object", required: ["amount"], properties: { amount: { type: "number", minimum: 0 } } };
    await t.api("POST", "/event-types", { name: `cat.paid.${ctx.backend}`, description: "An order was paid", schema, examples: [{ amount: 42 }], validation: "enforce" });
    await t.api("POST", "/event-types", { name: `cat.legacy.${ctx.backend}`, description: "Replaced by cat.paid", deprecated: true });
    const filter = { "data.amount": { $gt: 100 }, "data.currency": "EUR" };
    const transformation = "(event) => ({ body: { text: `Paid ${event.data.amount} <b>EUR</b>` } })";
    const filtered = await t.api("POST", "/subscriptions", { url: `${receiver.url}/big`, eventTypes: [`cat.paid.${ctx.backend}`], filter, transformation });
    const plain = await t.api("POST", "/subscriptions", { url: `${receiver.url}/all`, eventTypes: [`cat.paid.${ctx.backend}`] });
    // Another application's event type: not in the default application's catalogue.
    const other = await t.api("POST", "/applications", { name: `Cat other ${ctx.backend}` });
    await t.api("POST", "/event-types", { name: `cat.other.${ctx.backend}`, applicationId: other.id });

    const { page, pageErrors } = await openPage();
    await page.goto(`${t.baseUrl}/admin`);
    await page.fill("#token", t.token);
    await page.click("#login button[type=submit]");

    const paid = page.locator(`#catalogue-rows tr[data-id="cat.paid.${ctx.backend}"]`);
    await paid.waitFor({ timeout: 15_000 });
    const paidText = await paid.textContent();
    for (const shown of ["v1", "enforce", "An order was paid", "app_default"]) expect(paidText).toContain(shown);
    // The schema is folded: one click shows it as text, whole.
    const schemaText = paid.locator("details.source", { hasText: "schema" }).locator("pre");
    expect(await schemaText.isVisible()).toBe(false);
    await paid.locator("summary", { hasText: "schema" }).click();
    expect(JSON.parse((await schemaText.textContent())!)).toEqual(schema);
    await paid.locator("summary", { hasText: "examples (1)" }).click();
    expect(JSON.parse((await paid.locator("details.source", { hasText: "examples" }).locator("pre").textContent())!)).toEqual({ amount: 42 });
    const legacy = page.locator(`#catalogue-rows tr[data-id="cat.legacy.${ctx.backend}"]`);
    expect(await legacy.locator(".badge").allTextContents()).toEqual(["off", "deprecated"]);
    expect(await page.locator(`#catalogue-rows tr[data-id="cat.other.${ctx.backend}"]`).count()).toBe(0);

    // The subscription's filter as given, its transformation's source as text (never as HTML).
    const row = page.locator(`#subscription-rows tr[data-id="${filtered.id}"]`);
    await row.waitFor({ timeout: 15_000 });
    expect(JSON.parse((await row.locator("td.content .filter code").textContent())!)).toEqual(filter);
    await row.locator("summary", { hasText: "transformation" }).click();
    expect(await row.locator("td.content pre").textContent()).toBe(transformation);
    expect(await row.locator("td.content b").count()).toBe(0);
    // One without either shows neither.
    const plainRow = page.locator(`#subscription-rows tr[data-id="${plain.id}"]`);
    expect(await plainRow.locator("td.content").count()).toBe(0);

    // Choosing the other application shows its catalogue instead.
    await page.selectOption("#application", other.id);
    await page.locator(`#catalogue-rows tr[data-id="cat.other.${ctx.backend}"]`).waitFor({ timeout: 15_000 });
    await expect.poll(() => paid.count()).toBe(0);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 90_000);

  it("an application key sees its own application's catalogue only", async () => {
    const app = await t.api("POST", "/applications", { name: `Cat tenant ${ctx.backend}` });
    await t.api("POST", "/event-types", { name: `tenant.only.${ctx.backend}`, applicationId: app.id, description: "Theirs" });
    const key = await t.api("POST", "/keys", { applicationId: app.id, access: "read" });
    const { page, pageErrors } = await openPage();
    await page.goto(`${t.baseUrl}/admin`);
    await page.fill("#token", key.key);
    await page.click("#login button[type=submit]");
    const theirs = page.locator(`#catalogue-rows tr[data-id="tenant.only.${ctx.backend}"]`);
    await theirs.waitFor({ timeout: 15_000 });
    expect(await theirs.textContent()).toContain("Theirs");
    // No application column for a key confined to one, and the default application's types absent.
    expect(await page.locator("#catalogue thead th", { hasText: "Application" }).isVisible()).toBe(false);
    expect(await page.locator(`#catalogue-rows tr[data-id^="cat."]`).count()).toBe(0);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);
});

suite("admin page in Chromium: inbound forwarding destinations", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  let browser: Browser;
  const secret = generateSecret();
  beforeAll(async () => {
    receiver = await startTestReceiver();
    t = await startTestPlatform(ctx.db, { PARTNERS: JSON.stringify({
      shop: { scheme: "standard-webhooks", secrets: [secret], forward: true },
      legacy: { scheme: "standard-webhooks", secrets: [secret], forward: { url: `${receiver.url}/legacy`, secrets: [generateSecret()] } },
      idle: { scheme: "standard-webhooks", secrets: [secret], forward: true },
      quiet: { scheme: "standard-webhooks", secrets: [secret] },
    }) });
    browser = await launchChromium();
  }, 180_000);
  afterAll(async () => { await browser?.close(); await t?.stop(); await receiver?.close(); });

  it("lists each forwarding partner's destinations with filter, transformation and source; a partner without any says so", async () => {
    const filter = { "data.data.currency": "EUR" };
    const eur = await t.api("POST", "/inbound/partners/shop/forwarding/destinations", { name: "eur", url: `${receiver.url}/eur`, filter, transformation: "(e) => ({ body: e.data })" });
    await t.api("POST", "/inbound/partners/shop/forwarding/destinations", { name: "all", url: `${receiver.url}/all` });
    const page = await browser.newPage();
    const pageErrors: string[] = [];
    page.on("pageerror", (e) => pageErrors.push(e.message));
    await page.goto(`${t.baseUrl}/admin`);
    await page.fill("#token", t.token);
    await page.click("#login button[type=submit]");

    const row = page.locator('#forwarding-rows tr[data-id="shop eur"]');
    await row.waitFor({ timeout: 15_000 });
    expect(JSON.parse((await row.locator(".filter code").textContent())!)).toEqual(filter);
    await row.locator("summary", { hasText: "transformation" }).click();
    expect(await row.locator("pre").textContent()).toBe("(e) => ({ body: e.data })");
    expect(await row.textContent()).toContain(eur.subscriptionId);
    expect(await page.locator('#forwarding-rows tr[data-id="shop all"]').textContent()).toContain("every event");
    // The PARTNERS forward.url is the default destination, marked as the configuration's.
    expect(await page.locator('#forwarding-rows tr[data-id="legacy default"] .badge').allTextContents()).toEqual(["healthy", "PARTNERS"]);
    expect(await page.locator('#forwarding-rows tr[data-id="idle "]').textContent()).toContain("no destinations: stored, not forwarded");
    // A partner that does not forward is not listed.
    expect(await page.locator('#forwarding-rows tr[data-id^="quiet"]').count()).toBe(0);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);
});
