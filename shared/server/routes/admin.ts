/**
 * The admin page at `/admin` (static HTML + a small script; the data comes from the JSON API with
 * the bearer token the operator enters once) and the JSON endpoints only the page needs.
 */
import { ADMIN_SECURITY_HEADERS, adminAsset } from "../../admin/assets.js";
import { deliveriesPerMinute } from "../../admin/stats.js";
import type { PlatformContext } from "../../context.js";
import * as z from "zod/mini";
import { HttpError, type Response, type Route } from "../router.js";
import { encryptionStatusSchema, reencryptResultSchema, statsSchema } from "../schemas.js";
import { activeKeyring } from "../../crypto/activeKeyring.js";
import { reencryptSecrets, secretsByKey } from "../../crypto/reencrypt.js";
import { filterText, route } from "./validate.js";

async function serveAsset(name: string): Promise<Response> {
  const asset = adminAsset(name);
  if (!asset) throw new HttpError(404, "not_found", `No admin file named ${name}.`);
  const { contentType, body } = await asset;
  return { status: 200, headers: { ...ADMIN_SECURITY_HEADERS, "content-type": contentType }, body };
}

const statsQuery = z.strictObject({ minutes: z.optional(z.coerce.number().check(z.int(), z.gte(1), z.lte(1440))), applicationId: filterText() });

export function adminRoutes(ctx: PlatformContext): Route[] {
  return [
    // The page and its files carry no data, so they are public; every number comes from admin routes.
    // The root leads to it: a newcomer opening the URL `npm start` printed finds the page, not a 404.
    { method: "GET", path: "/", auth: "none", handler: async (req) => ({ status: 302, headers: { location: `${req.basePath}/admin`, "content-type": "text/plain; charset=utf-8" }, body: `The admin page is at ${req.basePath}/admin; the API reference at ${req.basePath}/docs.\n` }) },
    { method: "GET", path: "/admin", auth: "none", handler: () => serveAsset("index.html") },
    { method: "GET", path: "/admin/:file", auth: "none", handler: (req) => serveAsset(req.params.file ?? "") },
    route("GET", "/stats/deliveries-per-minute", {
      operationId: "deliveriesPerMinute", access: { action: "read", audience: "operator" }, tag: "Admin", summary: "Deliveries per minute by outcome",
      description: "Over the last `minutes` (1–1440, default 60), oldest first, one bucket per minute; `applicationId` narrows it to one application's deliveries. `failed` counts attempts no retry follows (permanent failures, and the attempt a delivery died of, also once that dead letter is replayed).",
      query: statsQuery,
      responses: { 200: { description: "The series.", schema: statsSchema } },
    }, async (_req, { minutes = 60, applicationId }) => ({ status: 200, body: { minutes, series: await deliveriesPerMinute(ctx.db, minutes, { applicationId }) } })),
    // Secrets at rest (docs/secrets.md): where a key rotation stands, and a pass on demand.
    route("GET", "/encryption-keys", {
      operationId: "encryptionKeyStatus", access: { action: "read", audience: "operator" }, tag: "Admin", summary: "Which encryption keys the stored secrets are under",
      description: "Key ids only, never key bytes. `rotated` is true when every stored value is under the first key of ENCRYPTION_KEYS: the older keys may then be dropped (wait one lease first).",
      responses: { 200: { description: "Values per key id.", schema: encryptionStatusSchema } },
    }, async () => {
      const keyring = activeKeyring();
      const values = await secretsByKey(ctx.db);
      const rotated = Object.keys(values).every((k) => k === keyring.primary.id);
      return { status: 200, body: { primaryKeyId: keyring.primary.id, keyIds: [...keyring.keys.keys()], values, rotated } };
    }),
    route("POST", "/encryption-keys/reencrypt", {
      operationId: "reencryptSecrets", access: { action: "write", audience: "operator" }, tag: "Admin", summary: "Re-encrypt stored secrets under the first key now",
      description: "The pass the relays run every few minutes, now: every value not under the first key of ENCRYPTION_KEYS (older keys, plaintext rows) is rewritten, in batches, while deliveries go on. Rows whose values do not decrypt here are listed, with the missing key id.",
      responses: { 200: { description: "What the pass did.", schema: reencryptResultSchema } },
    }, async () => ({ status: 200, body: await reencryptSecrets(ctx.db) })),
  ];
}
