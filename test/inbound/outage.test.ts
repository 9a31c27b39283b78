/**
 * Must-show 6: the database stops during ingest. Senders get 503 (with Retry-After), never a 2xx
 * for an event that is not stored; after the restart, every event that got a 2xx is processed.
 *
 * This needs a PostgreSQL server we may stop, so it starts a throwaway cluster of its own
 * (initdb + pg_ctl from /usr/lib/postgresql/<v>/bin, as the `postgres` OS user, in a temp dir, on
 * a free port) and crashes it with `pg_ctl stop -m immediate` (no shutdown checkpoint: restart
 * runs crash recovery, so only what was really committed survives). The machine's main cluster
 * is never touched. PGlite is embedded in the process: it has no "server down" to test.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, chownSync, readdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../shared/config.js";
import { openDatabase } from "../../shared/db/open.js";
import type { Database } from "../../shared/db/port.js";
import { mapPlatformError, startPlatform, type Platform } from "../../shared/platform.js";
import { createHttpServer } from "../../shared/server/router.js";
import { createLogger } from "../../shared/telemetry/log.js";
import { createInboxProcessor } from "../../shared/inbound/worker.js";
import orderHandlers from "../../examples/orders/handlers.js";
import type { InboxProcessor } from "../../shared/inbound/processor.js";
import { orderEvent, orderProcessor, PARTNERS_JSON, signed, TestClock } from "./helpers.js";
import { freePort } from "../support/freePort.js";

function findBin(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, "bin", "pg_ctl"))).sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], "bin") : undefined;
}

const BIN = findBin();
const canRun = Boolean(BIN) && process.getuid?.() === 0;
if (!canRun) {
  const msg = "outage test needs PostgreSQL server binaries (/usr/lib/postgresql/*/bin) and root (to run them as the postgres user): SKIPPED";
  if (process.env.CI) throw new Error(`${msg}. CI must run it.`);
  console.warn(`\n!!! ${msg}\n`);
}


class ThrowawayCluster {
  readonly dir = mkdtempSync(join(tmpdir(), "wh-outage-"));
  constructor(readonly port: number) {
    chownSync(this.dir, Number(execFileSync("id", ["-u", "postgres"]).toString().trim()), Number(execFileSync("id", ["-g", "postgres"]).toString().trim()));
  }
  private pg(tool: string, args: string[]) {
    execFileSync("runuser", ["-u", "postgres", "--", join(BIN!, tool), ...args], { stdio: "pipe", timeout: 60_000 });
  }
  init() {
    this.pg("initdb", ["-D", join(this.dir, "data"), "-A", "trust", "-U", "postgres", "--no-sync"]);
  }
  start() {
    this.pg("pg_ctl", ["-D", join(this.dir, "data"), "-l", join(this.dir, "log"), "-w", "-o", `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1`, "start"]);
  }
  crash() {
    this.pg("pg_ctl", ["-D", join(this.dir, "data"), "-m", "immediate", "-w", "stop"]);
  }
  destroy() {
    try { this.pg("pg_ctl", ["-D", join(this.dir, "data"), "-m", "immediate", "-w", "stop"]); } catch { /* already stopped */ }
    rmSync(this.dir, { recursive: true, force: true });
  }
  get url() {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }
}

interface Sent { id: string; orderId: string; statuses: number[]; retryAfter: (string | null)[] }

(canRun ? describe : describe.skip)("database stopped during ingest [postgres, throwaway cluster]", () => {
  let cluster: ThrowawayCluster;
  let db: Database;
  let platform: Platform;
  let processor: InboxProcessor;
  let server: Server;
  let base: string;

  beforeAll(async () => {
    cluster = new ThrowawayCluster(await freePort());
    cluster.init();
    cluster.start();
    db = await openDatabase({ databaseUrl: cluster.url, poolSize: 8 });
    const config = loadConfig({ ADMIN_TOKEN: "outage-test-admin-token", PARTNERS: PARTNERS_JSON, LOG_LEVEL: "silent", INBOX_POLL_MS: "50", INBOX_LEASE_SECONDS: "2" });
    // Only the inbound area's worker runs here (the routes are the platform's): this test is about ingest and the inbox.
    platform = await startPlatform(config, { db, logger: createLogger({ level: "silent" }), workers: false });
    processor = createInboxProcessor({ config, db, logger: createLogger({ level: "silent" }) }, orderHandlers).start();
    server = createHttpServer({ routes: platform.routes, adminToken: config.ADMIN_TOKEN, maxBodyBytes: config.MAX_PAYLOAD_BYTES, mapError: mapPlatformError });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 120_000);

  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    await processor?.stop();
    await platform?.stop();
    await db?.close().catch(() => {});
    cluster?.destroy();
  });

  it("answers 503 while the database is down, never 2xx for an unstored event; after restart every 2xx'd event is processed", async () => {
    const sent: Sent[] = [];
    let seq = 0;
    const send = async (s: Sent) => {
      const d = signed(s.id, orderEvent(s.orderId, "order.created"));
      const res = await fetch(`${base}/webhooks/shop`, { method: "POST", headers: d.headers, body: new Uint8Array(d.body) });
      await res.arrayBuffer();
      s.statuses.push(res.status);
      s.retryAfter.push(res.headers.get("retry-after"));
      return res.status;
    };
    const fresh = (): Sent => {
      const n = ++seq;
      const s = { id: `out-${n}`, orderId: `out-order-${n}`, statuses: [], retryAfter: [] };
      sent.push(s);
      return s;
    };

    // Four senders, each sending one new event after another until told to stop.
    let phase: "up" | "down" | "restarted" | "stop" = "up";
    const seen = { up: 0, down503: 0, restarted2xx: 0 };
    const senders = Array.from({ length: 4 }, async () => {
      while (phase !== "stop") {
        const status = await send(fresh());
        if (phase === "up" && status < 300) seen.up++;
        if (phase === "down" && status === 503) seen.down503++;
        if (phase === "restarted" && status < 300) seen.restarted2xx++;
      }
    });
    const waitFor = async (cond: () => boolean) => {
      for (let i = 0; i < 2000 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
    };

    await waitFor(() => seen.up >= 40);
    cluster.crash(); // in the middle of the traffic
    phase = "down";
    await waitFor(() => seen.down503 >= 40);
    cluster.start();
    phase = "restarted";
    await waitFor(() => seen.restarted2xx >= 40);
    phase = "stop";
    await Promise.all(senders);

    const all = sent.flatMap((s) => s.statuses);
    expect(seen.down503).toBeGreaterThanOrEqual(40);
    // Only three answers exist: stored (202), duplicate (200), not stored (503). No 500, no other.
    expect([...new Set(all)].sort()).toEqual([202, 503].filter((c) => all.includes(c)));
    for (const s of sent) s.statuses.forEach((st, i) => { if (st === 503) expect(s.retryAfter[i]).toBe("5"); });

    // No 2xx for an unstored event: every event acknowledged is in the inbox, right after restart.
    const acked = sent.filter((s) => s.statuses.some((st) => st < 300));
    const stored = new Set(
      (await db.query<{ partner_event_id: string }>("SELECT partner_event_id FROM inbox_entries")).rows.map((r) => r.partner_event_id),
    );
    expect(acked.filter((s) => !stored.has(s.id)).map((s) => s.id)).toEqual([]);

    // The partner retries what got a 503, as a partner does, until acknowledged.
    for (const s of sent.filter((x) => !x.statuses.some((st) => st < 300))) {
      for (let i = 0; i < 50 && (await send(s)) === 503; i++) await new Promise((r) => setTimeout(r, 20));
      expect(s.statuses.at(-1)).toBeLessThan(300);
    }

    // Every event is processed: the inbox processor runs; a drain here only speeds it up.
    await orderProcessor(db, new TestClock(new Date(Date.now() + 60_000))).drain();
    const done = await db.query<{ partner_event_id: string; status: string }>("SELECT partner_event_id, status FROM inbox_entries");
    expect(done.rows.filter((r) => r.status !== "processed")).toEqual([]);
    expect(new Set(done.rows.map((r) => r.partner_event_id))).toEqual(new Set(sent.map((s) => s.id)));
    const orders = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM inbound_entities WHERE machine = 'order' AND state = 'created'");
    expect(Number(orders.rows[0]?.n)).toBe(sent.length);
  }, 180_000);
});
