/**
 * The admin page at `/admin` (static HTML + a small script; the data comes from the JSON API with
 * the bearer token the operator enters once) and the JSON endpoints only the page needs.
 */
import { ADMIN_SECURITY_HEADERS, adminAsset } from "../../admin/assets.js";
import { deliveriesPerMinute } from "../../admin/stats.js";
import type { PlatformContext } from "../../platform.js";
import { HttpError, type Request, type Response, type Route } from "../router.js";

async function serveAsset(name: string): Promise<Response> {
  const asset = adminAsset(name);
  if (!asset) throw new HttpError(404, "not_found", `No admin file named ${name}.`);
  const { contentType, body } = await asset;
  return { status: 200, headers: { ...ADMIN_SECURITY_HEADERS, "content-type": contentType }, body };
}

function minutesParam(req: Request): number {
  const raw = req.query.get("minutes");
  if (raw === null) return 60;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1440) {
    throw new HttpError(400, "invalid_query", `minutes must be an integer from 1 to 1440; got ${JSON.stringify(raw)}.`);
  }
  return n;
}

export function adminRoutes(ctx: PlatformContext): Route[] {
  return [
    // The page and its files carry no data, so they are public; every number comes from admin routes.
    { method: "GET", path: "/admin", auth: "none", handler: () => serveAsset("index.html") },
    { method: "GET", path: "/admin/:file", auth: "none", handler: (req) => serveAsset(req.params.file ?? "") },
    {
      method: "GET",
      path: "/stats/deliveries-per-minute",
      auth: "admin",
      handler: async (req) => {
        const minutes = minutesParam(req);
        return { status: 200, body: { minutes, series: await deliveriesPerMinute(ctx.db, minutes) } };
      },
    },
  ];
}
