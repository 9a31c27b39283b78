/** `webhooks subscriptions update|pause|resume|delete|test`: what an operator changes after creating one. */
import type { ApiBody } from "../api.js";
import { UsageError, intOption, type Command, type Invocation } from "../command.js";
import { printJson, record } from "../output.js";
import { AUTH_HELP, AUTH_OPTIONS, authOf, describeAuth } from "./endpointAuth.js";
import { CONTENT_HELP, contentFieldsOf, describeFilter, describeTransformation } from "./contentOptions.js";
import { DESTINATION_HELP, DESTINATION_OPTIONS, describeDestination, describeDestinationCredentials, destinationOf, type PublicDestination } from "./destinationOptions.js";

interface Subscription { id: string; url: string; destination?: PublicDestination; eventTypes: string[]; paused?: boolean; status: string; headers?: Record<string, string>; maxAttempts?: number | null; description?: string | null; auth?: Parameters<typeof describeAuth>[0]; filter?: Record<string, unknown> | null; transformation?: string | null; warnings?: string[] }

/** `--header name=value` options as a map; `--header name=` is refused (say --clear-headers). */
export function headersOf(inv: Invocation): Record<string, string> | undefined {
  const given = inv.values.header as string[] | undefined;
  if (inv.values["clear-headers"] === true) {
    if (given?.length) throw new UsageError("Give either --header or --clear-headers, not both.");
    return {};
  }
  if (!given?.length) return undefined;
  const headers: Record<string, string> = {};
  for (const h of given) {
    const eq = h.indexOf("=");
    if (eq <= 0 || eq === h.length - 1) throw new UsageError(`--header must be name=value (e.g. --header x-api-key=k1); got ${JSON.stringify(h)}.`);
    headers[h.slice(0, eq).trim()] = h.slice(eq + 1);
  }
  return headers;
}

const summary = (sub: Subscription) => ({
  id: sub.id,
  ...(sub.destination && sub.destination.kind !== "http"
    ? { destination: describeDestination(sub.destination, sub.url), "sends as": describeDestinationCredentials(sub.destination) }
    : { url: sub.url }),
  "event types": sub.eventTypes.join(", "), paused: sub.paused ? "yes" : "no", health: sub.status,
  "max attempts": sub.maxAttempts ?? "default", headers: Object.keys(sub.headers ?? {}).join(", ") || "none", auth: describeAuth(sub.auth),
  filter: describeFilter(sub.filter), transformation: describeTransformation(sub.transformation), description: sub.description,
});

export const subscriptionsUpdate: Command = {
  name: "subscriptions update",
  summary: "Edit a subscription. Pending deliveries use the new settings from their next attempt.",
  usage: "subscriptions update <subscription id> [--endpoint <url>|--destination <kind> …|--destination-file <path>] [--event <type>...] [--description <text>] [--max-attempts <n>|default] [--header <name=value>...|--clear-headers] [--traceparent on|off] [--auth basic|oauth2|mtls|none …] [--filter <json>|--no-filter] [--transformation <file>|-|--no-transformation]",
  help: `Options (each changes that field only):
  --endpoint <url>          a new URL: its health starts afresh, waiting deliveries are due at once
                            (from a queue destination: back to an HTTP endpoint)
  --event <type>            the event types (repeatable; replaces them all)
  --description <text>      ('' clears it)
  --max-attempts <n>        1-100, or "default" for the relay's policy
  --header <name=value>     custom headers sent with every attempt (repeatable; replaces them all)
  --clear-headers           no custom headers
  --traceparent on|off      send it the W3C traceparent header of traced events, or not

${AUTH_HELP}
  The whole auth is replaced (that is how its secret part is rotated).

${DESTINATION_HELP}
  A new destination replaces the whole of it, credentials included (that is how they are
  rotated); its health starts afresh, as with a new --endpoint.

${CONTENT_HELP}
  --no-filter            every event of its types again
  --no-transformation    send the events as they are again

Example:
  webhooks subscriptions update sub_123 --endpoint https://new.example/hooks --header x-api-key=k2`,
  options: {
    endpoint: { type: "string" }, event: { type: "string", multiple: true }, description: { type: "string" },
    "max-attempts": { type: "string" }, header: { type: "string", multiple: true }, "clear-headers": { type: "boolean" },
    traceparent: { type: "string" },
    filter: { type: "string" }, "no-filter": { type: "boolean" }, transformation: { type: "string" }, "no-transformation": { type: "boolean" },
    ...AUTH_OPTIONS,
    ...DESTINATION_OPTIONS,
  },
  positionals: [1, 1],
  async run(inv) {
    type Change = ApiBody<"/subscriptions/{id}", "patch">;
    // The destination and the auth are assembled from the options as JSON; the API validates them and says what is wrong.
    const change: Change = {};
    const destination = await destinationOf(inv);
    if (destination) change.destination = destination as Change["destination"];
    else if (inv.values.endpoint !== undefined) change.url = inv.values.endpoint as string;
    if ((inv.values.event as string[] | undefined)?.length) change.eventTypes = inv.values.event as string[];
    if (inv.values.description !== undefined) change.description = inv.values.description === "" ? null : inv.values.description as string;
    if (inv.values["max-attempts"] === "default") change.maxAttempts = null;
    else if (inv.values["max-attempts"] !== undefined) change.maxAttempts = intOption(inv, "max-attempts", 0, 1, 100);
    const headers = headersOf(inv);
    if (headers) change.headers = headers;
    const traceparent = inv.values.traceparent as string | undefined;
    if (traceparent !== undefined) {
      if (traceparent !== "on" && traceparent !== "off") throw new UsageError(`--traceparent takes on or off; got ${JSON.stringify(traceparent)}.`);
      change.sendTraceparent = traceparent === "on";
    }
    const auth = await authOf(inv, true);
    if (auth !== undefined) change.auth = auth as Change["auth"];
    Object.assign(change, await contentFieldsOf(inv, true));
    if (Object.keys(change).length === 0) throw new UsageError("Nothing to change: give at least one of --endpoint, --destination, --destination-file, --event, --description, --max-attempts, --header, --clear-headers, --traceparent, --auth, --filter, --no-filter, --transformation, --no-transformation.");
    const sub: Subscription = await inv.api().PATCH("/subscriptions/{id}", { params: { path: { id: inv.positionals[0]! } }, body: change });
    inv.io.stdout(inv.json ? printJson(sub) : `Updated ${sub.id}.\n${record(summary(sub))}${(sub.warnings ?? []).map((w) => `warning: ${w}\n`).join("")}`);
  },
};

function simple(action: "pause" | "resume", text: string, done: (sub: Subscription) => string): Command {
  return {
    name: `subscriptions ${action}`,
    summary: text,
    usage: `subscriptions ${action} <subscription id>`,
    help: "",
    positionals: [1, 1],
    async run(inv) {
      const init = { params: { path: { id: inv.positionals[0]! } } };
      const sub: Subscription = action === "pause" ? await inv.api().POST("/subscriptions/{id}/pause", init) : await inv.api().POST("/subscriptions/{id}/resume", init);
      inv.io.stdout(inv.json ? printJson(sub) : done(sub));
    },
  };
}

export const subscriptionsPause = simple("pause", "Pause a subscription: nothing is sent to it until resumed; its deliveries are kept.", (s) => `Paused ${s.id}: its deliveries wait until \`webhooks subscriptions resume ${s.id}\`.\n`);
export const subscriptionsResume = simple("resume", "Resume a paused subscription: its waiting deliveries are sent at once.", (s) => `Resumed ${s.id}.\n`);

export const subscriptionsDelete: Command = {
  name: "subscriptions delete",
  summary: "Delete a subscription. Its pending deliveries are cancelled and kept as history.",
  usage: "subscriptions delete <subscription id>",
  help: "",
  positionals: [1, 1],
  async run(inv) {
    const r = await inv.api().DELETE("/subscriptions/{id}", { params: { path: { id: inv.positionals[0]! } } });
    inv.io.stdout(inv.json ? printJson(r) : `Deleted ${r.id}; ${r.cancelledDeliveries} pending deliver${r.cancelledDeliveries === 1 ? "y" : "ies"} cancelled (kept, status cancelled).\n`);
  },
};

export const subscriptionsTest: Command = {
  name: "subscriptions test",
  summary: "Send a test event (webhooks.test) to one subscription, through the normal delivery path.",
  usage: "subscriptions test <subscription id> [--type <event type>]",
  help: `Options:
  --type <type>   the test event's type (default webhooks.test)`,
  options: { type: { type: "string" } },
  positionals: [1, 1],
  async run(inv) {
    const r = await inv.api().POST("/subscriptions/{id}/test", { params: { path: { id: inv.positionals[0]! } }, body: inv.values.type ? { type: inv.values.type as string } : {} });
    inv.io.stdout(inv.json ? printJson(r) : `Sent test event ${r.eventId}: delivery ${r.deliveries[0]?.id}.\n`);
  },
};
