/**
 * Issue 27 items 13 and 16: what a newcomer meets over HTTP in the first hour. The root leads to
 * the admin page; one filter name for an event's type on every list (the old one kept as an alias);
 * /openapi.json names its server and the package's version; /docs reads as a reference (fields,
 * their types in words, an example body), not as raw JSON Schema.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { eventually, usePlatformOnOwnDatabase, type TestPlatform, type TestReceiver } from "./harness.js";

let t: TestPlatform;
let receiver: TestReceiver;
usePlatformOnOwnDatabase((platform, r) => { t = platform; receiver = r; });

const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };

describe("the first hour over HTTP", { timeout: 60_000 }, () => {
  it("GET / leads to the admin page", async () => {
    const res = await fetch(`${t.baseUrl}/`, { redirect: "manual" });
    expect(res.status).toBe(302);
    expect(new URL(res.headers.get("location")!, `${t.baseUrl}/`).pathname).toBe("/admin");
    const followed = await fetch(`${t.baseUrl}/`);
    expect(followed.status).toBe(200);
    expect(await followed.text()).toContain("<title>webhooks admin</title>");
  });

  it("filters an event's type as eventType on every list; /events?type= stays, as an alias", async () => {
    receiver.answer = 400;
    await t.api("POST", "/subscriptions", { url: `${receiver.url}/f`, eventTypes: ["filter.*"], maxAttempts: 1 });
    await t.api("POST", "/events", { id: "filter-a", type: "filter.a", data: {} });
    await t.api("POST", "/events", { id: "filter-b", type: "filter.b", data: {} });
    await eventually("two dead letters", async () => (await t.api("GET", "/dead-letters?limit=10")).deadLetters.length === 2);
    const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
    expect(ids((await t.api("GET", "/events?eventType=filter.a")).events)).toEqual(["filter-a"]);
    expect(ids((await t.api("GET", "/events?type=filter.a")).events)).toEqual(["filter-a"]);
    expect(ids((await t.api("GET", "/dead-letters?eventType=filter.b")).deadLetters)).toEqual(["filter-b:" + (await t.api("GET", "/subscriptions")).subscriptions[0].id]);
    await expect(t.api("GET", "/events?type=filter.a&eventType=filter.b")).rejects.toThrow(/400.*eventType/);
    // The document names eventType, and says what `type` is.
    const doc = await (await fetch(`${t.baseUrl}/openapi.json`)).json();
    const params = doc.paths["/events"].get.parameters.map((p: { name: string; deprecated?: boolean }) => `${p.name}${p.deprecated ? " (deprecated)" : ""}`);
    expect(params).toContain("eventType");
    expect(params).toContain("type (deprecated)");
  });

  it("/openapi.json names its server and carries the package's version", async () => {
    const doc = await (await fetch(`${t.baseUrl}/openapi.json`)).json();
    expect(doc.info.version).toBe(version);
    expect(doc.servers).toEqual([expect.objectContaining({ url: "/" })]);
  });

  it("/docs shows each body's fields with their types in words and an example, no raw JSON Schema", async () => {
    const html = await (await fetch(`${t.baseUrl}/docs`)).text();
    const create = html.slice(html.indexOf('id="createSubscription"'), html.indexOf("</section>", html.indexOf('id="createSubscription"')));
    expect(create).toMatch(/<td><code>eventTypes<\/code><\/td><td>array of strings \(1–100\)<\/td><td>yes<\/td>/);
    expect(create).toMatch(/<td><code>maxAttempts<\/code><\/td><td>integer, 1–100<\/td><td>no<\/td>/);
    expect(create).toMatch(/<td><code>signatureScheme<\/code><\/td><td>one of <code>v1<\/code>, <code>v1a<\/code><\/td>/);
    expect(create).toContain("Example");
    expect(create).toContain("&#34;eventTypes&#34;: [");
    for (const raw of ["additionalProperties", "exclusiveMinimum", "&#34;type&#34;: &#34;object&#34;", "(?:(?:\\d"]) expect(html).not.toContain(raw);
  });
});
