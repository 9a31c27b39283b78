/**
 * EventBridge destinations: one PutEvents entry per attempt, the attempts that reach the client
 * together in one PutEvents call (coalesce.ts; at most 10 entries, 256 KiB). EventBridge events
 * have no message attributes, so the event's `detail` carries them: `{headers, body, payload}`,
 * where `headers` holds webhook-id, webhook-timestamp, webhook-signature (and the custom ones),
 * `body` the exact signed envelope (verify it as given), and `payload` the same envelope parsed,
 * for rules that match on its content (`detail.payload.data.amount`). `source` and `detail-type`
 * (default: the event's type) are what rules usually match on. PutEvents answers 200 with a
 * per-entry error code when it refuses an entry: that is that attempt's failure alone, classified
 * as an SDK error is. EventBridge has no de-duplication id nor ordering: consumers de-duplicate on
 * webhook-id. The only module that loads @aws-sdk/client-eventbridge, on the first EventBridge
 * destination.
 */
import type { PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import type { OpenDestination } from "./config.js";
import { AWS_BATCH, awsClientConfig } from "./aws.js";
import { classifyAwsError } from "./classify.js";
import { DestinationSendError, type DestinationClient, type DestinationMessage, type SendFailure } from "./message.js";

/** detail-type when neither the destination nor the envelope names one (a transformation's body without `type`). */
const FALLBACK_DETAIL_TYPE = "webhook";
/** What PutEvents counts for an entry's Time, whether given or not. */
const TIME_BYTES = 14;

export async function openEventBridge(destination: OpenDestination & { kind: "eventbridge" }): Promise<DestinationClient & { classify(error: unknown): SendFailure }> {
  const sdk = await import("@aws-sdk/client-eventbridge");
  const client = new sdk.EventBridgeClient(awsClientConfig(destination));
  /** Each message's entry, built once: its size decides its batch before it is sent. */
  const entries = new WeakMap<DestinationMessage, PutEventsRequestEntry>();
  const entryOf = (message: DestinationMessage): PutEventsRequestEntry => {
    let entry = entries.get(message);
    if (entry) return entry;
    let payload: unknown = null;
    try { payload = JSON.parse(message.body); } catch { /* a transformation's non-JSON body: body alone */ }
    const type = (payload as { type?: unknown } | null)?.type;
    entry = {
      EventBusName: destination.eventBus,
      Source: destination.source,
      DetailType: destination.detailType ?? (typeof type === "string" ? type : FALLBACK_DETAIL_TYPE),
      Detail: `{"headers":${JSON.stringify(message.attributes)},"body":${JSON.stringify(message.body)},"payload":${JSON.stringify(payload)}}`,
    };
    entries.set(message, entry);
    return entry;
  };
  /** A refused entry's failure (PutEvents answers 200 and says it per entry). */
  const refused = (entry: { ErrorCode?: string | undefined; ErrorMessage?: string | undefined } | undefined): SendFailure =>
    classifyAwsError({ name: entry?.ErrorCode ?? "InternalFailure", message: entry?.ErrorMessage ?? "PutEvents refused the entry" });
  return {
    async send(message, signal) {
      const answer = await client.send(new sdk.PutEventsCommand({ Entries: [entryOf(message)] }), { abortSignal: signal });
      const entry = answer.Entries?.[0];
      if ((answer.FailedEntryCount ?? 0) > 0 || entry?.ErrorCode) throw new DestinationSendError(refused(entry));
    },
    async sendBatch(messages, signal) {
      const answer = await client.send(new sdk.PutEventsCommand({ Entries: messages.map(entryOf) }), { abortSignal: signal });
      // The answer's entries are in the request's order: an EventId for each one taken, an ErrorCode for each refused.
      return messages.map((_, i) => {
        const entry = answer.Entries?.[i];
        return entry && !entry.ErrorCode ? null : refused(entry);
      });
    },
    batch: {
      ...AWS_BATCH,
      sizeOf: (message) => {
        const entry = entryOf(message);
        return TIME_BYTES + Buffer.byteLength(entry.Source!) + Buffer.byteLength(entry.DetailType!) + Buffer.byteLength(entry.Detail!);
      },
    },
    classify: classifyAwsError,
    async close() {
      client.destroy();
    },
  };
}
