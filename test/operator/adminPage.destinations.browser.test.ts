/**
 * Issue 31 item 5 on the admin page, in Chromium: each subscription's destination shown by kind,
 * where it is, its settings and who the relay sends as, with no secret part of its credentials
 * anywhere in the page; an endpoint's subscription still shows its URL.
 */
import { describe, expect, it } from "vitest";
import { describeEachBackend } from "../support/databases.js";
import { chromiumAvailable, usePlatformInChromium } from "./chromium.js";
import type { TestPlatform, TestReceiver } from "./harness.js";

const suite = chromiumAvailable ? describeEachBackend : (title: string) => describe.skip(title, () => { it("needs Chromium", () => {}); });

const AWS_SECRET = "page31-aws-secret-access-key";
const CONNECTION_KEY = "page31SharedAccessKey=";
const AMQP_PASSWORD = "page31-amqp-password";
const PRIVATE_KEY = "-----BEGIN PRIVATE KEY-----\nMIIpage31privatekey\n-----END PRIVATE KEY-----\n";

suite("admin page: destinations beyond HTTP", (ctx) => {
  let t: TestPlatform;
  let receiver: TestReceiver;
  const openPage = usePlatformInChromium(() => ctx.db, (platform, r) => { t = platform; receiver = r; });

  it("shows each destination's kind, settings and who it sends as, and never a secret", async () => {
    const create = (destination: Record<string, unknown>) => t.api("POST", "/subscriptions", { destination, eventTypes: ["page.*"] });
    const sqs = await create({ kind: "sqs", queueUrl: "https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo", credentials: { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: AWS_SECRET } });
    const bus = await create({ kind: "eventbridge", eventBus: "orders", region: "eu-central-1" });
    const topic = await create({ kind: "servicebus", topic: "order-events", credentials: { connectionString: `Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=send-only;SharedAccessKey=${CONNECTION_KEY}` } });
    const pubsub = await create({ kind: "pubsub", topic: "projects/acme-analytics/topics/orders", credentials: { clientEmail: "relay@acme-analytics.iam.gserviceaccount.com", privateKey: PRIVATE_KEY } });
    const rabbit = await create({ kind: "rabbitmq", url: "amqp://127.0.0.1:5672/", exchange: "orders", routingKey: "order.paid", credentials: { username: "guest", password: AMQP_PASSWORD } });
    const http = await t.api("POST", "/subscriptions", { url: `${receiver.url}/plain`, eventTypes: ["page.*"] });

    const { page, pageErrors } = await openPage();
    await page.goto(`${t.baseUrl}/admin`);
    await page.fill("#token", t.token);
    await page.click("#login button[type=submit]");
    const cell = async (id: string) => {
      const row = page.locator(`#subscription-rows tr[data-id="${id}"]`);
      await row.waitFor({ timeout: 15_000 });
      return (await row.locator("td").nth(4).innerText()).replace(/\s+/g, " ").trim();
    };
    expect(await page.locator("#subscriptions th").nth(4).textContent()).toBe("Destination");
    expect(await cell(sqs.id)).toBe("sqs https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo region eu-west-1, FIFO sends as access key AKIAIOSFODNN7EXAMPLE");
    expect(await cell(bus.id)).toBe("eventbridge orders region eu-central-1, source multicloud-webhooks, detail-type the event's type sends as the relay's own cloud identity");
    expect(await cell(topic.id)).toBe("servicebus acme.servicebus.windows.net topic order-events sends as connection string (policy send-only)");
    expect(await cell(pubsub.id)).toBe("pubsub projects/acme-analytics/topics/orders sends as service account relay@acme-analytics.iam.gserviceaccount.com");
    expect(await cell(rabbit.id)).toBe('rabbitmq amqp://127.0.0.1:5672/ exchange "orders", routing key "order.paid" sends as user guest');
    expect(await cell(http.id)).toBe(`${receiver.url}/plain`);
    const html = await page.content();
    for (const secret of [AWS_SECRET, CONNECTION_KEY, AMQP_PASSWORD, "MIIpage31privatekey"]) expect(html).not.toContain(secret);
    expect(pageErrors).toEqual([]);
  }, 120_000);
});
