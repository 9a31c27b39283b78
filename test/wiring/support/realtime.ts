/**
 * Issue 24's wiring scenario, the same on the three clouds: the relay bundle run the way its stack
 * schedules it (the stack's interval, timeout or budget, and concurrency: overlapping runs
 * included) while events arrive from three sources at a steady rate: the management API, a plain
 * SQL transaction of "the user's application" calling `enqueue`, and inbound forwarding (the
 * processor's inbox write). It measures commit → receiver for each event, and checks that across
 * the handovers between runs nothing is lost and nothing is sent twice; a delivery that fails with
 * 500 is retried within seconds of its backoff's due time and a `Retry-After: 3` is honoured.
 *
 * Time: the stacks start a run every 60 s and let it run 120 s (AWS, GCP) or 55 s per timer
 * (Azure). Played at that pace, three clouds on two Node versions would add a quarter of an hour to
 * CI, so the clock plays the stack's schedule `TIME_SCALE` times faster (default 0.5; set
 * WIRING_RELAY_TIME_SCALE=1 for real time): every duration the stack sets (interval, timeout,
 * budget) and the attempt timeout, which sets the time a run keeps to finish what it holds, are
 * scaled alike, so runs overlap as they do in the cloud. Latencies are not scaled: they are what
 * the relay does between its runs' starts and stops.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { expect } from "vitest";
import { Webhook } from "standardwebhooks";
import type { Database } from "../../../shared/db/port.js";
import { enqueue } from "../../../shared/outbound/enqueue.js";
import { createSubscription } from "../../../shared/outbound/subscriptions.js";
import { listenLocal } from "./receivers.js";

export const TIME_SCALE = Number(process.env.WIRING_RELAY_TIME_SCALE ?? "0.5");
if (!(TIME_SCALE > 0 && TIME_SCALE <= 1)) throw new Error(`WIRING_RELAY_TIME_SCALE must be in (0, 1]; got ${process.env.WIRING_RELAY_TIME_SCALE}`);
/** A duration of the stack's, in seconds, as the clock plays it (ms). */
export const scaled = (seconds: number): number => Math.round(seconds * 1000 * TIME_SCALE);
/** The attempt timeout (OUTBOUND_TIMEOUT_MS, not set by the stacks: 10 s), scaled like the rest. */
export const SCALED_ATTEMPT_TIMEOUT = { OUTBOUND_TIMEOUT_MS: String(scaled(10)) };

/**
 * For the tests that tick the relay once and look at what it did: a run that drains what is due
 * and returns (`relayMode: "scheduled"`'s run), not the stacks' default listening run, which lasts
 * its whole budget. Only those tests add it; the real-time scenario runs the stack's mode.
 */
export const ONE_DRAIN = { WEBHOOKS_RELAY_MODE: "scheduled" };

export const FORWARD_PARTNER = "rtfwd";
export const FORWARD_PARTNER_SECRET = `whsec_${Buffer.from("realtime-partner-secret-32bytes!").toString("base64")}`;
const FORWARD_SECRET = `whsec_${Buffer.from("realtime-forward-secret-32bytes!").toString("base64")}`;
export const RECEIVER_SECRET = `whsec_${Buffer.from("realtime-receiver-secret-32byte!").toString("base64")}`;

export interface Arrival { at: number; path: string; status: number }

/** The receiver of the scenario: records each request by `webhook-id` (the delivery) with its arrival time. */
export interface RealtimeReceiver {
  url: string;
  arrivals: Map<string, Arrival[]>;
  unverified: number;
  /** The partners entry for inbound forwarding to this receiver (put it in the stack's partners secret). */
  partners(): Record<string, unknown>;
  close(): Promise<void>;
}

export async function startRealtimeReceiver(): Promise<RealtimeReceiver> {
  const arrivals = new Map<string, Arrival[]>();
  const state = { unverified: 0 };
  const answer = (path: string, seen: number): { status: number; headers?: Record<string, string> } => {
    // /flaky: 500 then 200 (the backoff's retry); /later: 503 with Retry-After: 3 then 200.
    if (path === "/flaky" && seen === 0) return { status: 500 };
    if (path === "/later" && seen === 0) return { status: 503, headers: { "retry-after": "3" } };
    return { status: 200 };
  };
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const at = Date.now();
      const body = Buffer.concat(chunks).toString("utf8");
      const path = req.url ?? "/";
      const secret = path === "/fwd" ? FORWARD_SECRET : RECEIVER_SECRET;
      try { new Webhook(secret).verify(body, req.headers as Record<string, string>); } catch { state.unverified++; }
      const id = String(req.headers["webhook-id"]);
      const list = arrivals.get(id) ?? [];
      const reply = answer(path, list.length);
      list.push({ at, path, status: reply.status });
      arrivals.set(id, list);
      res.writeHead(reply.status, reply.headers).end();
    });
  };
  const server = await listenLocal(() => createServer(handler));
  const url = `http://127.0.0.1:${server.port}`;
  return {
    url,
    arrivals,
    get unverified() { return state.unverified; },
    partners: () => ({ [FORWARD_PARTNER]: { scheme: "standard-webhooks", secrets: [FORWARD_PARTNER_SECRET], forward: { url: `${url}/fwd`, secrets: [FORWARD_SECRET] } } }),
    close: server.close,
  };
}

/** One timer of a stack's schedule, as the clock plays it. */
export interface PlayedTimer {
  name: string;
  /** First tick after the clock starts (Azure's offset timer: half an interval). */
  offsetMs: number;
  intervalMs: number;
  /**
   * Azure's timers are singletons: a tick while the previous run of the same timer works is
   * skipped (the host holds it back). Lambda and Cloud Run start a run per tick.
   */
  singleton: boolean;
  /** One run to its end; resolves with the function's summary. */
  run(): Promise<unknown>;
}

export interface RunRecord { timer: string; startedAt: number; endedAt?: number; summary?: unknown; error?: string }

/**
 * Plays the timers until `stop` (no tick after it; the runs in flight go on until their budget,
 * or until the test's teardown stops their processes, as a platform would cut them off). Every
 * run is recorded.
 */
export function playSchedule(timers: PlayedTimer[]): { runs: RunRecord[]; stop(): void } {
  const runs: RunRecord[] = [];
  const inFlight = new Set<Promise<void>>();
  const handles: NodeJS.Timeout[] = [];
  const busy = new Map<string, boolean>();
  const tick = (timer: PlayedTimer) => {
    if (timer.singleton && busy.get(timer.name)) return;
    busy.set(timer.name, true);
    const record: RunRecord = { timer: timer.name, startedAt: Date.now() };
    runs.push(record);
    const done: Promise<void> = timer.run().then(
      (summary) => { record.summary = summary; },
      (error: Error) => { record.error = error.message; },
    ).finally(() => { record.endedAt = Date.now(); busy.set(timer.name, false); inFlight.delete(done); });
    inFlight.add(done);
  };
  for (const timer of timers) {
    handles.push(setTimeout(() => {
      tick(timer);
      handles.push(setInterval(() => tick(timer), timer.intervalMs));
    }, timer.offsetMs));
  }
  return {
    runs,
    stop() {
      for (const h of handles) { clearTimeout(h); clearInterval(h); }
    },
  };
}

export interface RealtimeSources {
  db: Database;
  receiver: RealtimeReceiver;
  /** Sends one event through the management function (POST /events); resolves once it answered 201. */
  sendViaApi(type: string, data: Record<string, unknown>): Promise<void>;
  /** Hands one verified inbound event of FORWARD_PARTNER to the processor, as the queue would; resolves once it settled. */
  forwardInbound(eventId: string, body: string): Promise<void>;
}

/**
 * "Within a few seconds of its due time": the relay looks every second (OUTBOUND_POLL_INTERVAL_MS,
 * INBOX_POLL_MS), so a retry is typically under 1 s late; 5 s leaves room for a loaded machine.
 */
const RETRY_WITHIN_MS = 5_000;

export interface Percentiles { n: number; p50: number; p99: number; max: number }
const percentiles = (values: number[]): Percentiles => {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  return { n: sorted.length, p50: at(0.5), p99: at(0.99), max: sorted.at(-1)! };
};

export interface RealtimeResult {
  latency: Record<"api" | "sql" | "inbound", Percentiles>;
  /** Second attempt after a 500: how long after the due time the backoff set (ms). */
  retryLateMs: number;
  /** Second attempt after `Retry-After: 3`: how long after the first (ms). */
  retryAfterMs: number;
  runs: RunRecord[];
  /** When the load ran (from the first event sent to the last delivered). */
  load: { from: number; to: number };
}

/**
 * The scenario: subscriptions, then `perSource` events per source spread over `loadMs` while the
 * schedule plays; waits for every delivery, then checks each was attempted once.
 */
export async function realtimeScenario(sources: RealtimeSources, schedule: PlayedTimer[], options: { perSource?: number; loadMs?: number; cloud: string; during?: () => Promise<void> }): Promise<RealtimeResult> {
  const perSource = options.perSource ?? 100;
  const loadMs = options.loadMs ?? 30_000;
  const { db, receiver } = sources;
  const tag = `${options.cloud}${Date.now().toString(36)}`;
  const sub = await createSubscription(db, { url: `${receiver.url}/ok`, eventTypes: [`rt.${tag}.*`], secrets: [RECEIVER_SECRET] });
  const flaky = await createSubscription(db, { url: `${receiver.url}/flaky`, eventTypes: [`rtflaky.${tag}`], secrets: [RECEIVER_SECRET] });
  const later = await createSubscription(db, { url: `${receiver.url}/later`, eventTypes: [`rtlater.${tag}`], secrets: [RECEIVER_SECRET] });
  const clock = playSchedule(schedule);
  const sent = { api: new Map<string, number>(), sql: new Map<string, number>(), inbound: new Map<string, number>() };
  try {
    // The load starts with the second run, so the first run's end (a handover) falls within it.
    await waitFor("the second relay run to start", async () => clock.runs.length > 1, 120_000);
    const loadStart = Date.now();
    const gap = loadMs / perSource;
    const load = async (source: keyof typeof sent, one: (i: number) => Promise<string>) => {
      const start = Date.now();
      for (let i = 0; i < perSource; i++) {
        const wait = start + i * gap - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const t0 = Date.now(); // before the commit: the latency measured is an upper bound
        const deliveryId = await one(i);
        sent[source].set(deliveryId, t0);
      }
    };
    const retries = (async () => {
      await new Promise((r) => setTimeout(r, loadMs / 4));
      const f = await db.transaction((tx) => enqueue(tx, { type: `rtflaky.${tag}`, data: { n: 1 } }));
      const l = await db.transaction((tx) => enqueue(tx, { type: `rtlater.${tag}`, data: { n: 1 } }));
      const ids = { flaky: `${f.eventId}:${flaky.id}`, later: `${l.eventId}:${later.id}` };
      // The due time the backoff set after the 500 (its jitter is the relay's), read once the outcome is written.
      let dueAt = 0;
      await waitFor("the 500's outcome written", async () => {
        const r = await db.query<{ attempts: number; at: Date; leased: boolean }>("SELECT attempts, next_attempt_at AS at, lease_token IS NOT NULL AS leased FROM outbound_deliveries WHERE id = $1", [ids.flaky]);
        if (r.rows[0]!.attempts < 1 || r.rows[0]!.leased) return false;
        dueAt = new Date(r.rows[0]!.at).getTime();
        return true;
      }, 30_000);
      return { ...ids, dueAt };
    })();
    const [, , , retryIds] = await Promise.all([
      load("api", async (i) => {
        const id = `evt_rt_api_${tag}_${i}`;
        await sources.sendViaApi(`rt.${tag}.api`, { i, id });
        const r = await db.query<{ id: string }>("SELECT d.id FROM outbound_deliveries d JOIN outbound_events e ON e.id = d.event_id WHERE e.type = $1 AND e.body::jsonb -> 'data' ->> 'id' = $2", [`rt.${tag}.api`, id]);
        expect(r.rows, `the API's event ${id} in the outbox`).toHaveLength(1);
        return r.rows[0]!.id;
      }),
      load("sql", async (i) => {
        // The user's own transaction: their write and the event commit together.
        const { eventId } = await db.transaction(async (tx) => {
          await tx.query("SELECT 1");
          return enqueue(tx, { id: `evt_rt_sql_${tag}_${i}`, type: `rt.${tag}.sql`, data: { i } });
        });
        return `${eventId}:${sub.id}`;
      }),
      load("inbound", async (i) => {
        const partnerEventId = `evt_rt_in_${tag}_${i}`;
        await sources.forwardInbound(partnerEventId, JSON.stringify({ type: "partner.thing", id: partnerEventId, i }));
        const r = await db.query<{ id: string }>(
          "SELECT d.id FROM outbound_deliveries d JOIN inbox_entries i ON d.event_id = 'fwd_' || i.id WHERE i.partner_name = $1 AND i.partner_event_id = $2",
          [FORWARD_PARTNER, partnerEventId]);
        expect(r.rows, `the forward of ${partnerEventId} in the outbox`).toHaveLength(1);
        return r.rows[0]!.id;
      }),
      retries,
      options.during?.(),
    ]);
    const all = [...sent.api.keys(), ...sent.sql.keys(), ...sent.inbound.keys(), retryIds.flaky, retryIds.later];
    await waitFor("every event delivered", async () => all.every((id) => receiver.arrivals.get(id)?.some((a) => a.status === 200)), 30_000);
    // Read the retry's due time back: the backoff's jitter is the relay's.
    const latency = Object.fromEntries((Object.keys(sent) as (keyof typeof sent)[]).map((source) => [
      source, percentiles([...sent[source]].map(([id, t0]) => receiver.arrivals.get(id)![0]!.at - t0)),
    ])) as RealtimeResult["latency"];
    const flakyHits = receiver.arrivals.get(retryIds.flaky)!;
    const laterHits = receiver.arrivals.get(retryIds.later)!;
    expect(flakyHits.map((a) => a.status)).toEqual([500, 200]);
    expect(laterHits.map((a) => a.status)).toEqual([503, 200]);
    await checkOnce(db, receiver, all);
    return { latency, retryLateMs: flakyHits[1]!.at - retryIds.dueAt, retryAfterMs: laterHits[1]!.at - laterHits[0]!.at, runs: clock.runs, load: { from: loadStart, to: Date.now() } };
  } finally {
    clock.stop();
  }
}

/**
 * Every delivery arrived once (the retried ones: their failure, then once), is delivered, and
 * counted as many attempts as requests arrived: nothing lost, nothing sent twice. (A delivery may
 * have been claimed more often than attempted: a run that stops gives back what it claimed and
 * had not started, and the next run claims it again. That is not a duplicate.)
 */
async function checkOnce(db: Database, receiver: RealtimeReceiver, ids: string[]): Promise<void> {
  const twice = ids.filter((id) => receiver.arrivals.get(id)!.filter((a) => a.status === 200).length !== 1);
  expect(twice, "deliveries that arrived more than once").toEqual([]);
  // The receiver answers before the relay writes the outcome (completions are written in batches
  // after the answers), so the last few are still leased when the last request arrives: wait for
  // the writes. An outcome that is never written shows here as a timeout, and a run cut off after
  // sending makes the next run send again, which the arrivals above or below count.
  const sql = "SELECT id, claims, attempts, status FROM outbound_deliveries WHERE id = ANY($1::text[])";
  await waitFor("every delivery's outcome written", async () => {
    const rows = (await db.query<{ status: string }>(sql, [ids])).rows;
    return rows.length === ids.length && rows.every((row) => row.status !== "pending");
  }, 30_000).catch(() => undefined); // the assertions below say which ones
  const r = await db.query<{ id: string; claims: number; attempts: number; status: string }>(sql, [ids]);
  expect(r.rows).toHaveLength(ids.length);
  const wrong = r.rows.filter((row) => row.status !== "delivered" || row.attempts !== receiver.arrivals.get(row.id)!.length);
  expect(wrong, "deliveries not delivered, or attempted more often than their requests arrived").toEqual([]);
  expect(receiver.unverified).toBe(0);
}

/**
 * What every cloud must show: p50 < 2 s and p99 < 5 s per source, the retry within a few seconds
 * of its due time, Retry-After honoured, and at least one handover (a run ending while the load
 * ran, another listening) with runs overlapping.
 */
export function expectRealtime(result: RealtimeResult, output: () => string): void {
  const table = Object.entries(result.latency).map(([s, p]) => `${s}: n=${p.n} p50=${p.p50} ms p99=${p.p99} ms max=${p.max} ms`).join("; ");
  console.info(`[realtime] ${table}; retry ${result.retryLateMs} ms after due; Retry-After 3 s → ${result.retryAfterMs} ms; runs ${result.runs.length}`);
  const failed = result.runs.filter((r) => r.error);
  expect(failed, output().slice(-3000)).toEqual([]);
  for (const [source, p] of Object.entries(result.latency)) {
    expect(p.n, source).toBeGreaterThanOrEqual(100);
    expect(p.p50, `${source} p50 (${table})`).toBeLessThan(2_000);
    expect(p.p99, `${source} p99 (${table})`).toBeLessThan(5_000);
  }
  expect(result.retryLateMs, "the retry after a 500, after its due time").toBeGreaterThan(-250);
  expect(result.retryLateMs, "the retry after a 500, after its due time").toBeLessThan(RETRY_WITHIN_MS);
  expect(result.retryAfterMs, "Retry-After: 3").toBeGreaterThan(3_000 - 250);
  expect(result.retryAfterMs, "Retry-After: 3").toBeLessThan(3_000 + RETRY_WITHIN_MS);
  // A handover under load: a run ended while the events flowed, after the next had started.
  const handovers = result.runs.filter((r) => r.endedAt !== undefined && r.endedAt > result.load.from && r.endedAt < result.load.to
    && result.runs.some((o) => o !== r && o.startedAt > r.startedAt && o.startedAt < r.endedAt!));
  expect(handovers.length, `runs: ${JSON.stringify(result.runs.map((r) => ({ t: r.timer, s: r.startedAt - result.load.from, e: r.endedAt === undefined ? null : r.endedAt - result.load.from })))}`).toBeGreaterThan(0);
}

/**
 * Issue 24 #3: an inbox entry whose processing fails is retried on INBOX_RETRY_SCHEDULE's steps
 * (by the listening relay's inbox sweep, not by the queue) and quarantined after the last. Returns
 * how late each retry ran after its due time (ms), as seen by polling every 100 ms. `submit`
 * hands the (failing) event to the processor once.
 */
export async function inboxRetryScenario(db: Database, eventId: string, steps: number[], submit: () => Promise<void>): Promise<number[]> {
  await submit();
  const late: number[] = [];
  let seen = 0;
  let dueAt = 0;
  await waitFor(`inbox entry ${eventId} quarantined`, async () => {
    const r = await db.query<{ status: string; failures: number; at: Date }>(
      "SELECT status, failures, next_attempt_at AS at FROM inbox_entries WHERE partner_event_id = $1", [eventId]);
    const row = r.rows[0];
    if (!row) return false;
    if (row.failures > seen || row.status === "quarantined") {
      if (seen > 0) late.push(Date.now() - dueAt);
      seen = row.failures;
      if (row.status === "failed") dueAt = new Date(row.at).getTime();
    }
    return row.status === "quarantined";
  }, (steps.reduce((a, b) => a + b, 0) + 20) * 1000);
  console.info(`[realtime] inbox retries ${late.join(", ")} ms after their due times`);
  const entry = await db.query<{ failures: number }>("SELECT failures FROM inbox_entries WHERE partner_event_id = $1", [eventId]);
  // The first failure, one per step, and the last: quarantined on the failure after the schedule.
  expect(entry.rows[0]!.failures).toBe(steps.length + 1);
  expect(late).toHaveLength(steps.length);
  for (const ms of late) {
    expect(ms, `a retry ${ms} ms after its due time (all: ${late.join(", ")})`).toBeGreaterThan(-250);
    expect(ms, `a retry ${ms} ms after its due time (all: ${late.join(", ")})`).toBeLessThan(RETRY_WITHIN_MS);
  }
  return late;
}

export async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** How a cloud's wake-up is played for `wakeScenario`. */
export interface WakePlay {
  db: Database;
  receiver: RealtimeReceiver;
  /** Sends one event through the management function (POST /events); resolves once it answered 201. */
  sendViaApi(type: string, data: Record<string, unknown>): Promise<void>;
  /** Wake-ups the management function has sent so far (as the cloud's API or queue received them). */
  wakeUps(): number;
  /** Resolves once no woken relay run is in flight (each stops after WOKEN_LINGER_MS idle). */
  wokenRunsEnded(): Promise<void>;
  /** One scheduled run, as the stack's schedule starts it, to its end. */
  scheduledRun(): Promise<void>;
}

/**
 * Issue 24 Must-show 5, `relayMode: "scheduled"`: an API send is delivered within seconds through
 * the management function's wake-up (no scheduled run plays meanwhile); a write that bypasses the
 * API (the user's own transaction) wakes nothing and waits for the next scheduled run. Returns the
 * API send's latency (ms, commit to receiver).
 */
export async function wakeScenario(play: WakePlay, cloud: string): Promise<{ apiLatencyMs: number }> {
  const { db, receiver } = play;
  const tag = `${cloud}wake${Date.now().toString(36)}`;
  const sub = await createSubscription(db, { url: `${receiver.url}/ok`, eventTypes: [`wake.${tag}.*`], secrets: [RECEIVER_SECRET] });
  const arrived = (id: string) => receiver.arrivals.get(id)?.some((a) => a.status === 200) === true;

  const before = play.wakeUps();
  const t0 = Date.now();
  await play.sendViaApi(`wake.${tag}.api`, { n: 1 });
  const r = await db.query<{ id: string }>("SELECT d.id FROM outbound_deliveries d JOIN outbound_events e ON e.id = d.event_id WHERE e.type = $1", [`wake.${tag}.api`]);
  expect(r.rows).toHaveLength(1);
  const apiDelivery = r.rows[0]!.id;
  await waitFor("the API's event delivered by the woken run", async () => arrived(apiDelivery), 20_000);
  const apiLatencyMs = receiver.arrivals.get(apiDelivery)![0]!.at - t0;
  // The wake-up is counted where the cloud's queue or API received it, which may come a little
  // after the delivery it led to is seen (a loaded machine: the counter's own poll, 200 ms): wait
  // for it, then check that it was exactly one.
  await waitFor("the API write's wake-up received", async () => play.wakeUps() > before, 10_000);
  expect(play.wakeUps(), "wake-ups sent by the API write").toBe(before + 1);
  // "Within seconds" (a cold start included), against up to a minute for the next scheduled run.
  expect(apiLatencyMs, "the API send through the wake-up").toBeLessThan(5_000);

  // The woken run stops once idle; a write that bypasses the API then waits for a scheduled run.
  await play.wokenRunsEnded();
  const { eventId } = await db.transaction((tx) => enqueue(tx, { type: `wake.${tag}.sql`, data: { n: 2 } }));
  const sqlDelivery = `${eventId}:${sub.id}`;
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  expect(arrived(sqlDelivery), "a write outside the API is not delivered before the next scheduled run").toBe(false);
  expect(play.wakeUps(), "a write outside the API wakes nothing").toBe(before + 1);
  await play.scheduledRun();
  expect(arrived(sqlDelivery), "the scheduled run delivered the write outside the API").toBe(true);
  console.info(`[realtime] ${cloud} scheduled mode: API send delivered ${apiLatencyMs} ms after its commit, through the wake-up`);
  return { apiLatencyMs };
}
