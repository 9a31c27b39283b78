/**
 * The platform process keeps running while its PostgreSQL database refuses it, and recovers by
 * itself. Two kinds of outage, each while signed inbound webhooks, outbound events and reads of
 * the management API keep coming:
 * 1. the database refuses connections (`ALTER DATABASE … ALLOW_CONNECTIONS false`, its backends
 *    terminated): what an operator, a restart or a failover does;
 * 2. the network to it is cut (a TCP proxy test peer destroys every connection and refuses new ones).
 * Every answer is a 2xx, or a 503 with Retry-After; nothing that got a 2xx is lost (each inbound
 * event is in the inbox, each outbound event reaches the receiver); and afterwards the relay is
 * woken by NOTIFY again: its LISTEN connection is back, and with the poll backstop at 60 s an event
 * still arrives at once. PostgreSQL only: the embedded database has no server to lose.
 */
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { openDatabase } from "../../shared/db/open.js";
import type { Database } from "../../shared/db/port.js";
import { ADMIN_URL, createServerDatabase, postgresAvailable } from "../support/databases.js";
import { startTcpProxyTestPeer, type TcpProxyTestPeer } from "../support/tcpProxyTestPeer.js";
import { startTestPlatform, startTestReceiver, type TestPlatform, type TestReceiver } from "../operator/harness.js";
import { PARTNERS_JSON, signed } from "../inbound/helpers.js";

let skip = false;
beforeAll(async () => {
  if (await postgresAvailable()) return;
  if (process.env.CI && process.env.CI !== "false") throw new Error("PostgreSQL is not available; CI must run the fault tests.");
  console.warn("\n!!! PostgreSQL is not available: the database outage tests are SKIPPED.\n");
  skip = true;
});

interface Traffic {
  answers: { route: string; status: number; retryAfter: string | null }[];
  inboundAcked: string[];
  outboundAcked: string[];
  stop(): Promise<void>;
}

/** Requests in a loop (a few at a time) until stopped, recording every answer. */
function runTraffic(t: TestPlatform, tag: string): Traffic {
  const answers: Traffic["answers"] = [];
  const inboundAcked: string[] = [];
  const outboundAcked: string[] = [];
  let running = true;
  let n = 0;
  const auth = { authorization: `Bearer ${t.token}` };
  const call = async (route: string, url: string, init: RequestInit = {}) => {
    try {
      const res = await fetch(t.baseUrl + url, { ...init, signal: AbortSignal.timeout(15_000) });
      await res.arrayBuffer();
      answers.push({ route, status: res.status, retryAfter: res.headers.get("retry-after") });
      return res.status;
    } catch (error) {
      answers.push({ route, status: 0, retryAfter: String((error as Error).message) });
      return 0;
    }
  };
  const loop = (async () => {
    while (running) {
      const i = n++;
      const inboundId = `${tag}-in-${i}`;
      const inbound = signed(inboundId, JSON.stringify({ type: "note.added", data: { i } }));
      const outboundId = `${tag}-out-${i}`;
      const [inStatus, outStatus] = await Promise.all([
        call("POST /webhooks/:partner", "/webhooks/shop", { method: "POST", headers: inbound.headers, body: new Uint8Array(inbound.body) }),
        call("POST /events", "/events", { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ id: outboundId, type: "fault.test", data: { i } }) }),
        call("GET /deliveries", "/deliveries?limit=5", { headers: auth }),
        call("GET /inbox", "/inbox?limit=5", { headers: auth }),
        call("GET /dead-letters", "/dead-letters", { headers: auth }),
        call("GET /subscriptions", "/subscriptions", { headers: auth }),
        call("GET /healthz", "/healthz"),
      ]);
      if (inStatus >= 200 && inStatus < 300) inboundAcked.push(inboundId);
      if (outStatus >= 200 && outStatus < 300) outboundAcked.push(outboundId);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return { answers, inboundAcked, outboundAcked, async stop() { running = false; await loop; } };
}

async function eventually<T>(what: string, probe: () => Promise<T | false | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: ADMIN_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

const listenConnections = (dbName: string) =>
  admin(async (c) => (await c.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'LISTEN %'", [dbName])).rows[0].n as number);

/** The assertions both outages share, once the database is back. */
async function checkRecovery(t: TestPlatform, receiver: TestReceiver, db: Database, dbName: string, traffic: Traffic, tag: string) {
  const bad = traffic.answers.filter((a) => !((a.status >= 200 && a.status < 300) || (a.status === 503 && a.retryAfter !== null)));
  expect(bad, "every answer is a 2xx or a 503 with Retry-After").toEqual([]);
  expect(traffic.answers.some((a) => a.status === 503), "the outage was seen (some 503)").toBe(true);
  expect(traffic.inboundAcked.length).toBeGreaterThan(0);

  // Nothing acknowledged is lost.
  await eventually("every acknowledged inbound event in the inbox", async () => {
    const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM inbox_entries WHERE partner_event_id = ANY($1::text[])", [traffic.inboundAcked]);
    return rows[0]!.n === traffic.inboundAcked.length;
  });
  await eventually("every acknowledged outbound event delivered", async () => {
    const delivered = new Set(receiver.received.map((r) => JSON.parse(r.body).id as string));
    return traffic.outboundAcked.every((id) => delivered.has(id));
  }, 60_000);

  // The instant wake-up is back: LISTEN again, and an event arrives without waiting for the 60 s poll.
  await eventually("the relay's LISTEN connection back", async () => (await listenConnections(dbName)) === 1);
  const before = receiver.received.length;
  await t.api("POST", "/events", { id: `${tag}-after`, type: "fault.test", data: {} });
  await eventually("the event enqueued after recovery, woken by NOTIFY", async () => receiver.received.slice(before).some((r) => JSON.parse(r.body).id === `${tag}-after`), 20_000);
}

describe("a database outage under traffic (PostgreSQL)", () => {
  let database: Awaited<ReturnType<typeof createServerDatabase>>;
  let dbName: string;
  let db: Database;
  let proxy: TcpProxyTestPeer;
  let t: TestPlatform;
  let receiver: TestReceiver;
  const logLines: { level: number; msg: string }[] = [];
  const logStream = new Writable({
    write(chunk, _e, cb) {
      for (const line of String(chunk).split("\n")) if (line.trim()) logLines.push(JSON.parse(line));
      cb();
    },
  });

  beforeAll(async () => {
    if (skip) return;
    database = await createServerDatabase("wh_fault");
    dbName = new URL(database.url).pathname.slice(1);
    const direct = new URL(database.url);
    proxy = await startTcpProxyTestPeer({ host: direct.hostname, port: Number(direct.port || 5432) });
    const viaProxy = new URL(database.url);
    viaProxy.port = String(proxy.port);
    db = await openDatabase({ databaseUrl: viaProxy.toString() });
    receiver = await startTestReceiver();
    t = await startTestPlatform(db, {
      PARTNERS: PARTNERS_JSON,
      // The backstop poll far away: a delivery that arrives at once was woken by NOTIFY.
      OUTBOUND_POLL_INTERVAL_MS: "60000",
      OUTBOUND_TIMEOUT_MS: "3000",
    }, { logStream });
    await t.api("POST", "/subscriptions", { url: receiver.url, eventTypes: ["fault.*"] });
  }, 60_000);

  afterAll(async () => {
    if (skip) return;
    await t?.stop();
    await receiver?.close();
    await proxy?.close();
    await database?.drop();
  });

  it("refusing connections (ALLOW_CONNECTIONS false, backends terminated): 2xx or 503 + Retry-After, nothing lost, NOTIFY again after", async (ctx) => {
    if (skip) return ctx.skip();
    await eventually("the relay's LISTEN connection", async () => (await listenConnections(dbName)) === 1);
    const traffic = runTraffic(t, "refuse");
    await new Promise((r) => setTimeout(r, 500));
    await admin(async (c) => {
      await c.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS false`);
      await c.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [dbName]);
    });
    await new Promise((r) => setTimeout(r, 3000));
    await admin((c) => c.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS true`));
    await new Promise((r) => setTimeout(r, 2000));
    await traffic.stop();
    await checkRecovery(t, receiver, db, dbName, traffic, "refuse");
    // A readable outage: hundreds of refused requests and polls, a few lines of warnings.
    const refused = traffic.answers.filter((a) => a.status === 503).length;
    // (Each of these test events is quarantined, "not an order event", with one line each: that is
    // an outcome per event, not the outage.)
    const loud = logLines.filter((l) => l.level >= 40 && !l.msg.startsWith("inbox entry quarantined"));
    const byMessage = new Map<string, number>();
    for (const l of loud) byMessage.set(l.msg, (byMessage.get(l.msg) ?? 0) + 1);
    console.log(`outage: ${refused} refused requests, ${loud.length} warning lines:\n${[...byMessage].map(([m, k]) => `  ${k} × ${m}`).join("\n")}`);
    expect(refused).toBeGreaterThan(100);
    expect(loud.length, [...byMessage.keys()].join("\n")).toBeLessThan(20);
  }, 120_000);

  it("a cut network (every connection destroyed, new ones refused): the same", async (ctx) => {
    if (skip) return ctx.skip();
    const traffic = runTraffic(t, "cut");
    await new Promise((r) => setTimeout(r, 500));
    proxy.cut();
    await new Promise((r) => setTimeout(r, 3000));
    proxy.restore();
    await new Promise((r) => setTimeout(r, 2000));
    await traffic.stop();
    await checkRecovery(t, receiver, db, dbName, traffic, "cut");
  }, 120_000);
});
