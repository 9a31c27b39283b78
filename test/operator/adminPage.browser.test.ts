/**
 * Must show 1: an operator opens the admin page in a real browser, enters the token, finds the
 * dead letter this test created, replays it, and sees it delivered; then pauses, resumes, tests
 * and deletes its subscription; every request the page made is a documented operation.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeEachBackend } from "../support/databases.js";
import { chromiumAvailable, usePlatformInChromium } from "./chromium.js";
import { makeDeadLetter, type TestPlatform, type TestReceiver } from "./harness.js";

const suite = chromiumAvailable ? describeEachBackend : (title: string) => describe.skip(title, () => { it("needs Chromium", () => {}); });

suite("admin page in Chromium", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  const openPage = usePlatformInChromium(() => ctx.db, (platform, r) => { t = platform; receiver = r; });

  it("replays a dead letter from the page and shows it delivered; pauses, resumes, tests and deletes its subscription", async () => {
    receiver.answer = 400; // permanent: dead at the first attempt
    const { deliveryId, subscriptionId } = await makeDeadLetter(t, `${receiver.url}/hook`, `browser-${ctx.backend}`);

    const { page, pageErrors } = await openPage();
    await page.goto(`${t.baseUrl}/admin`);
    expect(await page.isVisible("#login")).toBe(true);
    expect(await page.isVisible("#session")).toBe(false); // nothing but the token form before sign-in

    // A wrong token is refused with a message, and the data stays hidden.
    await page.fill("#token", "x".repeat(24));
    await page.click("#login button[type=submit]");
    await expect.poll(() => page.textContent("#login-error")).toContain("refused");
    expect(await page.isVisible("#app")).toBe(false);

    await page.fill("#token", t.token);
    await page.click("#login button[type=submit]");
    const row = page.locator(`#dead-rows tr[data-id="${deliveryId}"]`);
    await row.waitFor({ timeout: 15_000 });
    expect(await row.textContent()).toContain("permanent");

    // The endpoint is fixed; the operator replays this one dead letter.
    receiver.answer = 200;
    await row.getByRole("button", { name: "Replay" }).click();
    await row.waitFor({ state: "detached", timeout: 15_000 });

    await page.selectOption("#delivery-status", "delivered");
    const delivered = page.locator(`#delivery-rows tr[data-id="${deliveryId}"]`);
    // The list on screen may still be the one loaded before the filter changed (where the replayed
    // delivery was pending): wait for the filtered, refreshed list to show it delivered.
    await expect.poll(async () => ((await delivered.count()) > 0 ? delivered.locator(".badge").first().textContent() : null), { timeout: 15_000 }).toBe("delivered");

    // Its attempts: the refused one and the one after the replay.
    await delivered.getByRole("button", { name: "Attempts" }).click();
    await expect.poll(async () => (await page.locator("#attempt-rows tr").allTextContents()).join("|")).toMatch(/permanent.*400|400.*permanent/);
    const attempts = await page.locator("#attempt-rows tr").allTextContents();
    expect(attempts.some((a) => a.includes("delivered") && a.includes("200"))).toBe(true);

    // The token lives in sessionStorage only, and the server saw a real second attempt.
    expect(await page.evaluate(() => sessionStorage.getItem("webhooks.adminToken"))).toBe(t.token);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(receiver.received.filter((r) => r.headers["webhook-id"] === deliveryId).map((r) => r.status)).toEqual([400, 200]);

    // The subscription's new operations, from its row: pause, resume, a test event, delete.
    page.on("dialog", (dialog) => void dialog.accept());
    const subRow = () => page.locator(`#subscription-rows tr[data-id="${subscriptionId}"]`);
    await subRow().getByRole("button", { name: "Pause" }).click();
    await expect.poll(async () => (await t.api("GET", `/subscriptions/${subscriptionId}`)).paused).toBe(true);
    await expect.poll(() => subRow().textContent()).toContain("paused");
    await subRow().getByRole("button", { name: "Resume" }).click();
    await expect.poll(async () => (await t.api("GET", `/subscriptions/${subscriptionId}`)).paused).toBe(false);
    await subRow().getByRole("button", { name: "Send test" }).click();
    await expect.poll(() => receiver.received.some((r) => r.path === "/hook" && JSON.parse(r.body).type === "webhooks.test"), { timeout: 15_000 }).toBe(true);
    await subRow().getByRole("button", { name: "Delete" }).click();
    await subRow().waitFor({ state: "detached", timeout: 15_000 });
    expect((await t.api("GET", "/subscriptions?limit=1000")).subscriptions.map((s: { id: string }) => s.id)).not.toContain(subscriptionId);

    expect(pageErrors).toEqual([]);
    // The page used documented operations only (its own files aside).
    expect(await t.undocumentedRequests()).toEqual([]);
  }, 90_000);
});

/**
 * Must show 4 of issue 17: the same page, logged in with an application key, shows only that
 * application's subscriptions, deliveries and dead letters, hides the operator's sections (the
 * chart, the inbox, the application filter), and manages its own dead letters; with a read-only
 * key of it, no button that changes something. The default application's rows stay out of sight.
 */
suite("admin page in Chromium, logged in with an application key", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  const openPage = usePlatformInChromium(() => ctx.db, (platform, r) => { t = platform; receiver = r; });

  it("shows only its application's data, without the operator's sections; a read-only key gets no buttons", async () => {
    receiver.answer = 400;
    // Another tenant's rows (the default application's): a subscription and a dead letter.
    const theirs = await makeDeadLetter(t, `${receiver.url}/theirs`, `theirs-${ctx.backend}`);
    const app = await t.api("POST", "/applications", { name: "Acme" });
    const sub = await t.api("POST", "/subscriptions", { url: `${receiver.url}/acme`, eventTypes: ["acme.*"], maxAttempts: 1, applicationId: app.id });
    const sent = await t.api("POST", "/events", { id: `acme-${ctx.backend}`, type: "acme.order", data: { n: 1 }, applicationId: app.id });
    const mine: string = sent.deliveries[0].id;
    await expect.poll(async () => (await t.api("GET", `/deliveries/${encodeURIComponent(mine)}`)).status, { timeout: 15_000 }).toBe("dead");
    const key = await t.api("POST", "/keys", { applicationId: app.id, description: "Acme portal" });

    const { page, pageErrors } = await openPage();
    const seen: string[] = [];
    page.on("request", (r) => seen.push(`${r.method()} ${new URL(r.url()).pathname}`));
    await page.goto(`${t.baseUrl}/admin`);
    await page.fill("#token", key.key);
    await page.click("#login button[type=submit]");
    const row = page.locator(`#dead-rows tr[data-id="${mine}"]`);
    await row.waitFor({ timeout: 15_000 });
    await expect.poll(() => page.textContent("#scope")).toContain(`application Acme (${app.id})`);

    // Only its own rows: one dead letter, one subscription; the other tenant's nowhere on the page.
    // Each table is filled by its own request: wait for the subscriptions' too, not only the dead letters'.
    await expect.poll(() => page.locator(`#subscription-rows tr[data-id="${sub.id}"]`).count(), { timeout: 15_000 }).toBe(1);
    expect(await page.locator("#dead-rows tr").count()).toBe(1);
    expect(await page.locator("#subscription-rows tr").count()).toBe(1);
    await page.selectOption("#delivery-status", "dead");
    await expect.poll(async () => (await page.locator("#delivery-rows tr").allTextContents()).join("|")).toContain(mine);
    const text = await page.textContent("body");
    for (const other of [theirs.deliveryId, theirs.subscriptionId]) expect(text).not.toContain(other);
    // The operator's sections are hidden, and were never asked for.
    for (const id of ["#overview", "#quarantine", "#tenancy"]) expect(await page.isVisible(id), id).toBe(false);
    expect(await page.locator("#subscriptions th:visible").allTextContents()).not.toContain("Application");
    expect(seen.filter((r) => /\/(inbox|stats|applications)(\/|\?|$)/.test(r) && !r.endsWith(`/applications/${app.id}`))).toEqual([]);

    // It manages its own: the endpoint is fixed and it replays its dead letter.
    receiver.answer = 200;
    await row.getByRole("button", { name: "Replay" }).click();
    await row.waitFor({ state: "detached", timeout: 15_000 });
    await expect.poll(async () => (await t.api("GET", `/deliveries/${encodeURIComponent(mine)}`)).status, { timeout: 15_000 }).toBe("delivered");
    expect((await t.api("GET", `/deliveries/${encodeURIComponent(theirs.deliveryId)}`)).status).toBe("dead");
    const audit = await t.api("GET", `/audit-log?actor=${key.id}&operation=replayDeadLetter`);
    expect(audit.entries.map((e: { resourceId: string }) => e.resourceId)).toEqual([mine]);

    // A read-only key of the same application: the same rows, no button that changes anything.
    const reader = await t.api("POST", "/keys", { applicationId: app.id, access: "read" });
    await page.click("#signout");
    await page.fill("#token", reader.key);
    await page.click("#login button[type=submit]");
    await page.locator(`#subscription-rows tr[data-id="${sub.id}"]`).waitFor({ timeout: 15_000 });
    await expect.poll(() => page.textContent("#scope")).toContain("read-only");
    // The rows are rendered again for the read-only key by their own request, which may come back
    // after the scope line (a clean-clone run saw the write key's 3 buttons still there).
    await expect.poll(() => page.locator(`#subscription-rows tr[data-id="${sub.id}"] button`).count(), { timeout: 15_000 }).toBe(0);
    expect(await page.isVisible("#dead-replay-all")).toBe(false);

    expect(pageErrors).toEqual([]);
    expect(await t.undocumentedRequests()).toEqual([]);
  }, 90_000);
});

/**
 * Issue 15 (ordered delivery): the page shows an ordered subscription's waiting keys; a key a dead
 * letter blocks has a Skip button; skipped, the dead letter stays dead and the next delivery goes.
 */
suite("admin page in Chromium: ordering keys", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  const openPage = usePlatformInChromium(() => ctx.db, (platform, r) => { t = platform; receiver = r; });

  it("shows a blocked key with what waits behind it, and skips it", async () => {
    receiver.answer = ({ path }) => (path === "/ordered" ? 400 : 200);
    const sub = await t.api("POST", "/subscriptions", { url: `${receiver.url}/ordered`, eventTypes: ["page.ordered"], ordered: true, maxAttempts: 1 });
    await t.api("POST", "/events/batch", { events: [1, 2, 3].map((n) => ({ id: `page-o${n}`, type: "page.ordered", data: n, orderingKey: "cart/9" })) });
    const first = `page-o1:${sub.id}`;
    await expect.poll(async () => (await t.api("GET", `/subscriptions/${sub.id}/ordering-keys`)).orderingKeys[0]?.blocked, { timeout: 15_000 }).toBe(true);
    receiver.answer = 200;

    const { page, pageErrors } = await openPage();
    await page.goto(`${t.baseUrl}/admin`);
    await page.fill("#token", t.token);
    await page.click("#login button[type=submit]");
    const row = page.locator(`#ordering-rows tr[data-id="${sub.id} cart/9"]`);
    await row.waitFor({ timeout: 15_000 });
    const text = await row.textContent();
    expect(text).toContain("blocked");
    expect(text).toContain(first);
    expect(text).toContain("permanent");
    expect(await row.locator("td").nth(3).textContent()).toBe("2"); // two wait behind it

    await row.getByRole("button", { name: "Skip" }).click();
    await expect.poll(async () => (await t.api("GET", `/deliveries/${encodeURIComponent(`page-o3:${sub.id}`)}`)).status, { timeout: 15_000 }).toBe("delivered");
    expect((await t.api("GET", `/deliveries/${encodeURIComponent(first)}`)).status).toBe("dead");
    expect(receiver.received.filter((r) => r.path === "/ordered").map((r) => r.headers["webhook-id"])).toEqual([first, `page-o2:${sub.id}`, `page-o3:${sub.id}`]);
    await expect.poll(() => page.textContent("#ordering-rows"), { timeout: 15_000 }).toContain("No ordering key has work.");

    expect(pageErrors).toEqual([]);
    expect(await t.undocumentedRequests()).toEqual([]);
  }, 90_000);
});
