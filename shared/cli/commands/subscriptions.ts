/** `webhooks subscriptions list|create|get|enable`. */
import { readFile } from "node:fs/promises";
import type { ApiBody } from "../api.js";
import { UsageError, intOption, type Command, type Invocation } from "../command.js";
import { printJson, record, table } from "../output.js";
import { signatureSchemeOf } from "./signing.js";
import { headersOf } from "./subscriptionChanges.js";
import { AUTH_HELP, AUTH_OPTIONS, authOf, describeAuth } from "./endpointAuth.js";
import { CONTENT_HELP, contentFieldsOf, describeFilter, describeTransformation } from "./contentOptions.js";
import { DESTINATION_HELP, DESTINATION_OPTIONS, describeDestination, describeDestinationCredentials, destinationOf, type PublicDestination } from "./destinationOptions.js";

interface Subscription {
  id: string;
  url: string;
  /** Issue 31: where deliveries go (older servers: absent, an HTTP endpoint at `url`). */
  destination?: PublicDestination;
  eventTypes: string[];
  secrets?: string[];
  description?: string | null;
  maxAttempts?: number | null;
  status: "active" | "degraded" | "disabled";
  health?: { consecutiveFailures?: number; disabledReason?: string | null; nextProbeAt?: string | null; lastFailureAt?: string | null };
  createdAt?: string;
  auth?: Parameters<typeof describeAuth>[0];
  filter?: Record<string, unknown> | null;
  transformation?: string | null;
  warnings?: string[];
}

/** What a person calls the status: an active subscription is healthy. */
export function healthOf(status: string): string {
  return status === "active" ? "healthy" : status;
}

function show(sub: Subscription): Record<string, unknown> {
  return {
    id: sub.id,
    ...(sub.destination && sub.destination.kind !== "http"
      ? { destination: describeDestination(sub.destination, sub.url), "sends as": describeDestinationCredentials(sub.destination) }
      : { url: sub.url }),
    "event types": sub.eventTypes.join(", "),
    health: healthOf(sub.status),
    "consecutive failures": sub.health?.consecutiveFailures,
    "disabled reason": sub.health?.disabledReason,
    "next probe": sub.health?.nextProbeAt,
    "max attempts": sub.maxAttempts ?? "default",
    ...(sub.destination && sub.destination.kind !== "http" ? {} : { auth: describeAuth(sub.auth) }),
    filter: describeFilter(sub.filter),
    transformation: describeTransformation(sub.transformation),
    description: sub.description,
    created: sub.createdAt,
    ...(sub.secrets ? { secrets: sub.secrets.join(" ") } : {}),
  };
}

export const subscriptionsList: Command = {
  name: "subscriptions list",
  summary: "List outbound subscriptions with their health (healthy, degraded, disabled).",
  usage: "subscriptions list [--status active|degraded|disabled] [--limit <n>]",
  help: `Options:
  --status <s>  only this status
  --limit <n>   at most n (1-1000, default 100)`,
  options: { status: { type: "string" }, limit: { type: "string" } },
  async run(inv) {
    const status = inv.values.status as "active" | "degraded" | "disabled" | undefined;
    if (status !== undefined && !["active", "degraded", "disabled"].includes(status)) {
      throw new UsageError(`--status must be active, degraded or disabled; got ${JSON.stringify(status)}.`);
    }
    const limit = intOption(inv, "limit", 100, 1, 1000);
    const rows: Subscription[] = (await inv.api().GET("/subscriptions", { params: { query: { status, limit } } })).subscriptions;
    if (inv.json) inv.io.stdout(printJson(rows));
    else if (rows.length === 0) inv.io.stdout("No subscriptions.\n");
    else inv.io.stdout(table(rows, [
      { header: "id", value: (r) => r.id },
      { header: "health", value: (r) => healthOf(r.status) },
      { header: "failures", value: (r) => r.health?.consecutiveFailures },
      { header: "url", value: (r) => r.url },
      { header: "event types", value: (r) => r.eventTypes.join(",") },
    ]));
  },
};

/** The flow control options given (issue 15's fields), checked as the API checks them. */
function flowOf(inv: Invocation): Record<string, unknown> {
  const flow: Record<string, unknown> = {};
  if (inv.values.ordered === true) flow.ordered = true;
  if (inv.values["max-in-flight"] !== undefined) flow.maxInFlight = intOption(inv, "max-in-flight", 0, 1, 10_000);
  if (inv.values["attempt-timeout-ms"] !== undefined) flow.attemptTimeoutMs = intOption(inv, "attempt-timeout-ms", 0, 100, 120_000);
  const rate = inv.values["rate-limit-per-second"];
  if (rate !== undefined) {
    const n = Number(rate);
    if (rate === "" || !Number.isFinite(n) || n <= 0 || n > 10_000) throw new UsageError(`--rate-limit-per-second must be a number above 0, up to 10000 (e.g. 0.5, 20); got ${JSON.stringify(rate)}.`);
    flow.rateLimitPerSecond = n;
  }
  return flow;
}

export const subscriptionsCreate: Command = {
  name: "subscriptions create",
  summary: "Create a subscription. A signing secret is generated unless given; it is printed once.",
  usage: "subscriptions create --endpoint <url>|--destination <kind> …|--destination-file <path> --event <type> [--event <type>...] [--secret <whsec_...>|--signature-scheme v1|v1a] [--max-attempts <n>] [--description <text>] [--header <name=value>...] [--backfill-since <time> [--backfill-until <time>]] [--application <id>] [--ordered] [--max-in-flight <n>] [--rate-limit-per-second <n>] [--attempt-timeout-ms <ms>] [--auth basic|oauth2|mtls …] [--no-traceparent] [--filter <json>] [--transformation <file>|-]",
  help: `Options:
  --endpoint <url>       where deliveries are POSTed (or a --destination below)
  --event <type>         event type or pattern such as order.* (repeatable, at least one)
  --secret <whsec_...>   signing secret (repeatable for rotation; whsk_... signs v1a); default: generated
  --secret-file <path>   read the secret from a file instead of the command line
  --signature-scheme <s> the generated secret's kind: v1 (HMAC, whsec_, the default) or v1a
                         (ed25519, whsk_: receivers verify with the public key,
                         \`webhooks subscriptions public-keys <id>\`; docs/secrets.md)
  --max-attempts <n>     attempts before dead letter (default: the relay's policy)
  --description <text>
  --header <name=value>  a custom header sent with every attempt (repeatable)
  --backfill-since <t>   also send the past events enqueued since t (ISO 8601) whose type matches
  --backfill-until <t>   …and before t
  --application <id>     the application it belongs to (default: the default one; an
                         application key's own)
  --no-traceparent       send it no W3C traceparent header, even for traced events
                         (docs/operations.md#one-trace-per-webhook)

Flow control (docs/outbound.md#flow-control; default: none of it):
  --ordered              deliver the events of one orderingKey one at a time, in order
  --max-in-flight <n>    at most n attempts in flight to it at once (1-10000)
  --rate-limit-per-second <n>
                         at most n attempts a second (above 0, up to 10000; 0.5 is one every 2 s)
  --attempt-timeout-ms <ms>
                         give up on an attempt after ms (100-120000; the relays' cap applies)

${AUTH_HELP.replace("\n  --auth none            (update only) remove it", "")}

${DESTINATION_HELP}

${CONTENT_HELP}

Examples:
  webhooks subscriptions create --endpoint https://example.com/hooks --event 'order.*'
  webhooks subscriptions create --destination sqs --queue-url https://sqs.eu-west-1.amazonaws.com/123456789012/orders --event 'order.*'`,
  options: {
    endpoint: { type: "string" },
    event: { type: "string", multiple: true },
    secret: { type: "string", multiple: true },
    "secret-file": { type: "string" },
    "signature-scheme": { type: "string" },
    "max-attempts": { type: "string" },
    description: { type: "string" },
    header: { type: "string", multiple: true },
    "backfill-since": { type: "string" },
    "backfill-until": { type: "string" },
    application: { type: "string" },
    ordered: { type: "boolean" },
    "max-in-flight": { type: "string" },
    "rate-limit-per-second": { type: "string" },
    "attempt-timeout-ms": { type: "string" },
    "no-traceparent": { type: "boolean" },
    filter: { type: "string" },
    transformation: { type: "string" },
    ...AUTH_OPTIONS,
    ...DESTINATION_OPTIONS,
  },
  async run(inv) {
    const url = inv.values.endpoint as string | undefined;
    const events = (inv.values.event as string[] | undefined) ?? [];
    const destination = await destinationOf(inv);
    if (!url && !destination) throw new UsageError("Give --endpoint <url> (where deliveries are POSTed) or --destination <kind> with its options (a queue or broker: see --help).");
    if (events.length === 0) throw new UsageError("Give at least one --event (e.g. --event 'order.*').");
    const secrets = [...((inv.values.secret as string[] | undefined) ?? [])];
    const file = inv.values["secret-file"] as string | undefined;
    if (file) {
      try {
        secrets.push((await readFile(file, "utf8")).trim());
      } catch (error) {
        throw new UsageError(`Cannot read --secret-file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`);
      }
    }
    type Body = ApiBody<"/subscriptions", "post">;
    // The destination and the auth are assembled from the options as JSON; the API validates them and says what is wrong.
    const body: Body = { ...(destination ? { destination: destination as Body["destination"] } : { url: url! }), eventTypes: events };
    if (inv.values.application !== undefined) body.applicationId = inv.values.application as string;
    if (secrets.length) body.secrets = secrets;
    const scheme = signatureSchemeOf(inv);
    if (scheme && secrets.length) throw new UsageError("Give either --secret (its prefix says how it signs) or --signature-scheme (for a generated one), not both.");
    if (scheme) body.signatureScheme = scheme;
    if (inv.values["max-attempts"] !== undefined) body.maxAttempts = intOption(inv, "max-attempts", 0, 1, 100);
    if (inv.values.description !== undefined) body.description = inv.values.description as string;
    if (inv.values["no-traceparent"] === true) body.sendTraceparent = false;
    const headers = headersOf(inv);
    if (headers) body.headers = headers;
    Object.assign(body, flowOf(inv));
    const auth = await authOf(inv, false);
    if (auth) body.auth = auth as Body["auth"];
    Object.assign(body, await contentFieldsOf(inv, false));
    if (inv.values["backfill-since"] !== undefined) body.backfill = { since: inv.values["backfill-since"] as string, until: inv.values["backfill-until"] as string | undefined };
    else if (inv.values["backfill-until"] !== undefined) throw new UsageError("--backfill-until needs --backfill-since.");
    const sub: Subscription & { backfilled?: number } = await inv.api().POST("/subscriptions", { body });
    if (inv.json) inv.io.stdout(printJson(sub));
    else inv.io.stdout(`Created ${sub.id}${sub.backfilled !== undefined ? ` (${sub.backfilled} past events sent to it)` : ""}. Keep the secret: it is not shown again.\n${record(show(sub))}${(sub.warnings ?? []).map((w) => `warning: ${w}\n`).join("")}`);
  },
};

export const subscriptionsGet: Command = {
  name: "subscriptions get",
  summary: "Show one subscription and its health.",
  usage: "subscriptions get <subscription id>",
  help: "",
  positionals: [1, 1],
  async run(inv) {
    const sub: Subscription = await inv.api().GET("/subscriptions/{id}", { params: { path: { id: inv.positionals[0]! } } });
    inv.io.stdout(inv.json ? printJson(sub) : record(show(sub)));
  },
};

export const subscriptionsEnable: Command = {
  name: "subscriptions enable",
  summary: "Re-enable a degraded or disabled subscription. This closes the circuit; its kept deliveries resume.",
  usage: "subscriptions enable <subscription id>",
  help: "",
  positionals: [1, 1],
  async run(inv) {
    const sub: Subscription = await inv.api().POST("/subscriptions/{id}/enable", { params: { path: { id: inv.positionals[0]! } } });
    if (inv.json) inv.io.stdout(printJson(sub));
    else inv.io.stdout(`Enabled ${sub.id ?? inv.positionals[0]}: health ${healthOf(sub.status ?? "active")}.\n`);
  },
};
