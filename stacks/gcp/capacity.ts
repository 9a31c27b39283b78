/**
 * The numbers the GCP stack derives from the configuration, in one place so the stack, its tests
 * and docs/clouds.md agree: how much the processor serves at once and what that costs in database
 * connections, how long Pub/Sub keeps retrying a refused push, how long a relay run may last, and
 * how large an inbound body may be.
 */
import { relayBudgetSeconds, relayPoolSize, relayRuns, type StackConfig, StackConfigError } from "../config.js";

/**
 * Largest inbound body the ingest function accepts. API Gateway takes requests of 32 megabytes
 * (headers up to 60 KB), Cloud Run 32 MiB over HTTP/1 (the Functions Framework's parser allows
 * 1024 MB, leaving the limit to them): 30 MiB stays under both whichever megabyte is meant. Bodies over what one publish carries
 * (7.5 MB, see shared/queue/pubsubPublisher.ts) go by claim-check.
 */
export const GCP_MAX_INBOUND_BODY_BYTES = 30 * 1024 * 1024;

/** Minimum backoff between two pushes of a refused message (the maximum is 600 s). */
export const PUSH_MIN_BACKOFF_SECONDS = 60;
const PUSH_MAX_BACKOFF_SECONDS = 600;

/**
 * Pub/Sub counts every refused push as a delivery attempt, a 429 from a processor that was busy
 * included. Pub/Sub documents its backoff as exponential between the minimum and the maximum but
 * not the factor, so this counts the minimum only: `attempts - 1` waits of at least 60 s cover
 * `gcpPushRetryMinutes`, whatever the growth. Never below `maxDeliveryAttempts`, at most 100
 * (Pub/Sub's limit).
 */
export function pushDeliveryAttempts(config: StackConfig): number {
  const cover = 1 + Math.ceil((config.gcpPushRetryMinutes * 60) / PUSH_MIN_BACKOFF_SECONDS);
  return Math.min(100, Math.max(config.maxDeliveryAttempts, cover));
}

export const pushRetryPolicy = { minimumBackoff: `${PUSH_MIN_BACKOFF_SECONDS}s`, maximumBackoff: `${PUSH_MAX_BACKOFF_SECONDS}s` };

/**
 * The management API: at most this many instances, each serving this many requests at once over
 * a pool of MANAGEMENT_POOL connections (its queries are short; a burst of operators waits a
 * little rather than take connections from the processor).
 */
export const MANAGEMENT_MAX_INSTANCES = 2;
export const MANAGEMENT_REQUEST_CONCURRENCY = 8;
const MANAGEMENT_POOL = 2;

/** Connections each function's pool may open. */
export function poolSizes(config: StackConfig): { processor: number; relay: number; migrate: number; management: number } {
  return { processor: config.gcpProcessorRequestConcurrency, relay: relayPoolSize(config), migrate: 1, management: MANAGEMENT_POOL };
}

/** Connections Cloud SQL keeps for its own maintenance and superusers (`superuser_reserved_connections` and cloudsqladmin). */
const RESERVED_CONNECTIONS = 10;

/** Every pool at its largest, at once; throws StackConfigError when that exceeds `cloudSqlMaxConnections`. */
export function checkConnectionBudget(config: StackConfig): number {
  const pools = poolSizes(config);
  const management = MANAGEMENT_MAX_INSTANCES * pools.management;
  const total = config.processorConcurrency * pools.processor + relayTiming(config).maxInstances * pools.relay + pools.migrate + management;
  if (total + RESERVED_CONNECTIONS > config.cloudSqlMaxConnections) {
    throw new StackConfigError(
      `GCP: ${config.processorConcurrency} processor instances × ${pools.processor} connections + relay ${relayTiming(config).maxInstances} × ${pools.relay} + migrate ${pools.migrate} ` +
        `+ management ${MANAGEMENT_MAX_INSTANCES} × ${pools.management} = ${total} ` +
        `connections, over cloudSqlMaxConnections ${config.cloudSqlMaxConnections} less ${RESERVED_CONNECTIONS} reserved. ` +
        "Lower processorConcurrency or gcpProcessorRequestConcurrency, or raise cloudSqlMaxConnections (with a tier that has the memory for it).",
    );
  }
  return total;
}

/**
 * Each relay instance serves one request (one run). `listening` mode: a run lasts its timeout
 * (over the interval, so runs overlap) and `maxInstances` is how many can run at once,
 * ceil(timeout / interval): a tick is never refused for want of an instance, and never more run.
 * `scheduled` mode: one instance, its timeout at most the interval, so a run ends before the next
 * tick (a tick arriving while a woken run still works is refused, 429: the woken run delivers).
 */
export function relayTiming(config: StackConfig): { timeoutSeconds: number; budgetSeconds: number; intervalSeconds: number; maxInstances: number } {
  const { intervalSeconds, runsAtOnce } = relayRuns(config);
  const timeoutSeconds = config.relayMode === "listening" ? config.relayTimeoutSeconds : Math.min(config.relayTimeoutSeconds, intervalSeconds);
  return { timeoutSeconds, budgetSeconds: relayBudgetSeconds(timeoutSeconds), intervalSeconds, maxInstances: runsAtOnce };
}
