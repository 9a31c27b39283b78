/**
 * The `--destination <kind> …` options of `subscriptions create` and `subscriptions update`
 * (issue 31, docs/destinations.md): a queue or broker instead of an HTTP endpoint, each kind with
 * its own options, or the whole destination as JSON (`--destination-file`). Secret parts (an AWS
 * secret access key, a connection string, a service account's private key, a broker password) are
 * read from files, never taken on the command line, where shell history and `ps` would keep them,
 * and never printed: the API answers their readable part only. The CLI checks which options go
 * together; the API checks their values and names the field.
 */
import { UsageError, type Invocation } from "../command.js";
import { parseJsonText, readText } from "./contentOptions.js";

export const DESTINATION_KINDS = ["sqs", "sns", "eventbridge", "servicebus", "pubsub", "rabbitmq"] as const;
type Kind = (typeof DESTINATION_KINDS)[number];

export const DESTINATION_OPTIONS = {
  destination: { type: "string" },
  "destination-file": { type: "string" },
  "queue-url": { type: "string" },
  region: { type: "string" },
  "topic-arn": { type: "string" },
  "event-bus": { type: "string" },
  source: { type: "string" },
  "detail-type": { type: "string" },
  queue: { type: "string" },
  topic: { type: "string" },
  namespace: { type: "string" },
  "connection-string-file": { type: "string" },
  "amqp-url": { type: "string" },
  exchange: { type: "string" },
  "routing-key": { type: "string" },
  "amqp-username": { type: "string" },
  "amqp-password-file": { type: "string" },
  "service-endpoint": { type: "string" },
  emulator: { type: "boolean" },
  "access-key-id": { type: "string" },
  "secret-access-key-file": { type: "string" },
  "session-token-file": { type: "string" },
  "service-account-key-file": { type: "string" },
} as const;

export const DESTINATION_HELP = `Destination: an HTTP endpoint (--endpoint), or a queue or broker (docs/destinations.md).
Without credentials the relay sends as its own cloud identity (the stack's relayDestinations
grants it: docs/clouds.md#configuration); secret parts come from files and are never shown.
  --destination sqs         --queue-url <url> [--region <r>]
  --destination sns         --topic-arn <arn>
  --destination eventbridge --event-bus <name|arn> [--region <r>] [--source <s>] [--detail-type <t>]
      AWS kinds:            [--service-endpoint <url>] (a VPC endpoint; moto)
                            [--access-key-id <id> --secret-access-key-file <path> [--session-token-file <path>]]
  --destination servicebus  --queue <name> | --topic <name>, and
                            --namespace <name>.servicebus.windows.net (the relay's managed identity)
                            or --connection-string-file <path>
  --destination pubsub      --topic projects/<project>/topics/<topic>
                            [--service-account-key-file <json key>] [--service-endpoint <host:port> [--emulator]]
  --destination rabbitmq    --amqp-url amqps://<host>[/<vhost>] --exchange <name> --routing-key <key>
                            [--amqp-username <u> --amqp-password-file <path>]
  --destination-file <path> the whole destination as JSON ({"kind": "sqs", "queueUrl": …}; - reads standard input)`;

const AWS_SHARED = ["service-endpoint", "access-key-id", "secret-access-key-file", "session-token-file"];
/** The options each kind takes (beyond --destination). */
const KIND_OPTIONS: Record<Kind, string[]> = {
  sqs: ["queue-url", "region", ...AWS_SHARED],
  sns: ["topic-arn", ...AWS_SHARED],
  eventbridge: ["event-bus", "region", "source", "detail-type", ...AWS_SHARED],
  servicebus: ["queue", "topic", "namespace", "connection-string-file"],
  pubsub: ["topic", "service-account-key-file", "service-endpoint", "emulator"],
  rabbitmq: ["amqp-url", "exchange", "routing-key", "amqp-username", "amqp-password-file"],
};
const ALL_KIND_OPTIONS = [...new Set(Object.values(KIND_OPTIONS).flat())];

const given = (inv: Invocation, option: string) => inv.values[option] !== undefined;
const text = (inv: Invocation, option: string) => inv.values[option] as string | undefined;

function requireOption(inv: Invocation, kind: Kind, option: string, what: string): string {
  const value = text(inv, option);
  if (value === undefined || value === "") throw new UsageError(`--destination ${kind} needs --${option} (${what}).`);
  return value;
}

/** A secret file's text, trimmed (a trailing newline is the editor's, not the secret's). */
async function secretFile(inv: Invocation, option: string): Promise<string> {
  const value = (await readText(text(inv, option)!, `--${option}`)).trim();
  if (value === "") throw new UsageError(`--${option}: ${text(inv, option)} is empty.`);
  return value;
}

async function awsCredentials(inv: Invocation, kind: Kind): Promise<Record<string, string> | undefined> {
  const id = text(inv, "access-key-id");
  const secret = given(inv, "secret-access-key-file");
  if (id === undefined && !secret) {
    if (given(inv, "session-token-file")) throw new UsageError("--session-token-file goes with --access-key-id and --secret-access-key-file.");
    return undefined;
  }
  if (id === undefined || !secret) throw new UsageError(`--destination ${kind} credentials need both --access-key-id and --secret-access-key-file (or neither: the relay's own IAM role).`);
  return {
    accessKeyId: id,
    secretAccessKey: await secretFile(inv, "secret-access-key-file"),
    ...(given(inv, "session-token-file") ? { sessionToken: await secretFile(inv, "session-token-file") } : {}),
  };
}

/** A service account's JSON key file: its client_email and private_key (the rest is not needed to publish). */
async function serviceAccountKey(inv: Invocation): Promise<{ clientEmail: string; privateKey: string }> {
  const file = text(inv, "service-account-key-file")!;
  const key = parseJsonText(await readText(file, "--service-account-key-file"), `--service-account-key-file ${file}`, "the JSON key gcloud iam service-accounts keys create writes", "a service account's JSON key") as Record<string, unknown> | null;
  if (typeof key !== "object" || key === null || typeof key.client_email !== "string" || typeof key.private_key !== "string") {
    throw new UsageError(`--service-account-key-file ${file} has no client_email and private_key: give the JSON key of a service account (gcloud iam service-accounts keys create).`);
  }
  return { clientEmail: key.client_email, privateKey: key.private_key };
}

/**
 * The destination the options describe: undefined when none is given (the subscription's `url`,
 * from --endpoint, decides). Options of another kind than --destination's are refused, and so is
 * --endpoint beside a destination.
 */
export async function destinationOf(inv: Invocation): Promise<Record<string, unknown> | undefined> {
  const kind = text(inv, "destination");
  const file = text(inv, "destination-file");
  const kindOptions = ALL_KIND_OPTIONS.filter((o) => given(inv, o));
  if (file !== undefined) {
    if (kind !== undefined || kindOptions.length > 0) throw new UsageError(`Give --destination-file or --destination with its options, not both (got --${kind !== undefined ? "destination" : kindOptions[0]}).`);
    if (given(inv, "endpoint")) throw new UsageError("Give --endpoint (an HTTP endpoint) or --destination-file, not both.");
    const parsed = parseJsonText(await readText(file, "--destination-file"), `--destination-file ${file}`, `{"kind": "sqs", "queueUrl": "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"}`, "a JSON object");
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed) || typeof (parsed as { kind?: unknown }).kind !== "string") {
      throw new UsageError(`--destination-file ${file} must be a JSON object with a "kind" (${["http", ...DESTINATION_KINDS].join(", ")}).`);
    }
    return parsed as Record<string, unknown>;
  }
  if (kind === undefined) {
    if (kindOptions.length > 0) throw new UsageError(`--${kindOptions[0]} needs --destination (${DESTINATION_KINDS.join(", ")}).`);
    return undefined;
  }
  if (kind === "http") {
    if (kindOptions.length > 0) throw new UsageError(`--${kindOptions[0]} does not apply to --destination http.`);
    if (!given(inv, "endpoint")) throw new UsageError("--destination http needs --endpoint <url>.");
    return undefined;
  }
  if (!(DESTINATION_KINDS as readonly string[]).includes(kind)) throw new UsageError(`--destination must be ${DESTINATION_KINDS.join(", ")} (or http, the default, with --endpoint); got ${JSON.stringify(kind)}.`);
  const k = kind as Kind;
  const foreign = kindOptions.find((o) => !KIND_OPTIONS[k].includes(o));
  if (foreign) throw new UsageError(`--${foreign} does not apply to --destination ${k} (it takes ${KIND_OPTIONS[k].map((o) => `--${o}`).join(", ")}).`);
  if (given(inv, "endpoint")) throw new UsageError(`Give --endpoint (an HTTP endpoint) or --destination ${k}, not both: --service-endpoint overrides the service's API endpoint.`);
  const optional = (option: string, field: string) => (given(inv, option) ? { [field]: text(inv, option) } : {});
  const withCredentials = (credentials: Record<string, string> | undefined) => (credentials ? { credentials } : {});
  switch (k) {
    case "sqs":
      return { kind: k, queueUrl: requireOption(inv, k, "queue-url", "https://sqs.<region>.amazonaws.com/<account>/<queue>"), ...optional("region", "region"), ...optional("service-endpoint", "endpoint"), ...withCredentials(await awsCredentials(inv, k)) };
    case "sns":
      return { kind: k, topicArn: requireOption(inv, k, "topic-arn", "arn:aws:sns:<region>:<account>:<topic>"), ...optional("service-endpoint", "endpoint"), ...withCredentials(await awsCredentials(inv, k)) };
    case "eventbridge":
      return {
        kind: k, eventBus: requireOption(inv, k, "event-bus", "a bus name with --region, or its ARN"), ...optional("region", "region"), ...optional("source", "source"),
        ...optional("detail-type", "detailType"), ...optional("service-endpoint", "endpoint"), ...withCredentials(await awsCredentials(inv, k)),
      };
    case "servicebus": {
      if (given(inv, "queue") === given(inv, "topic")) throw new UsageError("--destination servicebus needs --queue <name> or --topic <name> (one of them).");
      const connection = given(inv, "connection-string-file");
      if (!connection && !given(inv, "namespace")) throw new UsageError("--destination servicebus needs --namespace <name>.servicebus.windows.net (to send as the relay's managed identity) or --connection-string-file <path>.");
      return {
        kind: k, ...optional("queue", "queue"), ...optional("topic", "topic"), ...optional("namespace", "namespace"),
        ...(connection ? { credentials: { connectionString: await secretFile(inv, "connection-string-file") } } : {}),
      };
    }
    case "pubsub": {
      if (inv.values.emulator === true && !given(inv, "service-endpoint")) throw new UsageError("--emulator needs --service-endpoint <host:port> (the emulator's).");
      return {
        kind: k, topic: requireOption(inv, k, "topic", "projects/<project>/topics/<topic>"), ...optional("service-endpoint", "endpoint"),
        ...(inv.values.emulator === true ? { emulator: true } : {}),
        ...(given(inv, "service-account-key-file") ? { credentials: await serviceAccountKey(inv) } : {}),
      };
    }
    case "rabbitmq": {
      const username = text(inv, "amqp-username");
      const password = given(inv, "amqp-password-file");
      if ((username === undefined) !== !password) throw new UsageError("--destination rabbitmq credentials need both --amqp-username and --amqp-password-file (or neither).");
      const exchange = text(inv, "exchange");
      if (exchange === undefined) throw new UsageError('--destination rabbitmq needs --exchange (an exchange name; "" is the default exchange, where the routing key names a queue).');
      const routingKey = text(inv, "routing-key");
      if (routingKey === undefined) throw new UsageError("--destination rabbitmq needs --routing-key (the key the exchange routes by).");
      return {
        kind: k, url: requireOption(inv, k, "amqp-url", "amqps://<host>[:<port>][/<vhost>]"), exchange, routingKey,
        ...(username !== undefined ? { credentials: { username, password: await secretFile(inv, "amqp-password-file") } } : {}),
      };
    }
  }
}

/** The public view of a destination the API answers (readable credentials only). */
export interface PublicDestination {
  kind: string;
  url?: string;
  queueUrl?: string;
  topicArn?: string;
  eventBus?: string;
  region?: string;
  endpoint?: string | null;
  fifo?: boolean;
  source?: string;
  detailType?: string | null;
  queue?: string | null;
  topic?: string | null;
  namespace?: string;
  emulator?: boolean;
  exchange?: string;
  routingKey?: string;
  credentials?: { accessKeyId?: string; keyName?: string | null; clientEmail?: string; username?: string } | null;
}

/** One line saying where deliveries go: `sqs https://… (eu-west-1, FIFO)`, `rabbitmq amqps://… exchange orders, routing key order.*`. */
export function describeDestination(d: PublicDestination | undefined, url: string): string {
  if (!d || d.kind === "http") return url;
  const notes = (...parts: (string | false | null | undefined)[]) => {
    const kept = parts.filter((p): p is string => typeof p === "string" && p !== "");
    return kept.length > 0 ? ` (${kept.join(", ")})` : "";
  };
  const via = d.endpoint ? `via ${d.endpoint}` : undefined;
  switch (d.kind) {
    case "sqs": return `sqs ${d.queueUrl}${notes(d.region, d.fifo && "FIFO", via)}`;
    case "sns": return `sns ${d.topicArn}${notes(d.fifo && "FIFO", via)}`;
    case "eventbridge": return `eventbridge ${d.eventBus}${notes(d.region, `source ${d.source}`, `detail-type ${d.detailType ?? "the event's type"}`, via)}`;
    case "servicebus": return `servicebus ${d.namespace} ${d.queue != null ? `queue ${d.queue}` : `topic ${d.topic}`}`;
    case "pubsub": return `pubsub ${d.topic}${notes(via, d.emulator && "emulator")}`;
    case "rabbitmq": return `rabbitmq ${d.url} exchange ${JSON.stringify(d.exchange)}, routing key ${JSON.stringify(d.routingKey)}`;
    default: return `${d.kind} ${url}`;
  }
}

/** Who the relay sends as (never a secret: the API answers none). Undefined for http, which has `auth`. */
export function describeDestinationCredentials(d: PublicDestination | undefined): string | undefined {
  if (!d || d.kind === "http") return undefined;
  const c = d.credentials;
  if (d.kind === "pubsub" && d.emulator) return "no one (the emulator takes no credentials)";
  if (!c) return "the relay's own cloud identity";
  if (c.accessKeyId) return `access key ${c.accessKeyId} (secret stored encrypted)`;
  if (c.clientEmail) return `service account ${c.clientEmail} (key stored encrypted)`;
  if (c.username) return `user ${c.username} (password stored encrypted)`;
  if ("keyName" in c) return `connection string${c.keyName ? ` (policy ${c.keyName})` : ""} (stored encrypted)`;
  return "stored encrypted";
}
