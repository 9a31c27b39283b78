/**
 * A subscription's destination (issue 31, docs/destinations.md): where its deliveries go. `http`
 * (an endpoint URL, the default) or a queue or broker of the customer's:
 *
 * | kind | settings | credentials (secret part sealed at rest, never answered) |
 * |---|---|---|
 * | `sqs` | queueUrl, region?, endpoint? | accessKeyId, secretAccessKey, sessionToken? |
 * | `sns` | topicArn, endpoint? | accessKeyId, secretAccessKey, sessionToken? |
 * | `eventbridge` | eventBus (name or ARN), region?, source?, detailType?, endpoint? | accessKeyId, secretAccessKey, sessionToken? |
 * | `servicebus` | queue or topic, namespace? | connectionString |
 * | `pubsub` | topic (projects/…/topics/…), endpoint?, emulator? | clientEmail, privateKey |
 * | `rabbitmq` | url (amqp[s]://host/vhost), exchange, routingKey | username, password |
 *
 * Without `credentials` the relay's own cloud identity is used (the SDKs' default chains: an IAM
 * role, a managed identity, a service account); with them, the readable part (the key id, the user
 * name) is shown, the secret part (`SECRET_FIELDS`) is kept only as envelopes bound to the
 * subscription and the field (`outbound_subscriptions.destination.<field>:<id>`), as signing
 * secrets and endpoint auth secrets are, and the re-encryption pass rewrites them too.
 *
 * Stored form (`outbound_subscriptions.destination`, migration 025): `{kind, version, …settings,
 * credentials: readable part | null, sealed: {field: envelope}}`; NULL for `http`. Each stored
 * configuration has a random `version`: the relay's pooled client for a destination is keyed by
 * it, so a changed configuration never goes on with the old client. The subscription's `url`
 * column holds, for a non-http kind, a read-only description `<kind>:<where>` (DESTINATION_PREFIX),
 * never starting with `http`: the relay tells an HTTP delivery from the others by that alone.
 *
 * Only this module knows the shapes; no cloud SDK is imported here (senders.ts loads them lazily).
 */
import { randomBytes } from "node:crypto";
import * as z from "zod/mini";
import { activeKeyring } from "../../crypto/activeKeyring.js";
import { seal } from "../../crypto/envelope.js";
import { openValue } from "../../crypto/subscriptionSecrets.js";
import type { DestinationPolicy } from "../destinationPolicy.js";
import { OutboundValidationError } from "../errors.js";
import { httpUrlSchema } from "../httpUrl.js";

export const DESTINATION_KINDS = ["http", "sqs", "sns", "eventbridge", "servicebus", "pubsub", "rabbitmq"] as const;
export type DestinationKind = (typeof DESTINATION_KINDS)[number];
export type QueueDestinationKind = Exclude<DestinationKind, "http">;

/** Whether a subscription's `url` column names an HTTP endpoint (every other kind's starts with its own `<kind>:`). */
export const isHttpUrl = (url: string): boolean => url.startsWith("https://") || url.startsWith("http://");

const PRINTABLE = /^[\x20-\x7e]*$/;
const text = (max: number) => z.string().check(z.minLength(1, "must not be empty"), z.maxLength(max, `must have at most ${max} characters`));
const printable = (max: number) => text(max).check(z.regex(PRINTABLE, "must be printable ASCII"));

/** AWS region names (us-east-1, eu-central-2, us-gov-west-1, cn-north-1…). */
const regionSchema = z.string().check(z.regex(/^[a-z]{2}(-[a-z]+)+-\d{1,2}$/, "must be an AWS region such as eu-west-1"));
/** An AWS API endpoint override (a VPC endpoint, moto, LocalStack): checked against the destination policy at creation. */
const awsEndpointSchema = httpUrlSchema({ example: "https://sqs.eu-west-1.amazonaws.com", credentialsHint: "give credentials" })
  .check(z.describe("Overrides the service's API endpoint (a VPC endpoint, or a stand-in such as moto); default: the region's."));

const awsCredentialsSchema = z.strictObject({
  accessKeyId: printable(128).check(z.regex(/^[A-Z0-9]{16,128}$/, "must be an AWS access key id (AKIA… or ASIA…)")),
  /** Stored encrypted; never answered. */
  secretAccessKey: printable(256),
  /** For temporary credentials (ASIA…). Stored encrypted; never answered. */
  sessionToken: z.optional(text(4096)),
}).check(z.describe("An access key for this destination only. Omit to send with the relay's own IAM role (preferred: docs/destinations.md#permissions)."));

const SQS_QUEUE_URL = /^\/(\d{12})\/([A-Za-z0-9_-]{1,80}(\.fifo)?)$/;
const sqsSchema = z.strictObject({
  kind: z.literal("sqs"),
  /** The queue's URL as SQS gives it (https://sqs.<region>.amazonaws.com/<account>/<name>); a `.fifo` name makes it a FIFO queue. */
  queueUrl: httpUrlSchema({ example: "https://sqs.eu-west-1.amazonaws.com/123456789012/orders", credentialsHint: "give credentials" }).check(
    z.refine((u) => { try { return SQS_QUEUE_URL.test(new URL(u).pathname); } catch { return true; } }, "must be a queue URL ending in /<12-digit account>/<queue name>"),
  ),
  /** Default: read from the queue URL's host (sqs.<region>.amazonaws.com). */
  region: z.optional(regionSchema),
  endpoint: z.optional(awsEndpointSchema),
  credentials: z.optional(awsCredentialsSchema),
});

const SNS_TOPIC_ARN = /^arn:aws[a-z-]*:sns:([a-z]{2}(?:-[a-z]+)+-\d{1,2}):(\d{12}):([A-Za-z0-9_-]{1,256}(\.fifo)?)$/;
const snsSchema = z.strictObject({
  kind: z.literal("sns"),
  /** arn:aws:sns:<region>:<account>:<topic>; a `.fifo` topic is a FIFO topic. Its region is the ARN's. */
  topicArn: z.string().check(z.regex(SNS_TOPIC_ARN, "must be an SNS topic ARN such as arn:aws:sns:eu-west-1:123456789012:orders")),
  endpoint: z.optional(awsEndpointSchema),
  credentials: z.optional(awsCredentialsSchema),
});

const EVENT_BUS_ARN = /^arn:aws[a-z-]*:events:([a-z]{2}(?:-[a-z]+)+-\d{1,2}):(\d{12}):event-bus\/([A-Za-z0-9._/-]{1,256})$/;
const EVENT_BUS_NAME = /^[A-Za-z0-9._/-]{1,256}$/;
const eventBridgeSchema = z.strictObject({
  kind: z.literal("eventbridge"),
  /** An event bus name (`default`, `orders`) or ARN (arn:aws:events:<region>:<account>:event-bus/<name>: another account's). */
  eventBus: z.string().check(z.refine((b) => EVENT_BUS_ARN.test(b) || EVENT_BUS_NAME.test(b), "must be an event bus name (letters, digits, . _ - /) or its ARN (arn:aws:events:<region>:<account>:event-bus/<name>)")),
  /** Required with a bus name; with an ARN, the ARN's. */
  region: z.optional(regionSchema),
  /** The events' `source`, what rules match on. Default: `multicloud-webhooks`. `aws.` sources are AWS's own. */
  source: z.optional(printable(256).check(z.refine((s) => !s.startsWith("aws."), "must not start with aws. (reserved for AWS services)"))),
  /** The events' `detail-type`. Default: the event's type (order.paid), so rules can match on it. */
  detailType: z.optional(printable(128)),
  endpoint: z.optional(awsEndpointSchema),
  credentials: z.optional(awsCredentialsSchema),
});

const SERVICE_BUS_ENTITY = /^[A-Za-z0-9][A-Za-z0-9._~/-]{0,259}$/;
const SERVICE_BUS_NAMESPACE = /^[A-Za-z0-9.-]{1,253}(:\d{1,5})?$/;
const serviceBusSchema = z.strictObject({
  kind: z.literal("servicebus"),
  /** The queue to send to. Give `queue` or `topic`. */
  queue: z.optional(z.string().check(z.regex(SERVICE_BUS_ENTITY, "must be a Service Bus queue name"))),
  /** The topic to send to. Give `queue` or `topic`. */
  topic: z.optional(z.string().check(z.regex(SERVICE_BUS_ENTITY, "must be a Service Bus topic name"))),
  /** `<name>.servicebus.windows.net`, to send with the relay's Entra ID identity (role Azure Service Bus Data Sender). Or give credentials. */
  namespace: z.optional(z.string().check(z.regex(SERVICE_BUS_NAMESPACE, "must be a host name such as mynamespace.servicebus.windows.net"))),
  credentials: z.optional(z.strictObject({
    /** Endpoint=sb://<namespace>/;SharedAccessKeyName=…;SharedAccessKey=… (a Send-only policy is enough). Stored encrypted; never answered. */
    connectionString: printable(2048).check(z.regex(/(^|;)\s*Endpoint=sb:\/\/[^;]+/i, "must be a Service Bus connection string (Endpoint=sb://…;SharedAccessKeyName=…;SharedAccessKey=…)")),
  })),
}).check(
  z.refine((s) => (s.queue === undefined) !== (s.topic === undefined), { message: "give queue or topic (one of them)", path: ["queue"] }),
  z.refine((s) => s.namespace !== undefined || s.credentials !== undefined, { message: "give namespace (to send with the relay's identity) or credentials.connectionString", path: ["namespace"] }),
);

const PUBSUB_TOPIC = /^projects\/([a-z][a-z0-9.:-]{4,62}[a-z0-9])\/topics\/([A-Za-z][A-Za-z0-9._~%+-]{2,254})$/;
const pubsubSchema = z.strictObject({
  kind: z.literal("pubsub"),
  /** projects/<project>/topics/<topic>. */
  topic: z.string().check(z.regex(PUBSUB_TOPIC, "must be projects/<project id>/topics/<topic id>")),
  /** host:port of the API (a private endpoint, or the emulator). Default: pubsub.googleapis.com. */
  endpoint: z.optional(z.string().check(z.regex(/^[A-Za-z0-9.-]+(:\d{1,5})?$/, "must be host or host:port"))),
  /** Plaintext without credentials, for the Pub/Sub emulator only (with `endpoint`). */
  emulator: z.optional(z.boolean()),
  credentials: z.optional(z.strictObject({
    /** The service account (…@….iam.gserviceaccount.com); it needs roles/pubsub.publisher on the topic. */
    clientEmail: printable(320).check(z.regex(/^[^@\s]+@[^@\s]+$/, "must be a service account e-mail")),
    /** Its key's private_key (PEM). Stored encrypted; never answered. */
    privateKey: text(10_000).check(z.regex(/-----BEGIN (RSA )?PRIVATE KEY-----/, "must be a PEM private key (the private_key of the service account's JSON key)")),
  })),
}).check(z.refine((s) => !s.emulator || s.endpoint !== undefined, { message: "give the emulator's endpoint (host:port)", path: ["endpoint"] }));

const AMQP_NAME = /^[A-Za-z0-9._:/-]*$/;
const rabbitmqSchema = z.strictObject({
  kind: z.literal("rabbitmq"),
  /** amqps://host[:port][/vhost] (or amqp:// on a private network); credentials go in `credentials`. */
  url: z.string().check(z.maxLength(2048, "must have at most 2048 characters"), z.superRefine((value, ctx) => {
    let url: URL;
    try { url = new URL(value); } catch { ctx.addIssue({ code: "custom", message: "must be an AMQP URL such as amqps://broker.example.com/vhost" }); return; }
    if (url.protocol !== "amqp:" && url.protocol !== "amqps:") ctx.addIssue({ code: "custom", message: "must use amqps (or amqp)" });
    if (url.username || url.password) ctx.addIssue({ code: "custom", message: "must not carry credentials; give credentials.username and credentials.password" });
    if (url.hash || url.search) ctx.addIssue({ code: "custom", message: "must not have a ?query or #fragment (connection settings are the relay's)" });
    if (!url.hostname) ctx.addIssue({ code: "custom", message: "must name the broker's host" });
  })),
  /** The exchange to publish to; "" is the default exchange (the routing key is then a queue's name). It must exist. */
  exchange: z.string().check(z.maxLength(255, "must have at most 255 characters"), z.regex(AMQP_NAME, "must be letters, digits, and . _ : / -")),
  routingKey: z.string().check(z.maxLength(255, "must have at most 255 characters"), z.regex(PRINTABLE, "must be printable ASCII")),
  credentials: z.optional(z.strictObject({
    username: printable(255),
    /** Stored encrypted; never answered. */
    password: printable(1024),
  })),
});

const httpSchema = z.strictObject({
  kind: z.literal("http"),
  url: httpUrlSchema({ example: "https://example.com/webhooks", credentialsHint: "receivers verify our signature instead" }),
});

/** What `destination` of a subscription accepts (creation and edit). `{kind: "http", url}` is the same as `url`. */
export const destinationInputSchema = z.discriminatedUnion("kind", [httpSchema, sqsSchema, snsSchema, eventBridgeSchema, serviceBusSchema, pubsubSchema, rabbitmqSchema]).check(
  z.describe("Where deliveries go (docs/destinations.md): `http` (an endpoint URL, the same as giving `url`), `sqs`, `sns`, `eventbridge`, `servicebus`, `pubsub` or `rabbitmq`. Each message carries the signed envelope as its body and webhook-id, webhook-timestamp, webhook-signature as attributes. Secret parts of `credentials` are stored encrypted and never answered; send the whole object again to change them."),
);

export type DestinationInput = z.infer<typeof destinationInputSchema>;
export type QueueDestinationInput = Exclude<DestinationInput, { kind: "http" }>;

/** The secret fields of each kind's `credentials`: sealed in storage, absent from answers. */
export const SECRET_FIELDS = {
  sqs: ["secretAccessKey", "sessionToken"],
  sns: ["secretAccessKey", "sessionToken"],
  eventbridge: ["secretAccessKey", "sessionToken"],
  servicebus: ["connectionString"],
  pubsub: ["privateKey"],
  rabbitmq: ["password"],
} as const satisfies Record<QueueDestinationKind, readonly string[]>;

/** Readable credentials, per kind (what answers show). */
export type PublicCredentials =
  | { accessKeyId: string }
  | { keyName: string | null }
  | { clientEmail: string }
  | { username: string };

/** The settings of each kind as stored and answered (defaults filled in, no credentials). */
export type DestinationSettings =
  | { kind: "sqs"; queueUrl: string; region: string; endpoint: string | null; fifo: boolean }
  | { kind: "sns"; topicArn: string; region: string; endpoint: string | null; fifo: boolean }
  | { kind: "eventbridge"; eventBus: string; region: string; source: string; detailType: string | null; endpoint: string | null }
  | { kind: "servicebus"; queue: string | null; topic: string | null; namespace: string }
  | { kind: "pubsub"; topic: string; endpoint: string | null; emulator: boolean }
  | { kind: "rabbitmq"; url: string; exchange: string; routingKey: string };

/** `outbound_subscriptions.destination`. */
export type StoredDestination = DestinationSettings & {
  version: string;
  credentials: PublicCredentials | null;
  /** The secret parts, each an envelope bound to (subscription, field). */
  sealed: Record<string, string>;
};

/** A stored destination with its secret parts in clear (for the senders only). */
export type OpenDestination = DestinationSettings & { version: string; credentials: PublicCredentials | null; secrets: Record<string, string> };

/** What the API shows of a subscription's destination: its settings, and the readable part of its credentials. */
export type PublicDestination =
  | { kind: "http"; url: string }
  | (DestinationSettings & { credentials: PublicCredentials | null });

/** The default `source` of EventBridge events. */
export const DEFAULT_EVENTBRIDGE_SOURCE = "multicloud-webhooks";

/** Where a secret part of a subscription's destination is bound (the envelope's AAD). */
export const destinationWhere = (subscriptionId: string, field: string): string => `outbound_subscriptions.destination.${field}:${subscriptionId}`;

const invalid = (path: string, message: string): never => {
  throw new OutboundValidationError(`Invalid subscription: destination.${path}: ${message}`, [{ path: `destination.${path}`, message }]);
};

/** sqs.<region>.amazonaws.com[.cn], <region>.queue.amazonaws.com, sqs-fips.<region>…: the region in an SQS host. */
function regionOfSqsHost(host: string): string | null {
  const m = /^(?:sqs(?:-fips)?\.)?([a-z]{2}(?:-[a-z]+)+-\d{1,2})\.(?:queue\.)?amazonaws\.com(?:\.cn)?$/.exec(host) ?? /^sqs\.([a-z]{2}(?:-[a-z]+)+-\d{1,2})\./.exec(host);
  return m ? m[1]! : null;
}

/** The namespace host of a Service Bus connection string, and its key name. */
export function parseConnectionString(connectionString: string): { namespace: string; keyName: string | null; entityPath: string | null } {
  const parts = new Map<string, string>();
  for (const part of connectionString.split(";")) {
    const at = part.indexOf("=");
    if (at > 0) parts.set(part.slice(0, at).trim().toLowerCase(), part.slice(at + 1).trim());
  }
  const endpoint = parts.get("endpoint") ?? "";
  let namespace = "";
  try { namespace = new URL(endpoint).host; } catch { /* checked by the caller */ }
  return { namespace, keyName: parts.get("sharedaccesskeyname") ?? null, entityPath: parts.get("entitypath") ?? null };
}

/** The settings of a validated input, defaults filled in. Throws OutboundValidationError for what the schema cannot see alone. */
function settingsOf(input: QueueDestinationInput): DestinationSettings {
  switch (input.kind) {
    case "sqs": {
      const url = new URL(input.queueUrl);
      const region = input.region ?? regionOfSqsHost(url.hostname) ?? invalid("region", `is required: the queue URL's host (${url.hostname}) does not name one`);
      return { kind: "sqs", queueUrl: input.queueUrl, region, endpoint: input.endpoint ?? null, fifo: url.pathname.endsWith(".fifo") };
    }
    case "sns": {
      const m = SNS_TOPIC_ARN.exec(input.topicArn)!;
      return { kind: "sns", topicArn: input.topicArn, region: m[1]!, endpoint: input.endpoint ?? null, fifo: input.topicArn.endsWith(".fifo") };
    }
    case "eventbridge": {
      const arn = EVENT_BUS_ARN.exec(input.eventBus);
      if (arn && input.region !== undefined && input.region !== arn[1]) invalid("region", `is ${input.region} but the event bus ARN is in ${arn[1]}; omit region`);
      const region = arn ? arn[1]! : input.region ?? invalid("region", "is required with an event bus name (or give the bus's ARN)");
      return { kind: "eventbridge", eventBus: input.eventBus, region, source: input.source ?? DEFAULT_EVENTBRIDGE_SOURCE, detailType: input.detailType ?? null, endpoint: input.endpoint ?? null };
    }
    case "servicebus": {
      let namespace = input.namespace;
      if (input.credentials) {
        const parsed = parseConnectionString(input.credentials.connectionString);
        if (!parsed.namespace) invalid("credentials.connectionString", "has no Endpoint=sb://<namespace>/");
        if (!/(^|;)\s*SharedAccessKey=/i.test(input.credentials.connectionString) && !/(^|;)\s*SharedAccessSignature=/i.test(input.credentials.connectionString)) {
          invalid("credentials.connectionString", "has no SharedAccessKey (or SharedAccessSignature)");
        }
        if (namespace !== undefined && namespace !== parsed.namespace) invalid("namespace", `is ${namespace} but the connection string's is ${parsed.namespace}; omit namespace`);
        const entity = input.queue ?? input.topic;
        if (parsed.entityPath && parsed.entityPath !== entity) invalid("credentials.connectionString", `is for entity ${parsed.entityPath}, not ${entity}`);
        namespace = parsed.namespace;
      }
      return { kind: "servicebus", queue: input.queue ?? null, topic: input.topic ?? null, namespace: namespace! };
    }
    case "pubsub":
      return { kind: "pubsub", topic: input.topic, endpoint: input.endpoint ?? null, emulator: input.emulator ?? false };
    case "rabbitmq":
      return { kind: "rabbitmq", url: input.url, exchange: input.exchange, routingKey: input.routingKey };
  }
}

/** The readable part of validated credentials. */
function publicCredentialsOf(input: QueueDestinationInput): PublicCredentials | null {
  if (!input.credentials) return null;
  switch (input.kind) {
    case "sqs": case "sns": case "eventbridge":
      return { accessKeyId: input.credentials.accessKeyId };
    case "servicebus":
      return { keyName: parseConnectionString(input.credentials.connectionString).keyName };
    case "pubsub":
      return { clientEmail: input.credentials.clientEmail };
    case "rabbitmq":
      return { username: input.credentials.username };
  }
}

/** The hosts a destination's sender connects to (checked against the destination policy at creation). */
export function hostsOf(settings: DestinationSettings): string[] {
  const hostOf = (u: string | null) => (u ? new URL(u).hostname : null);
  const hosts: (string | null)[] = [];
  switch (settings.kind) {
    case "sqs": hosts.push(hostOf(settings.endpoint) ?? hostOf(settings.queueUrl)); break;
    case "sns": case "eventbridge": hosts.push(hostOf(settings.endpoint)); break;
    case "servicebus": hosts.push(settings.namespace.replace(/:\d+$/, "")); break;
    case "pubsub": hosts.push(settings.endpoint ? settings.endpoint.replace(/:\d+$/, "") : null); break;
    case "rabbitmq": hosts.push(hostOf(settings.url)); break;
  }
  return hosts.filter((h): h is string => h !== null && h !== "");
}

/** The read-only `url` of a non-http destination: `<kind>:<where>` (never http…, see isHttpUrl). */
export function describeDestination(settings: DestinationSettings): string {
  switch (settings.kind) {
    case "sqs": return `sqs:${settings.queueUrl}`;
    case "sns": return `sns:${settings.topicArn}`;
    case "eventbridge": return `eventbridge:${settings.eventBus.startsWith("arn:") ? settings.eventBus : `${settings.region}/${settings.eventBus}`}`;
    case "servicebus": return `servicebus:sb://${settings.namespace}/${settings.queue ?? `topics/${settings.topic}`}`;
    case "pubsub": return `pubsub:${settings.topic}`;
    case "rabbitmq": {
      const base = settings.url.replace(/\/$/, "");
      return `rabbitmq:${base}?exchange=${encodeURIComponent(settings.exchange)}&routingKey=${encodeURIComponent(settings.routingKey)}`;
    }
  }
}

/** Per-kind limits on custom headers, which travel as message attributes: SQS and SNS carry at most 10 (4 are ours). */
export const MAX_HEADER_ATTRIBUTES: Partial<Record<QueueDestinationKind, number>> = { sqs: 6, sns: 6 };

/**
 * The stored form of a validated non-http destination (secret parts sealed for `subscriptionId`),
 * and its `url` (describeDestination). With `policy`, hosts it connects to that the destination
 * policy refuses (IP literals, local names) are rejected here, as endpoint URLs are.
 */
export function prepareDestination(
  subscriptionId: string,
  input: QueueDestinationInput,
  policy?: Pick<DestinationPolicy, "checkHost">,
): { stored: StoredDestination; url: string } {
  const settings = settingsOf(input);
  if (policy) {
    for (const host of hostsOf(settings)) {
      try {
        policy.checkHost(host);
      } catch (error) {
        invalid(settings.kind === "rabbitmq" ? "url" : settings.kind === "servicebus" ? "namespace" : "endpoint", (error as Error).message);
      }
    }
  }
  const sealed: Record<string, string> = {};
  if (input.credentials) {
    const keyring = activeKeyring();
    for (const field of SECRET_FIELDS[input.kind]) {
      const value = (input.credentials as Record<string, string | undefined>)[field];
      if (value !== undefined) sealed[field] = seal(keyring, value, destinationWhere(subscriptionId, field));
    }
  }
  const stored: StoredDestination = { ...settings, version: randomBytes(9).toString("base64url"), credentials: publicCredentialsOf(input), sealed };
  return { stored, url: describeDestination(settings) };
}

/** The stored form with its secret parts decrypted (for the senders). Throws the unreadable-secret errors. */
export function openDestination(subscriptionId: string, stored: StoredDestination): OpenDestination {
  const { sealed, ...rest } = stored;
  const secrets: Record<string, string> = {};
  for (const [field, value] of Object.entries(sealed ?? {})) secrets[field] = openValue(value, destinationWhere(subscriptionId, field));
  return { ...rest, secrets };
}

/** What the API shows of a subscription's destination (`stored` null: http, at `url`). */
export function publicDestination(stored: StoredDestination | null | undefined, url: string): PublicDestination {
  if (!stored) return { kind: "http", url };
  const { sealed: _sealed, version: _version, ...shown } = stored;
  return shown;
}
