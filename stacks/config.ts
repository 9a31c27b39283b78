/**
 * Configuration shared by the three stacks: one flat, typed, validated object.
 *
 * Sources, later wins: defaults < `cdktf.json` → `context.webhooks` < environment
 * (`WEBHOOKS_` + the key in SCREAMING_SNAKE_CASE, e.g. `maxDeliveryAttempts` ←
 * `WEBHOOKS_MAX_DELIVERY_ATTEMPTS`). A bad value stops the synth with a message naming the key,
 * the variable and what it expects.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { relayDestinationsSchema } from "./relayDestinations.js";

export class StackConfigError extends Error {
  override name = "StackConfigError";
}

/** CloudWatch Logs accepts only these retention periods, so every cloud uses one of them. */
const LOG_RETENTION_DAYS = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731] as const;

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const bool = z.union([z.boolean(), z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1")]);

export const stackConfigSchema = z.object({
  /**
   * Prefix of every resource name. Lower-case letters, digits and inner hyphens, 3 to 12
   * characters, because Azure storage accounts (24) and GCP service accounts (30) are short.
   * Storage accounts and Key Vaults are globally unique: pick a prefix of your own. Default: `webhooks`.
   */
  namePrefix: z
    .string()
    .regex(/^[a-z][a-z0-9-]{1,10}[a-z0-9]$/, "3-12 characters: lower-case letters, digits, inner hyphens; starts with a letter")
    .default("webhooks"),
  /** AWS region. Default: `eu-west-1`. */
  awsRegion: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d$/, "an AWS region such as eu-west-1").default("eu-west-1"),
  /** Azure location. Default: `westeurope`. */
  azureLocation: z.string().regex(/^[a-z0-9]+$/, "an Azure location such as westeurope").default("westeurope"),
  /** GCP project id (required to deploy; the default only lets synth run). Default: `webhooks-example`. */
  gcpProject: z.string().regex(/^[a-z][a-z0-9-]{4,28}[a-z0-9]$/, "a GCP project id (6-30 characters)").default("webhooks-example"),
  /** GCP region. Default: `europe-west1`. */
  gcpRegion: z.string().regex(/^[a-z]+-[a-z]+\d$/, "a GCP region such as europe-west1").default("europe-west1"),
  /**
   * Deliveries of one queue message before it goes to the dead-letter queue (SQS
   * `maxReceiveCount`, Service Bus `max_delivery_count`, Pub/Sub `max_delivery_attempts`).
   * 5..100 because Pub/Sub accepts nothing outside that range. Once the inbox holds an entry, its
   * own retry schedule (INBOX_RETRY_SCHEDULE) and quarantine decide; this count covers what fails
   * before that (database unreachable, a crash). On Azure it also bounds the processor's delayed
   * retries before the inbox; on GCP it is the least the push attempts may be (gcpPushRetryMinutes
   * sets them, for pushes refused while every instance is busy). Default: 5.
   */
  maxDeliveryAttempts: int(5, 100).default(5),
  /** Retention of the main queue, days (Pub/Sub subscriptions keep at most 7). Default: 4. */
  queueRetentionDays: int(1, 7).default(4),
  /** Retention of the dead-letter queue, days (SQS keeps at most 14). Default: 14. */
  deadLetterRetentionDays: int(1, 14).default(14),
  /** Most processor instances at once (SQS mapping `maximum_concurrency` needs ≥ 2). Default: 5. */
  processorConcurrency: int(2, 1000).default(5),
  /** Messages handed to one processor invocation (SQS, Service Bus prefetch). Default: 10. */
  processorBatchSize: int(1, 10).default(10),
  /** Processor timeout, seconds; the queue visibility/lock/ack deadline follows from it. Default: 60. */
  processorTimeoutSeconds: int(10, 300).default(60),
  /** Relay timeout, seconds. Default: 120. */
  relayTimeoutSeconds: int(10, 900).default(120),
  /** A relay run starts every N minutes (in `listening` mode each listens until the next has started). Default: 1. */
  relayIntervalMinutes: int(1, 60).default(1),
  /**
   * `listening` (default): each relay run listens (LISTEN/NOTIFY with the poll backstop) for
   * nearly its whole timeout and runs overlap, so one always listens: deliveries within about a
   * second, retries on time; billed for the relay's whole run time. `scheduled`: each run drains
   * what is due and stops, and the management function wakes a run when it commits something to
   * send; writes that bypass the API wait for the next run. See docs/functions.md.
   */
  relayMode: z.enum(["listening", "scheduled"]).default("listening"),
  /** Memory of each function, MiB. Default: 512. */
  functionMemoryMb: int(128, 4096).default(512),
  /** Log retention, days; one of CloudWatch's values. Default: 30. */
  logRetentionDays: z.coerce
    .number()
    .refine((d) => (LOG_RETENTION_DAYS as readonly number[]).includes(d), `one of ${LOG_RETENTION_DAYS.join(", ")}`)
    .default(30),
  /** Automated database backups kept, days. Default: 7. */
  backupRetentionDays: int(1, 35).default(7),
  /** Aurora Serverless v2 capacity range, ACU. Defaults: 0.5 and 4. */
  auroraMinCapacity: z.coerce.number().min(0).max(256).default(0.5),
  auroraMaxCapacity: z.coerce.number().min(1).max(256).default(4),
  /** Azure PostgreSQL Flexible Server SKU. Default: `B_Standard_B1ms`. */
  azurePostgresSku: z.string().regex(/^(B|GP|MO)_\w+$/, "a Flexible Server SKU such as B_Standard_B1ms").default("B_Standard_B1ms"),
  /** Azure PostgreSQL storage, MB. Default: 32768. */
  azurePostgresStorageMb: int(32768, 33553408).default(32768),
  /** Cloud SQL machine tier. Default: `db-custom-1-3840`. */
  cloudSqlTier: z.string().regex(/^db-[a-z0-9-]+$/, "a Cloud SQL tier such as db-custom-1-3840").default("db-custom-1-3840"),
  /**
   * AWS only: API Gateway sends the request straight to SQS (no ingest Lambda) and the processor
   * verifies the signature. See docs/clouds.md for the trade-off. Default: false.
   */
  awsDirectQueueIngress: bool.default(false),
  /**
   * E-mail address told when inbound messages reach the queue's dead-letter store (SNS e-mail
   * subscription, Azure action group, GCP notification channel). Optional; the address must
   * confirm the subscription on AWS.
   */
  alertEmail: z.email("an e-mail address such as ops@example.com").optional(),
  /**
   * Where the relay sends the platform's own alerts (new outbound dead letters and quarantined
   * inbox entries, signed with the secret the operator puts in the cloud's secret store).
   * Optional: without it, those alerts are only logged.
   */
  alertWebhookUrl: z.url({ protocol: /^https$/, error: "an https:// URL" }).optional(),
  /**
   * The functions' traces and metrics, sent to the cloud's own service with no collector (AWS:
   * X-Ray's OTLP endpoint and CloudWatch metrics by EMF; Azure: Application Insights; GCP: the
   * Telemetry API, into Cloud Trace and Cloud Monitoring), which the stack's dashboard and alarms
   * read (docs/operations.md, "In the clouds"). Off: no OTEL_* variable, no SDK loaded, no dashboard or telemetry alarms. Default: true.
   */
  telemetry: bool.default(true),
  /** Share of new traces kept (OTEL_TRACES_SAMPLER parentbased_traceidratio), 0..1; metrics count everything. Default: 1. */
  traceSampleRatio: z.coerce.number().min(0).max(1).default(1),
  /** The queue-lag alarm fires when the oldest due delivery has waited this many seconds. Default: 300. */
  queueLagAlarmSeconds: int(30, 86_400).default(300),
  /**
   * GCP: requests one processor instance serves at once (Cloud Run `max_instance_request_concurrency`);
   * its database pool has as many connections. 1..20 (the pool's limit). Default: 10.
   */
  gcpProcessorRequestConcurrency: int(1, 20).default(10),
  /**
   * GCP: minutes a message may be refused (429 while every processor is busy, 5xx while the database
   * is down) before Pub/Sub dead-letters it; sets the subscription's max delivery attempts (at least
   * `maxDeliveryAttempts`) with a 60 s minimum backoff. 5..90. Default: 30.
   */
  gcpPushRetryMinutes: int(5, 90).default(30),
  /**
   * GCP: Cloud SQL `max_connections` (the flag is set, so the stack can check that every pool fits).
   * Cloud SQL's own default for the default tier (3.75 GB) is 100. Default: 100.
   */
  cloudSqlMaxConnections: int(25, 10_000).default(100),
  /**
   * GCP: Terraform's `deletion_protection` on the Cloud SQL instance. Turn it off (and apply) only to
   * destroy the stack (docs/deploy-gcp.md). Default: true.
   */
  cloudSqlDeletionProtection: bool.default(true),
  /**
   * Queues, topics and event buses of a stack's own cloud the relay may send subscriptions' events to
   * (destinations beyond HTTP, issue 31): each becomes a grant on exactly that resource for the relay's
   * identity alone (SQS/SNS/EventBridge ARNs, Service Bus queue or topic resource ids, Pub/Sub
   * topics; forms in stacks/relayDestinations.ts and docs/clouds.md). In the environment
   * (`WEBHOOKS_RELAY_DESTINATIONS`): a JSON array, or the entries separated by commas. Default: none.
   */
  relayDestinations: relayDestinationsSchema.default([]),
});

export type StackConfig = z.infer<typeof stackConfigSchema>;
export type StackConfigInput = Partial<Record<keyof StackConfig, unknown>>;

/** `maxDeliveryAttempts` → `WEBHOOKS_MAX_DELIVERY_ATTEMPTS`. */
export function envNameFor(key: string): string {
  return `WEBHOOKS_${key.replace(/([A-Z])/g, "_$1").toUpperCase()}`;
}

/**
 * Merges context and environment over the defaults and validates the result.
 * @throws StackConfigError naming every bad key.
 */
export function loadStackConfig(
  context: Record<string, unknown> = {},
  env: Record<string, string | undefined> = process.env,
): StackConfig {
  const picked: Record<string, unknown> = {};
  const origin: Record<string, string> = {};
  for (const key of Object.keys(stackConfigSchema.shape)) {
    if (context[key] !== undefined) {
      picked[key] = context[key];
      origin[key] = `cdktf.json context.webhooks.${key}`;
    }
    const fromEnv = env[envNameFor(key)];
    if (fromEnv !== undefined && fromEnv !== "") {
      picked[key] = fromEnv;
      origin[key] = envNameFor(key);
    }
  }
  const unknown = Object.keys(context).filter((k) => !(k in stackConfigSchema.shape));
  const parsed = stackConfigSchema.safeParse(picked);
  const problems = unknown.map((k) => `- ${k}: unknown key in cdktf.json context.webhooks`);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const key = String(issue.path[0]);
      problems.push(`- ${key} (from ${origin[key] ?? "default"}): ${issue.message}; got ${JSON.stringify(picked[key])}`);
    }
  }
  if (parsed.success && parsed.data.auroraMinCapacity > parsed.data.auroraMaxCapacity) {
    problems.push(`- auroraMinCapacity (${parsed.data.auroraMinCapacity}) must not exceed auroraMaxCapacity (${parsed.data.auroraMaxCapacity})`);
  }
  if (parsed.success && parsed.data.relayMode === "listening" && parsed.data.relayTimeoutSeconds < parsed.data.relayIntervalMinutes * 60 + RELAY_OVERLAP_SECONDS) {
    const least = parsed.data.relayIntervalMinutes * 60 + RELAY_OVERLAP_SECONDS;
    problems.push(`- relayTimeoutSeconds (${parsed.data.relayTimeoutSeconds}) must be at least relayIntervalMinutes × 60 + ${RELAY_OVERLAP_SECONDS} (${least}) with relayMode "listening": a run must still listen when the next starts. Raise relayTimeoutSeconds, lower relayIntervalMinutes, or set relayMode "scheduled"`);
  }
  if (problems.length > 0 || !parsed.success) {
    throw new StackConfigError(
      `Invalid stack configuration:\n${problems.join("\n")}\nFix cdktf.json (context.webhooks) or the WEBHOOKS_* environment variables.`,
    );
  }
  return parsed.data;
}

/** Reads `context.webhooks` from a cdktf.json, or from the CLI's CDKTF_CONTEXT_JSON when set. */
export function readContext(cdktfJsonPath = "cdktf.json", env: Record<string, string | undefined> = process.env): Record<string, unknown> {
  const fromCli = env.CDKTF_CONTEXT_JSON;
  let raw: unknown;
  try {
    raw = fromCli ? JSON.parse(fromCli) : (JSON.parse(readFileSync(cdktfJsonPath, "utf8")) as { context?: unknown }).context;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw new StackConfigError(`Cannot read the stack context from ${fromCli ? "CDKTF_CONTEXT_JSON" : cdktfJsonPath}: ${(error as Error).message}`, { cause: error });
  }
  const webhooks = (raw as { webhooks?: unknown } | undefined)?.webhooks;
  if (webhooks === undefined) return {};
  if (typeof webhooks !== "object" || webhooks === null || Array.isArray(webhooks)) {
    throw new StackConfigError("context.webhooks in cdktf.json must be an object of stack settings (see docs/clouds.md)");
  }
  return webhooks as Record<string, unknown>;
}

/**
 * Least time a listening run's timeout exceeds the interval: the run stops listening up to 30 s
 * (the budget's margin) plus 15 s (the pass reserve: attempt timeout + 5 s) before its timeout,
 * and must still listen 15 s after the next run started (that run's cold start and first claim).
 */
export const RELAY_OVERLAP_SECONDS = 60;

/**
 * How the listening relay runs on AWS and GCP: a run every `intervalSeconds`, each lasting up to
 * `timeoutSeconds`, so at most `runsAtOnce` at a time (ceil(timeout / interval)); in scheduled
 * mode, one (a run stops when idle, well within the interval). Azure runs two timers instead
 * (azureRelayTiming).
 */
export function relayRuns(config: Pick<StackConfig, "relayMode" | "relayTimeoutSeconds" | "relayIntervalMinutes">): { intervalSeconds: number; timeoutSeconds: number; runsAtOnce: number } {
  const intervalSeconds = config.relayIntervalMinutes * 60;
  return { intervalSeconds, timeoutSeconds: config.relayTimeoutSeconds, runsAtOnce: config.relayMode === "listening" ? Math.ceil(config.relayTimeoutSeconds / intervalSeconds) : 1 };
}

/** A relay run's database pool: a listening run holds one connection for LISTEN, and claims and writes beside it. */
export function relayPoolSize(config: Pick<StackConfig, "relayMode">): number {
  return config.relayMode === "listening" ? 3 : 2;
}

/** Seconds a relay run may drain before returning: its timeout less a margin to finish cleanly. */
export function relayBudgetSeconds(timeoutSeconds: number): number {
  return Math.max(10, timeoutSeconds - Math.min(30, Math.ceil(timeoutSeconds / 4)));
}
