/**
 * The admin page behind a prefix, as the cloud stacks mount the management API (`<base>/api`): in
 * a real browser, the page at /api/admin loads its script and style from /api/admin/ and calls
 * the API under /api, never at the host's root (where, in the cloud, nothing of ours answers).
 * Served here by the GCP management function under the Functions Framework's own server.
 */
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { http } from "@google-cloud/functions-framework";
import { getTestServer } from "@google-cloud/functions-framework/testing";
import { managementHttp } from "../../functions/gcp/managementHttp.js";
import { createGcpRuntime } from "../../functions/gcp/runtime.js";
import { migrate } from "../../shared/db/migrate.js";
import { openPostgres } from "../../shared/db/postgres.js";
import { createServerDatabase, postgresAvailable } from "../support/databases.js";
import { chromiumAvailable, launchChromium } from "./chromium.js";

const TOKEN = "base-path-browser-test-token-0123456789";
const serverUp = await postgresAvailable();
const suite = chromiumAvailable && serverUp ? describe : (title: string) => describe.skip(title, () => { it("needs Chromium and PostgreSQL", () => {}); });

suite("the admin page under /api, in Chromium", () => {
  let browser: Browser;
  let server: Server;
  let base: string;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const database = await createServerDatabase();
    drop = database.drop;
    const owner = openPostgres({ connectionString: database.url, max: 1 });
    await migrate(owner);
    await owner.close();
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("WEBHOOKS_") && k !== "ADMIN_TOKEN")) as Record<string, string>;
    const runtime = createGcpRuntime({
      ...env, GOOGLE_CLOUD_PROJECT: "browser-test", DATABASE_URL: database.url, WEBHOOKS_DATABASE_TLS: "disable",
      WEBHOOKS_MANAGEMENT_BASE_PATH: "/api", ADMIN_TOKEN: TOKEN, ALLOWED_DESTINATIONS: "127.0.0.1", LOG_LEVEL: "silent",
    });
    http("management-browser", (req, res) => managementHttp(runtime, req, res));
    server = getTestServer("management-browser");
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
    await drop?.();
  });

  it("loads its files and its data from /api, and makes no request outside it", async () => {
    const created = await fetch(`${base}/api/subscriptions`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ url: "http://127.0.0.1:9/hook", eventTypes: ["browser.base"], description: "under /api" }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };

    const page = await browser.newPage();
    const requested: string[] = [];
    const pageErrors: string[] = [];
    page.on("request", (r) => requested.push(new URL(r.url()).pathname));
    page.on("pageerror", (e) => pageErrors.push(e.message));
    await page.goto(`${base}/api/admin`);
    await page.fill("#token", TOKEN);
    await page.click("#login button[type=submit]");
    await page.locator(`#subscription-rows tr[data-id="${id}"]`).waitFor({ timeout: 15_000 });

    expect(pageErrors).toEqual([]);
    expect(requested).toEqual(expect.arrayContaining(["/api/admin", "/api/admin/app.js", "/api/admin/app.css", "/api/subscriptions"]));
    expect(requested.filter((p) => !p.startsWith("/api/") && p !== "/api")).toEqual([]);
  });
});
