/**
 * The SQS queue pair and the S3 claim-check store of the AWS functions, each SDK loaded on first
 * use. Only ingest and the processor import this module (ingest sends and puts; the processor
 * re-sends deferrals, sends to the DLQ and gets): the relay's and migrate's bundles carry neither.
 */
import type { ObjectStore } from "../../shared/objectStore/port.js";
import type { QueueAdapter } from "../../shared/queue/port.js";
import { FunctionConfigError } from "../../shared/cloud/settings.js";
import type { AwsClients, AwsSettings } from "./runtime.js";

export async function sqsQueue(settings: AwsSettings): Promise<QueueAdapter> {
  if (!settings.WEBHOOKS_QUEUE_URL) throw new FunctionConfigError("Set WEBHOOKS_QUEUE_URL (the inbound SQS queue).");
  const { createSqsQueue } = await import("../../shared/queue/sqs.js");
  return createSqsQueue({
    queueUrl: settings.WEBHOOKS_QUEUE_URL,
    deadLetterQueueUrl: settings.WEBHOOKS_DEAD_LETTER_QUEUE_URL ?? "",
  });
}

/** Undefined without `WEBHOOKS_CLAIM_CHECK_BUCKET`: payloads over the SQS limit are then refused (413). */
export async function s3ClaimChecks(settings: AwsSettings): Promise<ObjectStore | undefined> {
  if (!settings.WEBHOOKS_CLAIM_CHECK_BUCKET) return undefined;
  const { createS3Store } = await import("../../shared/objectStore/s3.js");
  return createS3Store({ bucket: settings.WEBHOOKS_CLAIM_CHECK_BUCKET });
}

/** What ingest and the processor use. */
export const queueAndClaimChecks: AwsClients = { queue: sqsQueue, objectStore: s3ClaimChecks };
