/**
 * `webhooks portal link|links|revoke|settings`: the customer portal's links and settings (issue
 * 32, docs/portal.md). Operator commands: they need ADMIN_TOKEN or an operator key.
 */
import type { ApiBody, ApiData } from "../api.js";
import { intOption, UsageError, type Command } from "../command.js";
import { printJson, record, table } from "../output.js";

type PortalLink = ApiData<"/applications/{id}/portal-links">["links"][number];
type Settings = ApiData<"/applications/{id}/portal-settings">;

const stateOf = (l: PortalLink): string => {
  if (l.revokedAt) return "revoked";
  if (l.session?.revokedAt) return "session ended";
  if (Date.parse(l.expiresAt) <= Date.now()) return "expired";
  return l.session ? "in use" : "not opened yet";
};

export const portalLink: Command = {
  name: "portal link",
  summary: "Make a short-lived, single-use link that opens the customer portal for one application.",
  usage: "portal link <application id> [--access read|write] [--expires <minutes>] [--return-url <url>]",
  help: `Options:
  --access read|write    read: the customer sees; write: also adds, edits, pauses and deletes
                         endpoints, rotates their secrets, sends tests, replays (default: read)
  --expires <minutes>    1-1440 (default 60): the link must be opened within it, and the
                         session it opens ends at it
  --return-url <url>     where the portal's "Back" link (and signing out) leads

The link works once: hand it to your customer (or put it in your app's iframe) right away.
Revoke it, or the session it opened, with \`webhooks portal revoke <pl_…|ps_…>\`.

Example:
  webhooks portal link app_... --access write --expires 30 --return-url https://app.example.com/settings`,
  options: { access: { type: "string" }, expires: { type: "string" }, "return-url": { type: "string" } },
  positionals: [1, 1],
  async run(inv) {
    const access = (inv.values.access as string | undefined) ?? "read";
    if (access !== "read" && access !== "write") throw new UsageError(`--access must be read or write; got ${JSON.stringify(access)}.`);
    const body: ApiBody<"/applications/{id}/portal-links", "post"> = { access, expiresInMinutes: intOption(inv, "expires", 60, 1, 1440) };
    if (inv.values["return-url"] !== undefined) body.returnUrl = inv.values["return-url"] as string;
    const link = await inv.api().POST("/applications/{id}/portal-links", { params: { path: { id: inv.positionals[0]! } }, body });
    if (inv.json) inv.io.stdout(printJson(link));
    else inv.io.stdout(`Made ${link.id} (${link.access === "write" ? "read-write" : "read-only"}, for ${link.applicationId}, until ${link.expiresAt}). It opens the portal once:\n\n  ${link.url}\n\n`);
  },
};

export const portalLinks: Command = {
  name: "portal links",
  summary: "List an application's portal links and the sessions they opened (never the tokens).",
  usage: "portal links <application id> [--limit <n>]",
  help: `Options:
  --limit <n>   at most n, newest first (1-1000, default 100)`,
  options: { limit: { type: "string" } },
  positionals: [1, 1],
  async run(inv) {
    const { links } = await inv.api().GET("/applications/{id}/portal-links", { params: { path: { id: inv.positionals[0]! }, query: { limit: intOption(inv, "limit", 100, 1, 1000) } } });
    if (inv.json) inv.io.stdout(printJson(links));
    else if (links.length === 0) inv.io.stdout("No portal links.\n");
    else inv.io.stdout(table(links, [
      { header: "id", value: (l) => l.id },
      { header: "access", value: (l) => l.access },
      { header: "created", value: (l) => `${l.createdAt} by ${l.createdBy}` },
      { header: "expires", value: (l) => l.expiresAt },
      { header: "session", value: (l) => l.session?.id },
      { header: "state", value: stateOf },
    ]));
  },
};

export const portalRevoke: Command = {
  name: "portal revoke",
  summary: "Revoke a portal link (pl_…; its session ends too) or end a session (ps_…), at once.",
  usage: "portal revoke <pl_…|ps_…>",
  help: `A session's id is the actor of what the customer changed in \`webhooks audit\`.

Examples:
  webhooks portal revoke pl_0123456789abcdef
  webhooks portal revoke ps_0123456789abcdef`,
  positionals: [1, 1],
  async run(inv) {
    const id = inv.positionals[0]!;
    if (id.startsWith("whpl_") || id.startsWith("whps_")) throw new UsageError("Give the id (pl_… or ps_…, as `webhooks portal links` shows it), not the token itself.");
    if (id.startsWith("pl_")) {
      const link = await inv.api().DELETE("/portal-links/{id}", { params: { path: { id } } });
      inv.io.stdout(inv.json ? printJson(link) : `Revoked ${link.id}${link.session ? `; its session ${link.session.id} ended` : " (it had not been opened)"}.\n`);
    } else if (id.startsWith("ps_")) {
      const session = await inv.api().DELETE("/portal-sessions/{id}", { params: { path: { id } } });
      inv.io.stdout(inv.json ? printJson(session) : `Ended ${session.id} (${session.applicationId}) at ${session.revokedAt}.\n`);
    } else {
      throw new UsageError(`${JSON.stringify(id)} is neither a portal link id (pl_…) nor a session id (ps_…).`);
    }
  },
};

export const portalSettings: Command = {
  name: "portal settings",
  summary: "Show or change an application's portal: the origins that may frame it, its name, logo and colour.",
  usage: "portal settings <application id> [--frame-ancestor <origin>]... [--no-frame-ancestors] [--name <text>] [--logo-url <url>] [--accent <#rrggbb>]",
  help: `Without options it shows them. Options:
  --frame-ancestor <origin>  an origin that may frame the portal in an iframe, e.g.
                             https://app.example.com or https://*.example.com; repeat it for
                             several. Replaces the list (PORTAL_FRAME_ANCESTORS applies to all)
  --no-frame-ancestors       empty the list: only PORTAL_FRAME_ANCESTORS may frame it
  --name <text>              shown in the portal's header instead of the application's name
  --logo-url <url>           an https image URL
  --accent <#rrggbb>         the accent colour
  Give "" to --name, --logo-url or --accent to go back to the default.

Example:
  webhooks portal settings app_... --frame-ancestor https://app.example.com --name "Acme" --accent "#0b7285"`,
  options: {
    "frame-ancestor": { type: "string", multiple: true }, "no-frame-ancestors": { type: "boolean" },
    name: { type: "string" }, "logo-url": { type: "string" }, accent: { type: "string" },
  },
  positionals: [1, 1],
  async run(inv) {
    const path = { id: inv.positionals[0]! };
    const origins = inv.values["frame-ancestor"] as string[] | undefined;
    if (origins && inv.values["no-frame-ancestors"]) throw new UsageError("Give --frame-ancestor or --no-frame-ancestors, not both.");
    const theme: Record<string, string | null> = {};
    for (const [option, field] of [["name", "name"], ["logo-url", "logoUrl"], ["accent", "accentColor"]] as const) {
      const v = inv.values[option] as string | undefined;
      if (v !== undefined) theme[field] = v === "" ? null : v;
    }
    const body: ApiBody<"/applications/{id}/portal-settings", "patch"> = {};
    if (origins) body.frameAncestors = origins;
    if (inv.values["no-frame-ancestors"]) body.frameAncestors = [];
    if (Object.keys(theme).length) body.theme = theme;
    const settings: Settings = Object.keys(body).length
      ? await inv.api().PATCH("/applications/{id}/portal-settings", { params: { path }, body })
      : await inv.api().GET("/applications/{id}/portal-settings", { params: { path } });
    inv.io.stdout(inv.json ? printJson(settings) : record({
      application: settings.applicationId,
      "frame ancestors": settings.frameAncestors.length ? settings.frameAncestors.join(" ") : "(none of its own)",
      name: settings.theme.name ?? "(the application's)",
      "logo url": settings.theme.logoUrl ?? "(none)",
      accent: settings.theme.accentColor ?? "(default)",
    }));
  },
};
