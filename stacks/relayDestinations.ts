/**
 * `relayDestinations` (issue 31): the queues, topics and event buses of a stack's own cloud its relay
 * may send subscriptions' events to. Each entry names one resource exactly (an ARN, an Azure resource
 * id, a Pub/Sub topic), so each stack can turn its cloud's entries into grants on exactly those
 * resources, for the relay's identity alone (stacks/aws/destinationGrants.ts, the Azure stack's relay
 * grants, stacks/gcp/destinationPublishers.ts). The other clouds' entries are not this stack's
 * business: one list serves all three stacks, and every entry must be of a form below, so a typo
 * stops the synth instead of leaving the relay without its grant.
 *
 * The forms (docs/clouds.md#configuration):
 * - `arn:aws:sqs:<region>:<account>:<queue>`: SQS queue → `sqs:SendMessage`
 * - `arn:aws:sns:<region>:<account>:<topic>`: SNS topic → `sns:Publish`
 * - `arn:aws:events:<region>:<account>:event-bus/<name>`: EventBridge bus → `events:PutEvents`
 * - `{ "arn": "<sqs or sns arn>", "kmsKeyArn": "arn:aws:kms:…:key/<id>" }`: also `kms:GenerateDataKey`
 *   and `kms:Decrypt` on that key, which a producer needs to send to a queue or topic encrypted with a
 *   customer-managed key (an EventBridge bus uses its key through the key policy, not the caller's)
 * - `/subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.ServiceBus/namespaces/<ns>/queues/<q>`
 *   (or `/topics/<t>`): "Azure Service Bus Data Sender" on that queue or topic
 * - `projects/<project>/topics/<topic>`, or `<topic>` in `gcpProject`: `roles/pubsub.publisher` on it
 */
import { z } from "zod";

export type AwsDestinationKind = "sqs" | "sns" | "eventbridge";

export interface AwsRelayDestination {
  cloud: "aws";
  kind: AwsDestinationKind;
  arn: string;
  kmsKeyArn?: string;
}
export interface AzureRelayDestination {
  cloud: "azure";
  kind: "servicebus";
  entity: "queue" | "topic";
  /** The queue's or topic's Resource Manager id: the scope of the role assignment. */
  resourceId: string;
}
export interface GcpRelayDestination {
  cloud: "gcp";
  kind: "pubsub";
  /** Undefined: the stack's `gcpProject`. */
  project?: string;
  topic: string;
}
export type RelayDestination = AwsRelayDestination | AzureRelayDestination | GcpRelayDestination;

const PARTITION = "aws|aws-cn|aws-us-gov";
const REGION = "[a-z]{2}(?:-[a-z]+)+-\\d";
const ACCOUNT = "\\d{12}";
const arnOf = (service: string, resource: string) => new RegExp(`^arn:(?:${PARTITION}):${service}:${REGION}:${ACCOUNT}:${resource}$`);
/** Queue names: up to 80 letters, digits, `-` and `_`, `.fifo` included for a FIFO queue. */
const SQS_ARN = arnOf("sqs", "(?:[A-Za-z0-9_-]{1,75}\\.fifo|[A-Za-z0-9_-]{1,80})");
/** Topic names: up to 256 letters, digits, `-` and `_`, `.fifo` included for a FIFO topic. */
const SNS_ARN = arnOf("sns", "(?:[A-Za-z0-9_-]{1,251}\\.fifo|[A-Za-z0-9_-]{1,256})");
/** Bus names: up to 256 of `[/.\-_A-Za-z0-9]` (partner buses have slashes: `aws.partner/…`). */
const EVENTS_ARN = arnOf("events", "event-bus/[/.\\-_A-Za-z0-9]{1,256}");
const KMS_KEY_ARN = arnOf("kms", "key/(?:mrk-)?[0-9a-f-]{32,36}");
const KMS_ALIAS_ARN = arnOf("kms", "alias/.+");
/** Resource Manager ids are case-insensitive but for the names; entity names as Service Bus allows (no `/`). */
const SERVICE_BUS_ID = /^\/subscriptions\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\/resourceGroups\/[-\w.()]{1,90}\/providers\/Microsoft\.ServiceBus\/namespaces\/[A-Za-z][A-Za-z0-9-]{4,48}[A-Za-z0-9]\/(queues|topics)\/[A-Za-z0-9][A-Za-z0-9._-]{0,259}$/i;
const PROJECT = "[a-z][a-z0-9-]{4,28}[a-z0-9]";
/** Topic names: a letter, then 2-254 of letters, digits and `-_.~+%`; not starting with `goog`. */
const TOPIC = "(?!goog)[A-Za-z][A-Za-z0-9._~+%-]{2,254}";
const PUBSUB_TOPIC = new RegExp(`^projects/(${PROJECT})/topics/(${TOPIC})$`);
const PUBSUB_BARE_TOPIC = new RegExp(`^${TOPIC}$`);

const FORMS =
  "an SQS queue, SNS topic or EventBridge bus ARN (arn:aws:sqs:eu-west-1:123456789012:orders), " +
  "a Service Bus queue or topic resource id (/subscriptions/…/resourceGroups/…/providers/Microsoft.ServiceBus/namespaces/…/queues/…), " +
  "a Pub/Sub topic (projects/<project>/topics/<topic>), " +
  'or {"arn": "<sqs or sns arn>", "kmsKeyArn": "arn:aws:kms:…:key/<id>"}';

type Parsed = { ok: true; destination: RelayDestination } | { ok: false; problem: string };

function parseString(entry: string): Parsed {
  if (/[*?]/.test(entry)) return { ok: false, problem: `${JSON.stringify(entry)} has a wildcard: name each queue, topic or bus exactly (the grants are for the resources listed, nothing else)` };
  if (SQS_ARN.test(entry)) return { ok: true, destination: { cloud: "aws", kind: "sqs", arn: entry } };
  if (SNS_ARN.test(entry)) return { ok: true, destination: { cloud: "aws", kind: "sns", arn: entry } };
  if (EVENTS_ARN.test(entry)) return { ok: true, destination: { cloud: "aws", kind: "eventbridge", arn: entry } };
  if (entry.startsWith("arn:")) {
    return { ok: false, problem: `${JSON.stringify(entry)} is not an SQS queue, SNS topic or EventBridge bus ARN (arn:aws:sqs|sns:<region>:<12-digit account>:<name>, arn:aws:events:<region>:<account>:event-bus/<name>)` };
  }
  const bus = SERVICE_BUS_ID.exec(entry);
  if (bus) return { ok: true, destination: { cloud: "azure", kind: "servicebus", entity: bus[1]!.toLowerCase() === "queues" ? "queue" : "topic", resourceId: entry } };
  if (entry.startsWith("/")) {
    return { ok: false, problem: `${JSON.stringify(entry)} is not a Service Bus queue or topic resource id (/subscriptions/<subscription id>/resourceGroups/<group>/providers/Microsoft.ServiceBus/namespaces/<namespace>/queues/<queue> or …/topics/<topic>; az servicebus queue show --query id prints it)` };
  }
  const topic = PUBSUB_TOPIC.exec(entry);
  if (topic) return { ok: true, destination: { cloud: "gcp", kind: "pubsub", project: topic[1]!, topic: topic[2]! } };
  if (entry.startsWith("projects/")) return { ok: false, problem: `${JSON.stringify(entry)} is not a Pub/Sub topic (projects/<project id>/topics/<topic name>; a topic name starts with a letter, 3-255 characters, not "goog…")` };
  if (PUBSUB_BARE_TOPIC.test(entry)) return { ok: true, destination: { cloud: "gcp", kind: "pubsub", topic: entry } };
  return { ok: false, problem: `${JSON.stringify(entry)} is none of ${FORMS}` };
}

function parseObject(entry: Record<string, unknown>): Parsed {
  const extra = Object.keys(entry).filter((k) => k !== "arn" && k !== "kmsKeyArn");
  if (extra.length > 0) return { ok: false, problem: `unknown field${extra.length > 1 ? "s" : ""} ${extra.join(", ")}: an object entry has "arn" and "kmsKeyArn" only` };
  if (typeof entry.arn !== "string") return { ok: false, problem: 'an object entry needs "arn": the SQS queue or SNS topic ARN' };
  const base = parseString(entry.arn);
  if (!base.ok) return base;
  if (entry.kmsKeyArn === undefined) return base;
  if (base.destination.cloud !== "aws") return { ok: false, problem: '"kmsKeyArn" is for an SQS queue or SNS topic ARN; Azure and GCP entries are strings' };
  if (base.destination.kind === "eventbridge") {
    return { ok: false, problem: `"kmsKeyArn" on an EventBridge bus (${entry.arn}): EventBridge uses a bus's key itself, through the key policy's grant to events.amazonaws.com; the relay needs no KMS permission. List the bus ARN alone` };
  }
  if (typeof entry.kmsKeyArn !== "string") return { ok: false, problem: '"kmsKeyArn" must be a string: arn:aws:kms:<region>:<account>:key/<key id>' };
  if (KMS_ALIAS_ARN.test(entry.kmsKeyArn)) {
    return { ok: false, problem: `"kmsKeyArn" ${JSON.stringify(entry.kmsKeyArn)} is an alias: IAM matches kms:GenerateDataKey and kms:Decrypt on the key's own ARN (aws kms describe-key --key-id <alias> --query KeyMetadata.Arn)` };
  }
  if (!KMS_KEY_ARN.test(entry.kmsKeyArn)) return { ok: false, problem: `"kmsKeyArn" ${JSON.stringify(entry.kmsKeyArn)} is not a KMS key ARN (arn:aws:kms:<region>:<account>:key/<key id>)` };
  return { ok: true, destination: { ...base.destination, kmsKeyArn: entry.kmsKeyArn } };
}

/** What names the same resource twice (Azure ids are case-insensitive; two role assignments of one role to one principal on one scope fail). */
function identity(d: RelayDestination): string {
  if (d.cloud === "aws") return d.arn;
  if (d.cloud === "azure") return d.resourceId.toLowerCase();
  return `${d.project ?? ""}/${d.topic}`;
}

/**
 * The environment's form, `WEBHOOKS_RELAY_DESTINATIONS`: a JSON array (needed for object entries),
 * or the strings separated by commas or white space.
 */
function fromEnvironment(value: unknown): unknown {
  if (typeof value !== "string") return value;
  const text = value.trim();
  if (text.startsWith("[")) {
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      return { notJson: (error as Error).message };
    }
  }
  return text === "" ? [] : text.split(/[\s,]+/).filter((s) => s !== "");
}

export const relayDestinationsSchema = z.preprocess(
  fromEnvironment,
  z.unknown().transform((value, ctx): RelayDestination[] => {
    if (typeof value === "object" && value !== null && "notJson" in value) {
      ctx.addIssue({ code: "custom", message: `starts with "[" but is not JSON (${String((value as { notJson: string }).notJson)}); write a JSON array, or the entries separated by commas` });
      return z.NEVER;
    }
    if (!Array.isArray(value)) {
      ctx.addIssue({ code: "custom", message: `a list of destinations the relay may send to, each ${FORMS}` });
      return z.NEVER;
    }
    const destinations: RelayDestination[] = [];
    const seen = new Map<string, number>();
    value.forEach((entry: unknown, i) => {
      const parsed = typeof entry === "string"
        ? parseString(entry.trim())
        : typeof entry === "object" && entry !== null && !Array.isArray(entry)
          ? parseObject(entry as Record<string, unknown>)
          : { ok: false as const, problem: `${JSON.stringify(entry)} is none of ${FORMS}` };
      if (!parsed.ok) {
        ctx.addIssue({ code: "custom", message: `entry ${i}: ${parsed.problem}` });
        return;
      }
      const key = identity(parsed.destination);
      const earlier = seen.get(key);
      if (earlier !== undefined) {
        ctx.addIssue({ code: "custom", message: `entry ${i} names the same resource as entry ${earlier}: list each once` });
        return;
      }
      seen.set(key, i);
      destinations.push(parsed.destination);
    });
    return destinations;
  }),
);

/** The entries of one cloud, in the order listed. */
export function destinationsOf<C extends RelayDestination["cloud"]>(destinations: readonly RelayDestination[], cloud: C): Extract<RelayDestination, { cloud: C }>[] {
  return destinations.filter((d): d is Extract<RelayDestination, { cloud: C }> => d.cloud === cloud);
}
