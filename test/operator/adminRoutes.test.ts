/** The admin page's HTTP surface: static files with a strict CSP, and the stats endpoint. */
import { expect, it } from "vitest";
import { describeEachBackend } from "../support/databases.js";
import { makeDeadLetter, usePlatformAndReceiver, type TestPlatform, type TestReceiver } from "./harness.js";

describeEachBackend("admin routes", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  usePlatformAndReceiver(() => ctx.db, (platform, r) => { t = platform; receiver = r; });

  it("serves the page and its files without a token, with a CSP that allows only their own script", async () => {
    const page = await fetch(`${t.baseUrl}/admin`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    const html = await page.text();
    expect(html).toContain('<script type="module" src="/admin/app.js">');
    expect(html).not.toMatch(/<script>(?!<)/); // no inline script: the CSP would block it
    const js = await fetch(`${t.baseUrl}/admin/app.js`);
    expect(js.headers.get("content-type")).toContain("text/javascript");
    expect(await js.text()).toContain("sessionStorage");
    expect((await fetch(`${t.baseUrl}/admin/app.css`)).status).toBe(200);
    const missing = await fetch(`${t.baseUrl}/admin/secrets.txt`);
    expect(missing.status).toBe(404);
    expect((await missing.json()).error.code).toBe("not_found");
  });

  it("the page's script never inserts server data as HTML", async () => {
    const js = await (await fetch(`${t.baseUrl}/admin/app.js`)).text();
    expect(js).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });

  it("stats require the token and validate minutes", async () => {
    expect((await fetch(`${t.baseUrl}/stats/deliveries-per-minute`)).status).toBe(401);
    await expect(t.api("GET", "/stats/deliveries-per-minute?minutes=0")).rejects.toThrow(/400 .*invalid_request.*minutes/);
    await expect(t.api("GET", "/stats/deliveries-per-minute?minutes=abc")).rejects.toThrow(/400/);
  });

  it("stats count a refused attempt and its dead letter in the current minutes", async () => {
    receiver.answer = 400;
    await makeDeadLetter(t, `${receiver.url}/stats`, `stats-${ctx.backend}`);
    const stats = await t.api("GET", "/stats/deliveries-per-minute?minutes=5");
    expect(stats.minutes).toBe(5);
    expect(stats.series).toHaveLength(5);
    const total = (k: string) => stats.series.reduce((n: number, b: Record<string, number>) => n + b[k]!, 0);
    expect([total("failed"), total("deadLettered"), total("delivered")]).toEqual([1, 1, 0]);
  });
});
