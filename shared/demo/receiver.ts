/**
 * The demo's sample receivers, on one local node:http server:
 * - `/flaky`: answers 503 to the first attempt of every second new delivery, and 429 with
 *   `Retry-After: 1` to the second attempt of every fourth, then 200: retries with backoff;
 * - `/broken`: answers 500 until `fix()` is called, then 200: dead letters, then a replay;
 * - `/alerts`: the ALERT_WEBHOOK_URL, 200.
 * Every request's Standard Webhooks signature is checked with the subscription's secret; what was
 * seen is counted by path and webhook-id so the demo can report it.
 */
import { timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import { sign } from "../outbound/signature.js";

export type ReceiverPath = "flaky" | "broken" | "alerts";

export interface PathStats {
  /** Requests answered 2xx, by webhook-id (a redelivery of the same id counts once). */
  delivered: Set<string>;
  /** Requests answered with a failure status. */
  failures: number;
  /** Requests whose signature did not verify (should stay 0). */
  badSignatures: number;
  /** Event types of the delivered requests. */
  types: string[];
  /** Webhook-ids answered 2xx, by event type (the alert URL gets alerts and other operational events). */
  deliveredByType: Map<string, Set<string>>;
}

export interface DemoReceiver {
  /** Base URL, e.g. http://127.0.0.1:43210 */
  readonly url: string;
  readonly stats: Record<ReceiverPath, PathStats>;
  /** The secret each path verifies with (set once the subscriptions exist). */
  setSecret(path: ReceiverPath, secret: string): void;
  /** From now on `/broken` answers 200. */
  fix(): void;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** True when one `v1,` entry of the header is the signature of this message with `secret`. */
function verified(secret: string | undefined, id: string, timestamp: string, body: string, header: string): boolean {
  if (!secret || !/^\d+$/.test(timestamp)) return false;
  const expected = Buffer.from(sign(secret, id, Number(timestamp), body));
  return header.split(" ").some((entry) => {
    const [version, value] = entry.split(",", 2);
    const given = Buffer.from(value ?? "");
    return version === "v1" && given.length === expected.length && timingSafeEqual(given, expected);
  });
}

export async function startDemoReceiver(): Promise<DemoReceiver> {
  const stats = Object.fromEntries((["flaky", "broken", "alerts"] as const).map((p) => [p, { delivered: new Set<string>(), failures: 0, badSignatures: 0, types: [] as string[], deliveredByType: new Map<string, Set<string>>() }])) as Record<ReceiverPath, PathStats>;
  const secrets: Partial<Record<ReceiverPath, string>> = {};
  const attemptsById = new Map<string, number>();
  let newDeliveries = 0;
  const ordinal = new Map<string, number>();
  let fixed = false;

  const server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? "/").slice(1).split("?")[0] as ReceiverPath;
      const body = await readBody(req);
      const s = stats[path];
      if (!s || req.method !== "POST") {
        res.writeHead(404).end();
        return;
      }
      const id = String(req.headers["webhook-id"] ?? "");
      if (!verified(secrets[path], id, String(req.headers["webhook-timestamp"] ?? ""), body, String(req.headers["webhook-signature"] ?? ""))) {
        s.badSignatures++;
        res.writeHead(401).end();
        return;
      }
      const attempt = (attemptsById.get(`${path}/${id}`) ?? 0) + 1;
      attemptsById.set(`${path}/${id}`, attempt);
      if (path === "flaky") {
        if (!ordinal.has(id)) ordinal.set(id, ++newDeliveries);
        const n = ordinal.get(id)!;
        if (n % 2 === 0 && attempt === 1) return fail(s, res, 503, {});
        if (n % 4 === 0 && attempt === 2) return fail(s, res, 429, { "retry-after": "1" });
      }
      if (path === "broken" && !fixed) return fail(s, res, 500, {});
      s.delivered.add(id);
      let type = "?";
      try {
        type = String((JSON.parse(body) as { type?: unknown }).type);
      } catch { /* not JSON: counted as "?" */ }
      s.types.push(type);
      s.deliveredByType.set(type, (s.deliveredByType.get(type) ?? new Set<string>()).add(id));
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  function fail(s: PathStats, res: import("node:http").ServerResponse, status: number, headers: Record<string, string>) {
    s.failures++;
    res.writeHead(status, { "content-type": "text/plain", ...headers }).end(status === 500 ? "demo: this endpoint is broken" : "demo: try again later");
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    stats,
    setSecret: (path, secret) => { secrets[path] = secret; },
    fix: () => { fixed = true; },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
