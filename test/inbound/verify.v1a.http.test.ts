/**
 * Issue 17, Must-show 3 (inbound, over HTTP): a sender signing only v1a (tweetnacl) through
 * POST /webhooks/:partner on both backends: stored (202), a repeat is a duplicate (200), another
 * key's, a stale or a tampered request is refused (401) and stored nowhere.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadConfig } from "../../shared/config.js";
import { mapPlatformError, startPlatform, type Platform } from "../../shared/platform.js";
import { createHttpServer } from "../../shared/server/router.js";
import { createLogger } from "../../shared/telemetry/log.js";
import { describeEachBackend } from "../support/databases.js";
import { body, other, sender, signedHeaders, whpk } from "./support/v1aSender.js";

describeEachBackend("a v1a-only sender over HTTP", (ctx) => {
  const TOKEN = "inbound-v1a-test-token";
  let platform: Platform;
  let server: Server;
  let base: string;

  beforeAll(async () => {
    const config = loadConfig({ ADMIN_TOKEN: TOKEN, LOG_LEVEL: "silent", PARTNERS: JSON.stringify({ acme: { scheme: "standard-webhooks", secrets: [whpk(sender)] } }) });
    platform = await startPlatform(config, { db: ctx.db, logger: createLogger({ level: "silent" }), workers: false });
    server = createHttpServer({ routes: platform.routes, adminToken: TOKEN, maxBodyBytes: 64 * 1024, mapError: mapPlatformError });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    await platform?.stop();
  });
  const post = (headers: Record<string, string>, payload = body) =>
    fetch(`${base}/webhooks/acme`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: payload });

  it("POST /webhooks/:partner stores it (202), a repeat is a duplicate (200); another key's or a stale one is 401, stored nowhere", async () => {
    const now = Math.floor(Date.now() / 1000);
    const id = `msg_http_${ctx.backend}`;
    expect((await post(signedHeaders({ id, ts: now }))).status).toBe(202);
    expect((await post(signedHeaders({ id, ts: now }))).status).toBe(200);
    const refused = [
      await post(signedHeaders({ id: `${id}_other`, ts: now, pair: other })),
      await post(signedHeaders({ id: `${id}_stale`, ts: now - 3600 })),
      await post(signedHeaders({ id: `${id}_tampered`, ts: now }), body.replace("4200", "1")),
    ];
    expect(refused.map((r) => r.status)).toEqual([401, 401, 401]);
    const { rows } = await ctx.db.query<{ partner_event_id: string }>("SELECT partner_event_id FROM inbox_entries WHERE partner_name = 'acme' ORDER BY partner_event_id");
    expect(rows.map((r) => r.partner_event_id)).toEqual([id]);
  });
});
