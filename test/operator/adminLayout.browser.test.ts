/**
 * Issue 27 items 8 and 15, Must show 4: the admin page at a phone's width (390 px) and a desktop's
 * (1400 px) in Chromium, with rows whose ids and URLs are long. Each width is screenshotted
 * (.scratch/admin-<width>.png, for a person to look at) and checked against what the layout
 * promises: no horizontal overflow, the header's background across the whole width, no table
 * wider than its section; on the desktop, no id or URL broken in the middle of a word (only between its parts).
 */
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeEachBackend } from "../support/databases.js";
import { chromiumAvailable, launchChromium } from "./chromium.js";
import { eventually, makeDeadLetter, usePlatformAndReceiver, type TestPlatform, type TestReceiver } from "./harness.js";

const SCRATCH = fileURLToPath(new URL("../../.scratch/", import.meta.url));
const suite = chromiumAvailable ? describeEachBackend : (title: string) => describe.skip(title, () => { it("needs Chromium", () => {}); });

/** What the layout promises at any width, measured in the page. */
function layout(page: Page) {
  return page.evaluate(() => {
    const doc = document.documentElement;
    const header = document.querySelector("header")!.getBoundingClientRect();
    const tables = [...document.querySelectorAll("section table")].filter((t) => (t as HTMLElement).offsetParent !== null).map((t) => {
      const section = t.closest("section")!.getBoundingClientRect();
      const r = t.getBoundingClientRect();
      return { id: t.closest("section")!.id, overflow: Math.round(r.right - section.right) };
    });
    return {
      viewport: window.innerWidth,
      scrollWidth: doc.scrollWidth,
      header: { left: header.left, width: Math.round(header.width) },
      tablesWiderThanTheirSection: tables.filter((t) => t.overflow > 0),
    };
  });
}

/**
 * Ids and URLs in the rows broken in the middle of a word: the page writes each as words (one text
 * node each) with a break opportunity between them (after ":", "/", "?", "&", "="); a word drawn
 * on two lines is a mid-token break.
 */
function brokenTokens(page: Page) {
  return page.evaluate(() => [...document.querySelectorAll("tbody td code")]
    .filter((c) => (c as HTMLElement).offsetParent !== null)
    .filter((c) => {
      const words: Node[] = [];
      for (const walk = document.createTreeWalker(c, NodeFilter.SHOW_TEXT); walk.nextNode();) words.push(walk.currentNode);
      return words.some((n) => {
      if (!n.textContent) return false;
      const range = document.createRange();
      range.selectNodeContents(n);
      return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size > 1;
      });
    })
    .map((c) => c.textContent));
}

suite("admin page layout in Chromium at 390 px and 1400 px", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  let browser: import("playwright-core").Browser;
  usePlatformAndReceiver(() => ctx.db, (platform, r) => { t = platform; receiver = r; });
  beforeAll(async () => { browser = await launchChromium(); mkdirSync(SCRATCH, { recursive: true }); }, 60_000);
  afterAll(async () => { await browser?.close(); });

  it("fits a phone and a desktop: no horizontal overflow, header across, tables inside; ids whole on the desktop", async () => {
    receiver.answer = 400;
    // Ids and a URL as long as real ones get (a ULID event id, a receiver with a path and a query).
    await makeDeadLetter(t, `${receiver.url}/hooks/orders/v2/acme-corporation/payments?source=webhooks&region=eu-west-1`, `01hzx3k9q8w7v6t5r4p3n2m1b0-${ctx.backend}`);

    for (const width of [390, 1400]) {
      const page = await browser.newPage({ viewport: { width, height: 900 } });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      // The demo's links preselect the lists (issue 27 item 9): here, the dead deliveries.
      await page.goto(`${t.baseUrl}/admin?deliveries=dead&inbox=any`);
      await page.fill("#token", t.token);
      await page.click("#login button[type=submit]");
      await page.locator("#dead-rows tr[data-id]").first().waitFor({ timeout: 15_000 });
      await page.locator("#delivery-rows tr[data-id]").first().waitFor({ timeout: 15_000 });
      expect(await page.inputValue("#inbox-status")).toBe("");
      await expect.poll(() => page.textContent("#inbox-rows")).toContain("No inbox entries.");
      await page.locator("#subscription-rows tr[data-id]").first().waitFor({ timeout: 15_000 });
      await page.screenshot({ path: `${SCRATCH}admin-${width}.png`, fullPage: true });

      const measured = await layout(page);
      expect(measured.scrollWidth, `horizontal overflow at ${width} px`).toBeLessThanOrEqual(measured.viewport);
      expect(measured.header, `header at ${width} px`).toEqual({ left: 0, width: measured.viewport });
      expect(measured.tablesWiderThanTheirSection, `at ${width} px`).toEqual([]);
      if (width >= 1400) expect(await brokenTokens(page), "ids and URLs split over lines at 1400 px").toEqual([]);
      expect(errors).toEqual([]);
      await page.close();
    }
  }, 120_000);

  it("the chart follows the application selector", async () => {
    const app = await t.api("POST", "/applications", { name: `Chart ${ctx.backend}` });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const asked: string[] = [];
    page.on("request", (r) => { if (r.url().includes("/stats/deliveries-per-minute")) asked.push(new URL(r.url()).search); });
    await page.goto(`${t.baseUrl}/admin`);
    await page.fill("#token", t.token);
    await page.click("#login button[type=submit]");
    await page.locator(`#application option[value="${app.id}"]`).waitFor({ state: "attached", timeout: 15_000 });
    await page.selectOption("#application", app.id);
    await eventually("the chart asked for the application", async () => asked.some((q) => q.includes(`applicationId=${app.id}`)));
    // Nothing of the other application's dead letter in this one's legend.
    await expect.poll(() => page.textContent("#legend")).toContain("failed, not retried: 0");
    await page.close();
  }, 60_000);
});

/** Issue 27 item 15: a list longer than a page is paged, and its count is the true one. */
suite("admin page in Chromium: lists beyond 100 rows", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  let browser: import("playwright-core").Browser;
  usePlatformAndReceiver(() => ctx.db, (platform, r) => { t = platform; receiver = r; });
  beforeAll(async () => { browser = await launchChromium(); }, 60_000);
  afterAll(async () => { await browser?.close(); });

  it("counts 105 dead letters, shows 100, and pages on to the other 5 and back", async () => {
    receiver.answer = 400;
    const sub = await t.api("POST", "/subscriptions", { url: `${receiver.url}/many`, eventTypes: ["page.many"], maxAttempts: 1 });
    await t.api("POST", "/events/batch", { events: Array.from({ length: 105 }, (_, n) => ({ id: `many-${String(n).padStart(3, "0")}`, type: "page.many", data: { n } })) });
    await eventually("105 dead letters", async () => (await t.api("GET", `/dead-letters/count?subscriptionId=${sub.id}`)).count === 105, 150_000);

    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${t.baseUrl}/admin`);
    await page.fill("#token", t.token);
    await page.click("#login button[type=submit]");
    await expect.poll(() => page.textContent("#dead-count"), { timeout: 15_000 }).toBe("105");
    await expect.poll(() => page.locator("#dead-rows tr[data-id]").count()).toBe(100);
    expect(await page.textContent("#dead-pager")).toContain("rows 1–100");

    await page.locator("#dead-pager").getByRole("button", { name: "Next ›" }).click();
    await expect.poll(() => page.locator("#dead-rows tr[data-id]").count()).toBe(5);
    expect(await page.textContent("#dead-pager")).toContain("rows 101–105");
    expect(await page.locator("#dead-pager").getByRole("button", { name: "Next ›" }).count()).toBe(0);
    expect(await page.textContent("#dead-count")).toBe("105");
    // The second page holds the last five ids (id order), and stays on screen across a refresh.
    await page.click("#refresh");
    await expect.poll(async () => (await page.locator("#dead-rows tr[data-id]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-id")))).join(","))
      .toBe(["100", "101", "102", "103", "104"].map((n) => `many-${n}:${sub.id}`).join(","));

    await page.locator("#dead-pager").getByRole("button", { name: "‹ Previous" }).click();
    await expect.poll(() => page.locator("#dead-rows tr[data-id]").count()).toBe(100);
    expect(await t.undocumentedRequests()).toEqual([]);
    await page.close();
  }, 240_000);
});
