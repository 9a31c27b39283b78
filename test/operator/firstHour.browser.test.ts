/**
 * The admin page shows the configuration problems of issue 27 (items 2 and 3) where an operator
 * looks: /healthz's problems above everything (secrets the relay cannot decrypt with its
 * ENCRYPTION_KEYS), the waiting delivery's reason in its row, and a subscription whose URL the
 * destination policy refuses flagged "refused" with the setting named. In Chromium, PGlite only
 * (the data comes from the API, whose two backends test/operator/firstHour.test.ts covers).
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useKeyring } from "../../shared/crypto/activeKeyring.js";
import { parseEncryptionKeys } from "../../shared/crypto/keyring.js";
import { createSubscription } from "../../shared/outbound/index.js";
import { openTestDatabase } from "../support/databases.js";
import { chromiumAvailable, launchChromium } from "./chromium.js";
import { eventually, startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "./harness.js";

describe.skipIf(!chromiumAvailable)("the admin page shows why nothing is sent", () => {
  let close: () => Promise<void>;
  let t: TestPlatform;
  let receiver: TestReceiver;
  let browser: Browser;
  beforeAll(async () => {
    const opened = await openTestDatabase("pglite");
    close = opened.close;
    receiver = await startTestReceiver();
    t = await startTestPlatform(opened.db, { ALLOWED_DESTINATIONS: "" });
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
    await receiver?.close();
    await close?.();
  });

  it("problems from /healthz above everything, the delivery's reason, a refused subscription flagged", async () => {
    const db = t.platform.db;
    // Written as a process with another key would (the README's snippet with its own ENCRYPTION_KEYS),
    // and to a local receiver this platform's policy (no ALLOWED_DESTINATIONS) refuses.
    const own = parseEncryptionKeys(process.env.ENCRYPTION_KEYS!);
    useKeyring(parseEncryptionKeys(`elsewhere:${Buffer.alloc(32, 9).toString("base64")}`));
    let sub: { id: string };
    try {
      sub = await createSubscription(db, { url: `${receiver.url}/page`, eventTypes: ["page.*"] });
    } finally {
      useKeyring(own);
    }
    await t.api("POST", "/events", { id: "page-1", type: "page.test", data: {} });
    const deliveryId = `page-1:${sub.id}`;
    await eventually("the delivery put back with its reason", async () => (await t.api("GET", `/deliveries/${deliveryId}`)).lastError);

    const page = await browser.newPage();
    const pageErrors: string[] = [];
    page.on("pageerror", (e) => pageErrors.push(e.message));
    await page.goto(`${t.baseUrl}/admin`);
    await page.fill("#token", t.token);
    await page.click("#login button[type=submit]");

    const problems = page.locator("#problems li");
    await problems.first().waitFor({ timeout: 15_000 });
    expect(await problems.allTextContents()).toEqual([expect.stringMatching(/1 delivery waits unsent: the relay cannot decrypt the secrets of subscription .*ENCRYPTION_KEYS/)]);
    expect(await problems.first().textContent()).toContain(sub.id);

    const row = page.locator(`#delivery-rows tr[data-id="${deliveryId}"]`);
    await row.waitFor({ timeout: 15_000 });
    expect(await row.textContent()).toMatch(/secrets unreadable: .*"elsewhere"/);

    const subRow = page.locator(`#subscription-rows tr[data-id="${sub.id}"]`);
    await subRow.waitFor({ timeout: 15_000 });
    expect(await subRow.locator(".badge").allTextContents()).toContain("refused");
    expect(await subRow.textContent()).toMatch(/127\.0\.0\.1 is refused by the destination policy.*ALLOWED_DESTINATIONS/);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 120_000);
});
