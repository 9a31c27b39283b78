/**
 * The embedded default survives being killed: the whole platform on PGlite, as `npm start` runs
 * it, in a child process, SIGKILLed while signed inbound webhooks and outbound events are being
 * written, and started again on the same data directory, several times. Each start opens the
 * database cleanly; every request that got a 2xx before a kill is there afterwards (the inbound
 * event in the inbox, the outbound event in the outbox and delivered).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPglite } from "../../shared/db/pglite.js";
import { PARTNERS_JSON, signed } from "../inbound/helpers.js";
import { startTestReceiver, type TestReceiver } from "../operator/harness.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const TOKEN = "pglite-kill-test-token-0123456789";

interface Running { child: ChildProcess; baseUrl: string; output: () => string }

function startPlatformProcess(dataDir: string): Promise<Running> {
  const child = spawn(process.execPath, ["--import", "tsx", "shared/server/main.ts"], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir, PORT: "0", ADMIN_TOKEN: TOKEN, LOG_LEVEL: "warn",
      PARTNERS: PARTNERS_JSON, ALLOWED_DESTINATIONS: "127.0.0.1", OUTBOUND_POLL_INTERVAL_MS: "100", INBOX_POLL_MS: "100",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the platform did not start within 60 s:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const m = /running at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve({ child, baseUrl: m[1]!, output: () => output });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", (c: Buffer) => { output += c.toString(); });
    child.once("exit", (code, signal) => { clearTimeout(timer); reject(new Error(`the platform exited before it was ready (${code ?? signal}):\n${output}`)); });
  });
}

const exited = (child: ChildProcess) => new Promise<void>((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once("exit", () => r())));

describe("the embedded database, SIGKILLed during writes", () => {
  let dataDir: string;
  let receiver: TestReceiver;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "wh-pglite-kill-"));
    receiver = await startTestReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("opens cleanly after every kill and keeps every acknowledged event", async () => {
    const inboundAcked: string[] = [];
    const outboundAcked: string[] = [];
    let n = 0;
    const kills = 3;
    for (let round = 0; round <= kills; round++) {
      const p = await startPlatformProcess(dataDir);
      const auth = { authorization: `Bearer ${TOKEN}` };
      if (round === 0) {
        const res = await fetch(`${p.baseUrl}/subscriptions`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ url: receiver.url, eventTypes: ["kill.*"] }) });
        expect(res.status).toBe(201);
      }
      if (round === kills) {
        // The last start: let the relay deliver everything, then stop gracefully.
        await waitFor("every acknowledged outbound event delivered", () => {
          const seen = new Set(receiver.received.map((r) => JSON.parse(r.body).id as string));
          return outboundAcked.every((id) => seen.has(id));
        }, 60_000);
        p.child.kill("SIGTERM");
        await exited(p.child);
        break;
      }
      // Writers in flight when the kill lands.
      let writing = true;
      const writer = async () => {
        while (writing) {
          const i = n++;
          const inbound = signed(`kill-in-${i}`, JSON.stringify({ type: "note.added", data: { i } }));
          const results = await Promise.allSettled([
            fetch(`${p.baseUrl}/webhooks/shop`, { method: "POST", headers: inbound.headers, body: new Uint8Array(inbound.body) }),
            fetch(`${p.baseUrl}/events`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ id: `kill-out-${i}`, type: "kill.test", data: { i } }) }),
          ]);
          if (results[0].status === "fulfilled" && results[0].value.ok) inboundAcked.push(`kill-in-${i}`);
          if (results[1].status === "fulfilled" && results[1].value.ok) outboundAcked.push(`kill-out-${i}`);
        }
      };
      const writers = [writer(), writer(), writer()];
      const before = inboundAcked.length;
      await waitFor("some writes acknowledged", () => inboundAcked.length >= before + 20 + Math.floor(Math.random() * 40), 60_000);
      p.child.kill("SIGKILL");
      await exited(p.child);
      writing = false;
      await Promise.all(writers);
    }

    expect(inboundAcked.length).toBeGreaterThan(kills * 20);
    const db = await openPglite(dataDir);
    try {
      const inbox = await db.query<{ id: string }>("SELECT partner_event_id AS id FROM inbox_entries WHERE partner_event_id = ANY($1::text[])", [inboundAcked]);
      expect(new Set(inbox.rows.map((r) => r.id)).size).toBe(inboundAcked.length);
      const events = await db.query<{ id: string }>("SELECT id FROM outbound_events WHERE id = ANY($1::text[])", [outboundAcked]);
      expect(events.rows.length).toBe(outboundAcked.length);
    } finally {
      await db.close();
    }
  }, 300_000);
});

async function waitFor(what: string, probe: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
