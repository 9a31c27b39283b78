/**
 * `webhooks listen <subscription id> --forward-to <url>`: a subscription's deliveries, real and
 * signed, forwarded to a receiver on this machine, from any deployment, without opening a port
 * (docs/listen.md). It attaches a listener (the relays then send that subscription nothing),
 * pulls due deliveries by long poll, POSTs each unchanged (body and headers, signature included)
 * to the local URL, and answers with what the receiver said: that answer is the attempt, retried
 * with the subscription's backoff. Ctrl-C detaches, giving back what it held at once.
 */
import { ApiError, type ApiBody, type ApiClient } from "../api.js";
import { OperationError, UsageError, intOption, type Command, type Invocation } from "../command.js";

interface Attached {
  id: string;
  leaseSeconds: number;
  subscription: { eventTypes: string[]; url: string; paused: boolean; status: string };
  otherListeners: number;
  maxWaitSeconds: number;
}
interface Pulled { id: string; eventId: string; eventType: string; attempt: number; headers: Record<string, string>; body: string }
interface Answer { deliveryId: string; status: number | null; error: AnswerError | null; durationMs: number; responseExcerpt: string | null; responseHeaders: Record<string, string> | null }
/** Why no answer came, as the API takes it. */
type AnswerError = NonNullable<ApiBody<"/subscriptions/{id}/listeners/{listenerId}/answers", "post">["answers"][number]["error"]>;
interface Recorded { deliveryId: string; outcome: "delivered" | "retrying" | "dead" | "stale"; retryInSeconds: number | null; deadReason: string | null }

/** Bytes of the local answer's body sent back for the attempt log (the relay keeps 1 KiB too). */
const EXCERPT_BYTES = 1024;
/** Seconds between tries while the platform cannot be reached. */
const RECONNECT_SECONDS = 2;
const WAIT_SECONDS = 20;

/** Why no answer came from the local receiver, in the relay's words (transport.ts classifyError). */
function errorOf(error: unknown): AnswerError {
  const e = error as { name?: string; code?: string; cause?: { code?: string; name?: string } };
  if (e?.name === "TimeoutError" || e?.cause?.name === "TimeoutError") return "timeout";
  const code = String(e?.cause?.code ?? e?.code ?? ""); // a DOMException's code is a number
  if (code === "ECONNREFUSED") return "connection_refused";
  if (code === "ECONNRESET" || code === "EPIPE" || code === "UND_ERR_SOCKET") return "connection_reset";
  if (code === "ENOTFOUND" || code.startsWith("EAI_")) return "dns_failure";
  return "network_error";
}

/** One POST to the local receiver with the delivery's exact bytes and headers. */
async function forward(url: string, delivery: Pulled, timeoutMs: number, stop: AbortSignal): Promise<Answer> {
  const started = performance.now();
  const duration = () => Math.round(performance.now() - started);
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: delivery.headers,
      body: delivery.body,
      redirect: "manual",
      signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), stop]),
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    const headers: Record<string, string> = {};
    res.headers.forEach((value, name) => { headers[name] = value; });
    return { deliveryId: delivery.id, status: res.status, error: null, durationMs: duration(), responseExcerpt: bytes.subarray(0, EXCERPT_BYTES).toString("utf8").replace(/\uFFFD$/, ""), responseHeaders: headers };
  } catch (error) {
    return { deliveryId: delivery.id, status: null, error: errorOf(error), durationMs: duration(), responseExcerpt: null, responseHeaders: null };
  }
}

function describeOutcome(r: Recorded | undefined): string {
  if (!r) return "answer not recorded yet";
  if (r.outcome === "retrying") return `retry in ${Math.round(r.retryInSeconds ?? 0)} s`;
  if (r.outcome === "dead") return `dead letter (${r.deadReason ?? "no reason"})`;
  if (r.outcome === "stale") return "stale (its lease had run out; it was sent elsewhere)";
  return "delivered";
}

export const listen: Command = {
  name: "listen",
  summary: "Receive a subscription's deliveries on this machine: each is forwarded, signed, to a local URL, and the local answer is its attempt.",
  usage: "listen <subscription id> --forward-to <url> [--lease <seconds>] [--timeout <ms>]",
  help: `Works with any deployment (local or cloud) without opening a port: the CLI pulls the
deliveries from the management API. While it listens the relays send this subscription nothing;
when it stops (Ctrl-C) or vanishes, they resume (after --lease seconds if it vanished).

Each delivery is POSTed unchanged: the same body and headers the relay would send, the Standard
Webhooks webhook-id, webhook-timestamp and webhook-signature included, so the receiver verifies it
with the subscription's secret. The local answer is the attempt: 2xx delivered; 5xx, 408, 429 or
no answer (connection refused, timeout) retried with the subscription's backoff; another status a
dead letter. One line per delivery: time, event type, delivery id, local status, duration.

Options:
  --forward-to <url>   where to POST each delivery, e.g. http://localhost:3000/hooks (required)
  --lease <seconds>    5-300: how long a delivery stays held for this listener, and how long the
                       listener stays attached without a heartbeat (default 30)
  --timeout <ms>       100-120000: the local receiver's deadline (default 10000)

Examples:
  webhooks listen sub_123 --forward-to http://localhost:3000/hooks
  webhooks listen sub_123 --forward-to http://127.0.0.1:8000/webhooks --json   # one JSON line per delivery`,
  options: { "forward-to": { type: "string" }, lease: { type: "string" }, timeout: { type: "string" } },
  positionals: [0, 1],
  async run(inv) {
    const subscriptionId = inv.positionals[0];
    const forwardTo = inv.values["forward-to"] as string | undefined;
    if (!subscriptionId) throw new UsageError("Name the subscription whose deliveries to receive: webhooks listen <subscription id> --forward-to <url> (webhooks subscriptions list shows them).");
    if (!forwardTo) throw new UsageError("--forward-to is required: the local URL each delivery is POSTed to, e.g. --forward-to http://localhost:3000/hooks.");
    let target: URL;
    try {
      target = new URL(forwardTo);
      if (target.protocol !== "http:" && target.protocol !== "https:") throw new Error("scheme");
    } catch {
      throw new UsageError(`--forward-to must be an http(s) URL such as http://localhost:3000/hooks; got ${JSON.stringify(forwardTo)}.`);
    }
    const leaseSeconds = intOption(inv, "lease", 30, 5, 300);
    const timeoutMs = intOption(inv, "timeout", 10_000, 100, 120_000);
    return runListener(inv, inv.api(), subscriptionId, target.href, leaseSeconds, timeoutMs);
  },
};

async function runListener(inv: Invocation, api: ApiClient, subscriptionId: string, forwardTo: string, leaseSeconds: number, timeoutMs: number): Promise<number> {
  const { io } = inv;
  const stopping = new AbortController();
  const held = new Set<string>();

  const attach = async (): Promise<Attached> => {
    try {
      return await api.POST("/subscriptions/{id}/listeners", { params: { path: { id: subscriptionId } }, body: { forwardTo, leaseSeconds } });
    } catch (error) {
      if (error instanceof ApiError && error.status === 403) {
        throw new OperationError(`${error.message} Listening takes deliveries from the subscription: it needs a key with write access to it (an operator key, or its application's key with write).`);
      }
      if (error instanceof ApiError && error.status === 404) throw new OperationError(`${error.message} (webhooks subscriptions list shows the subscriptions.)`);
      throw error;
    }
  };
  let listener = await attach();
  const describe = (a: Attached) => {
    io.stderr(`Listening to ${subscriptionId} (${a.subscription.eventTypes.join(", ")}); forwarding to ${forwardTo}. The relays send it nothing while you listen. Ctrl-C to stop.\n`);
    if (a.subscription.paused) io.stderr(`warning: ${subscriptionId} is paused: nothing comes until it is resumed (webhooks subscriptions resume ${subscriptionId}).\n`);
    if (a.otherListeners > 0) io.stderr(`note: ${a.otherListeners} other listener${a.otherListeners === 1 ? " is" : "s are"} attached: the deliveries are shared between you.\n`);
  };
  describe(listener);

  let reattaching: Promise<void> | null = null;
  /** The listener expired (the laptop slept, the platform was away for a lease): a new one. */
  const reattach = () => {
    reattaching ??= (async () => {
      held.clear();
      listener = await attach();
      io.stderr(`Attached again (the previous listener had expired; what it held went back and comes again).\n`);
    })().finally(() => { reattaching = null; });
    return reattaching;
  };
  const isGone = (error: unknown) => error instanceof ApiError && error.status === 410;

  const beat = setInterval(() => {
    api.POST("/subscriptions/{id}/listeners/{listenerId}/heartbeat", { params: { path: { id: subscriptionId, listenerId: listener.id } }, body: { holding: [...held] } })
      .catch((error: unknown) => { if (isGone(error) && !stopping.signal.aborted) return reattach(); })
      .catch(() => {}); // the pull loop says when the platform is away
  }, (leaseSeconds * 1000) / 3);

  let stopped: (() => void) | undefined;
  const stop = new Promise<void>((resolve) => { stopped = resolve; });
  const onSignal = () => { stopping.abort(); stopped?.(); };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  const pause = (seconds: number) => new Promise<void>((r) => { const t = setTimeout(r, seconds * 1000); stopping.signal.addEventListener("abort", () => { clearTimeout(t); r(); }, { once: true }); });

  const loop = async () => {
    let away = false;
    while (!stopping.signal.aborted) {
      let pulled: Pulled[];
      try {
        ({ deliveries: pulled } = await api.POST("/subscriptions/{id}/listeners/{listenerId}/pull", { params: { path: { id: subscriptionId, listenerId: listener.id } }, body: { waitSeconds: Math.min(WAIT_SECONDS, listener.maxWaitSeconds) } }));
        if (away) io.stderr("The platform answers again.\n");
        away = false;
      } catch (error) {
        if (stopping.signal.aborted) return;
        if (isGone(error)) { await reattach().catch(() => {}); continue; }
        if (error instanceof ApiError && error.status !== 0 && error.status < 500) throw error;
        if (!away) io.stderr(`warning: ${(error as Error).message} Trying again every ${RECONNECT_SECONDS} s.\n`);
        away = true;
        await pause(RECONNECT_SECONDS);
        continue;
      }
      for (const d of pulled) held.add(d.id);
      for (const delivery of pulled) {
        if (stopping.signal.aborted) return;
        const answer = await forward(forwardTo, delivery, timeoutMs, stopping.signal);
        if (stopping.signal.aborted) return; // cut short by Ctrl-C: released by the detach, not an attempt
        let recorded: Recorded | undefined;
        try {
          ({ recorded: [recorded] } = await api.POST("/subscriptions/{id}/listeners/{listenerId}/answers", { params: { path: { id: subscriptionId, listenerId: listener.id } }, body: { answers: [answer] } }));
        } catch (error) {
          // Not recorded: the lease runs out and the delivery comes again (at least once).
          io.stderr(`warning: could not record the answer for ${delivery.id}: ${(error as Error).message}\n`);
        }
        held.delete(delivery.id);
        const local = answer.status === null ? answer.error : String(answer.status);
        if (inv.json) {
          io.stdout(`${JSON.stringify({ time: new Date().toISOString(), eventType: delivery.eventType, deliveryId: delivery.id, attempt: delivery.attempt, status: answer.status, error: answer.error, durationMs: answer.durationMs, outcome: recorded?.outcome ?? null, retryInSeconds: recorded?.retryInSeconds ?? null })}\n`);
        } else {
          io.stdout(`${new Date().toISOString()}  ${delivery.eventType}  ${delivery.id}  ${local}  ${answer.durationMs} ms  attempt ${delivery.attempt}, ${describeOutcome(recorded)}\n`);
        }
      }
    }
  };

  let failure: unknown;
  await Promise.race([loop().catch((error: unknown) => { failure = error; }), stop]);
  stopping.abort();
  clearInterval(beat);
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);
  await (reattaching as Promise<void> | null)?.catch(() => {});
  try {
    const { released } = await api.DELETE("/subscriptions/{id}/listeners/{listenerId}", { params: { path: { id: subscriptionId, listenerId: listener.id } } });
    io.stderr(`Stopped listening${released > 0 ? `; ${released} deliver${released === 1 ? "y" : "ies"} given back` : ""}. The relays resume ${subscriptionId}.\n`);
  } catch (error) {
    io.stderr(`warning: could not detach (${(error as Error).message}); the relays resume ${subscriptionId} once the listener's ${leaseSeconds} s lease has passed.\n`);
  }
  if (failure) throw failure;
  return 0;
}
