/**
 * What a newcomer meets when the platform cannot deliver for a reason of its own configuration
 * (issue 27, items 2 and 3): the reason is where they look, not only in the log.
 *   - Restarted without ALLOWED_DESTINATIONS, a local receiver's deliveries are dead-lettered as
 *     destination_refused: the start warns about the active subscriptions the policy now refuses,
 *     the dead letter's reason and the subscription's health name the setting.
 *   - A subscription whose secrets were sealed by a process with other ENCRYPTION_KEYS: its
 *     deliveries wait; the delivery's lastError, /healthz and the admin page's data say why.
 */
import { Writable } from "node:stream";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { useKeyring } from "../../shared/crypto/activeKeyring.js";
import { parseEncryptionKeys } from "../../shared/crypto/keyring.js";
import type { Database } from "../../shared/db/port.js";
import { createSubscription } from "../../shared/outbound/index.js";
import { openTestDatabase } from "../support/databases.js";
import { eventually, startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "./harness.js";

function logCapture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({ write(chunk, _e, cb) { for (const l of String(chunk).split("\n")) if (l) lines.push(JSON.parse(l)); cb(); } });
  return { lines, stream };
}

describe("the first hour: configuration problems are shown where one looks", () => {
  let db: Database;
  let close: () => Promise<void>;
  let receiver: TestReceiver;
  let platform: TestPlatform | undefined;
  beforeAll(async () => {
    ({ db, close } = await openTestDatabase("pglite"));
    receiver = await startTestReceiver();
  }, 180_000); // initdb and migrations on a busy machine
  afterEach(async () => {
    await platform?.stop();
    platform = undefined;
  });
  afterAll(async () => {
    await receiver.close();
    await close();
  });

  it("restarted without ALLOWED_DESTINATIONS: a warning at start, the setting named in the dead letter and the subscription's health", async () => {
    // First run: the local receiver allowed, a subscription to it.
    platform = await startTestPlatform(db, { ALLOWED_DESTINATIONS: "127.0.0.1" });
    const sub = await platform.api("POST", "/subscriptions", { url: `${receiver.url}/local`, eventTypes: ["local.*"] });
    await platform.stop();

    // Restarted without the setting.
    const log = logCapture();
    platform = await startTestPlatform(db, { ALLOWED_DESTINATIONS: "" }, { logStream: log.stream });
    const warning = log.lines.find((l) => l.level === 40 && String(l.msg).includes("ALLOWED_DESTINATIONS"));
    expect(warning, "a warning at start naming the setting").toBeDefined();
    expect(String(warning!.msg)).toContain("1 active subscription");
    expect(JSON.stringify(warning)).toContain(sub.id);

    const shown = await platform.api("GET", `/subscriptions/${sub.id}`);
    expect(shown.health.destinationRefused).toMatch(/ALLOWED_DESTINATIONS/);
    expect(shown.health.destinationRefused).toContain("127.0.0.1");
    const listed = await platform.api("GET", "/subscriptions");
    expect(listed.subscriptions.find((s: { id: string }) => s.id === sub.id).health.destinationRefused).toBe(shown.health.destinationRefused);

    await platform.api("POST", "/events", { id: "refused-1", type: "local.test", data: {} });
    const dead = await eventually("the delivery dead-lettered", async () => (await platform!.api("GET", `/dead-letters?subscriptionId=${sub.id}`)).deadLetters[0]);
    expect(dead.deadReason).toMatch(/^permanent failure: destination_refused/);
    expect(dead.deadReason).toMatch(/ALLOWED_DESTINATIONS/);
    expect(receiver.received).toHaveLength(0);
    await platform.stop();

    // Allowed again: nothing refused, no warning.
    const quiet = logCapture();
    platform = await startTestPlatform(db, { ALLOWED_DESTINATIONS: "127.0.0.1" }, { logStream: quiet.stream });
    expect(quiet.lines.filter((l) => String(l.msg).includes("ALLOWED_DESTINATIONS"))).toEqual([]);
    expect((await platform.api("GET", `/subscriptions/${sub.id}`)).health.destinationRefused).toBeNull();
    await platform.api("DELETE", `/subscriptions/${sub.id}`);
  });

  it("secrets sealed under other ENCRYPTION_KEYS: the delivery says why it waits, and so do /healthz and the admin page's data", async () => {
    platform = await startTestPlatform(db);
    const healthy = await (await fetch(`${platform.baseUrl}/healthz`)).json();
    expect(healthy).toEqual({ status: "ok", database: "pglite" });

    // Another process (the README's snippet) with another key writes a subscription.
    const own = parseEncryptionKeys(process.env.ENCRYPTION_KEYS!);
    useKeyring(parseEncryptionKeys(`snippet:${Buffer.alloc(32, 7).toString("base64")}`));
    let sub: { id: string };
    try {
      sub = await createSubscription(db, { url: `${receiver.url}/other-key`, eventTypes: ["other.*"] });
    } finally {
      useKeyring(own);
    }
    await platform.api("POST", "/events", { id: "other-key-1", type: "other.test", data: {} });

    const delivery = await eventually("the delivery put back with its reason", async () => {
      const d = await platform!.api("GET", `/deliveries/other-key-1:${sub.id}`);
      return d.lastError ? d : undefined;
    });
    expect(delivery).toMatchObject({ status: "pending", attempts: 0 });
    expect(delivery.lastError).toMatch(/ENCRYPTION_KEYS/);
    expect(delivery.lastError).toContain('"snippet"');
    // The deliveries list (the admin page's table) carries the same.
    const listed = await platform.api("GET", `/deliveries?subscriptionId=${sub.id}`);
    expect(listed.deliveries[0].lastError).toBe(delivery.lastError);

    const res = await fetch(`${platform.baseUrl}/healthz`);
    expect(res.status).toBe(200); // up: the database answers; what is wrong is said in the body
    const health = await res.json();
    expect(health.status).toBe("degraded");
    expect(health.problems).toHaveLength(1);
    expect(health.problems[0]).toMatch(/1 delivery waits/);
    expect(health.problems[0]).toMatch(/ENCRYPTION_KEYS/);
    expect(health.problems[0]).toContain(sub.id);
    expect(receiver.received.filter((r) => r.path === "/other-key")).toHaveLength(0);

    // Fixed (the subscription deleted: its pending delivery is cancelled): healthy again.
    await platform.api("DELETE", `/subscriptions/${sub.id}`);
    expect(await (await fetch(`${platform.baseUrl}/healthz`)).json()).toEqual({ status: "ok", database: "pglite" });
  });
});
