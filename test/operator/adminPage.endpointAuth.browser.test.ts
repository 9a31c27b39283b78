/**
 * Issue 29 on the admin page, in Chromium: a subscription's endpoint auth shown under its event
 * types (never a secret), and the recent operational events listed with what each is about.
 */
import { describe, expect, it } from "vitest";
import { scanForAlerts } from "../../shared/alerts.js";
import { describeEachBackend } from "../support/databases.js";
import { chromiumAvailable, usePlatformInChromium } from "./chromium.js";
import { makeDeadLetter, type TestPlatform, type TestReceiver } from "./harness.js";

const suite = chromiumAvailable ? describeEachBackend : (title: string) => describe.skip(title, () => { it("needs Chromium", () => {}); });

suite("admin page: endpoint auth and operational events", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  const openPage = usePlatformInChromium(() => ctx.db, (platform, r) => { t = platform; receiver = r; });

  it("shows a subscription's auth without its secret, and the recent operational events", async () => {
    const sub = await t.api("POST", "/subscriptions", { url: `${receiver.url}/basic`, eventTypes: ["page.*"], auth: { kind: "basic", username: "page-user", password: "page-password-3344" } });
    receiver.answer = 400;
    const { deliveryId, subscriptionId } = await makeDeadLetter(t, `${receiver.url}/dead`, `ops-${ctx.backend}`);
    await scanForAlerts(ctx.db); // alert.dead_letter and delivery.exhausted, events of the platform's application

    const { page, pageErrors } = await openPage();
    await page.goto(`${t.baseUrl}/admin`);
    await page.fill("#token", t.token);
    await page.click("#login button[type=submit]");
    const row = page.locator(`#subscription-rows tr[data-id="${sub.id}"]`);
    await row.waitFor({ timeout: 15_000 });
    expect(await row.textContent()).toContain("auth basic (user page-user)");
    expect(await page.content()).not.toContain("page-password-3344");

    const ops = page.locator("#operational-rows tr", { hasText: "alert.dead_letter" });
    await ops.first().waitFor({ timeout: 15_000 });
    expect(await ops.first().textContent()).toContain(deliveryId);
    // delivery.exhausted names the subscription and how many of its deliveries died.
    const exhausted = page.locator("#operational-rows tr", { hasText: "delivery.exhausted" });
    await exhausted.first().waitFor({ timeout: 15_000 });
    expect(await exhausted.first().textContent()).toContain(`${subscriptionId} (1 dead letter)`);
    expect(pageErrors).toEqual([]);
  }, 120_000);
});
