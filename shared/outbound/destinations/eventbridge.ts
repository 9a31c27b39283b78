/**
 * EventBridge destinations: one PutEvents entry per attempt. EventBridge events have no message
 * attributes, so the event's `detail` carries them: `{headers, body, payload}`, where `headers`
 * holds webhook-id, webhook-timestamp, webhook-signature (and the custom ones), `body` the exact
 * signed envelope (verify it as given), and `payload` the same envelope parsed, for rules that
 * match on its content (`detail.payload.data.amount`). `source` and `detail-type` (default: the
 * event's type) are what rules usually match on. PutEvents answers 200 with a per-entry error
 * code when it refuses an entry: that is the attempt's failure, classified as an SDK error is.
 * EventBridge has no de-duplication id nor ordering: consumers de-duplicate on webhook-id.
 * The only module that loads @aws-sdk/client-eventbridge, on the first EventBridge destination.
 */
import type { OpenDestination } from "./config.js";
import { awsClientConfig } from "./aws.js";
import { classifyAwsError } from "./classify.js";
import { DestinationSendError, type DestinationClient, type SendFailure } from "./message.js";

/** detail-type when neither the destination nor the envelope names one (a transformation's body without `type`). */
const FALLBACK_DETAIL_TYPE = "webhook";

export async function openEventBridge(destination: OpenDestination & { kind: "eventbridge" }): Promise<DestinationClient & { classify(error: unknown): SendFailure }> {
  const sdk = await import("@aws-sdk/client-eventbridge");
  const client = new sdk.EventBridgeClient(awsClientConfig(destination));
  return {
    async send(message, signal) {
      let payload: unknown = null;
      try { payload = JSON.parse(message.body); } catch { /* a transformation's non-JSON body: body alone */ }
      const detail = `{"headers":${JSON.stringify(message.attributes)},"body":${JSON.stringify(message.body)},"payload":${JSON.stringify(payload)}}`;
      const answer = await client.send(new sdk.PutEventsCommand({
        Entries: [{
          EventBusName: destination.eventBus,
          Source: destination.source,
          DetailType: destination.detailType ?? message.eventType ?? FALLBACK_DETAIL_TYPE,
          Detail: detail,
        }],
      }), { abortSignal: signal });
      const entry = answer.Entries?.[0];
      if ((answer.FailedEntryCount ?? 0) > 0 || entry?.ErrorCode) {
        throw new DestinationSendError(classifyAwsError({ name: entry?.ErrorCode ?? "InternalFailure", message: entry?.ErrorMessage ?? "PutEvents refused the entry" }));
      }
    },
    classify: classifyAwsError,
    async close() {
      client.destroy();
    },
  };
}
