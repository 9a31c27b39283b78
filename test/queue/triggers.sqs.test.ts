/**
 * The SQS Lambda trigger translation, on the event shape Lambda delivers (typed by @types/aws-lambda),
 * and once end to end on moto: records built from a real ReceiveMessage, a partial batch failure,
 * and the failed record coming back while the others are gone.
 */
import type { SQSEvent, SQSRecord } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { MalformedMessageError, type ReceivedMessage } from "../../shared/queue/port.js";
import { fromSqsRecord, handleSqsEvent } from "../../shared/queue/triggers/sqs.js";
import { createMotoQueuePair, MOTO_CLIENT_CONFIG, MOTO_URL, motoAvailable, skipUnlessAvailable } from "../support/emulators.js";

/** A record as Lambda's SQS event source mapping delivers it (field for field, from a real event). */
function record(messageId: string, body: string, receiveCount = 1, messageAttributes: SQSRecord["messageAttributes"] = {}): SQSRecord {
  return {
    messageId,
    receiptHandle: `AQEB${messageId}Zm9vYmFy==`,
    body,
    attributes: {
      ApproximateReceiveCount: String(receiveCount),
      SentTimestamp: "1545082649183",
      SenderId: "AIDAIENQZJOLO23YVJ4VO",
      ApproximateFirstReceiveTimestamp: "1545082649185",
    },
    messageAttributes,
    md5OfBody: "e4e68fb7bd0e697a0ae8f1bb342846b3",
    eventSource: "aws:sqs",
    eventSourceARN: "arn:aws:sqs:us-east-2:123456789012:inbound",
    awsRegion: "us-east-2",
  };
}

const stringAttr = (stringValue: string) => ({ stringValue, stringListValues: [], binaryListValues: [], dataType: "String" });

describe("SQS trigger translation", () => {
  it("turns a record into the port's message: body, attributes, delivery count, receipt", () => {
    const r = record("059f36b4-87a3-44ab-83d2-661975830a7d", '{"id":"evt_1"}', 3, {
      partner: stringAttr("stripe"), eventId: stringAttr("evt_1"), contentType: stringAttr("application/json"),
      receivedAt: stringAttr("2026-01-01T00:00:00.000Z"),
      thumbnail: { binaryValue: "AAEC", stringListValues: [], binaryListValues: [], dataType: "Binary" },
    });
    expect(fromSqsRecord(r)).toEqual({
      id: "059f36b4-87a3-44ab-83d2-661975830a7d",
      body: '{"id":"evt_1"}',
      attributes: { partner: "stripe", eventId: "evt_1", contentType: "application/json", receivedAt: "2026-01-01T00:00:00.000Z" },
      deliveryCount: 3,
      receipt: r.receiptHandle,
    });
  });

  it("answers a partial batch failure with exactly the failed records", async () => {
    const event: SQSEvent = { Records: [record("m-1", "ok"), record("m-2", "boom", 2), record("m-3", "ok")] };
    const handled: ReceivedMessage[] = [];
    const response = await handleSqsEvent(event, async (m) => {
      if (m.body === "boom") throw new Error("downstream said 503");
      handled.push(m);
    });
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: "m-2" }] });
    expect(handled.map((m) => m.id).sort()).toEqual(["m-1", "m-3"]);
  });

  it("fails an unreadable record instead of dropping it, and processes the rest", async () => {
    const broken = { ...record("m-bad", "x"), body: undefined } as unknown as SQSRecord;
    const response = await handleSqsEvent({ Records: [record("m-1", "ok"), broken] }, async () => {}, { parallel: false });
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: "m-bad" }]);
    expect(() => fromSqsRecord(broken)).toThrow(MalformedMessageError);
    expect(() => fromSqsRecord(broken)).toThrow(/m-bad has no string body/);
  });

  it("answers (does not throw) when the whole batch fails", async () => {
    const response = await handleSqsEvent({ Records: [record("a", "1"), record("b", "2")] }, async () => { throw new Error("db down"); });
    expect(response.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(["a", "b"]);
  });

  it("refuses something that is not an SQS event, saying so", async () => {
    await expect(handleSqsEvent({} as SQSEvent, async () => {})).rejects.toThrow(/Records/);
  });
});

const skip = await skipUnlessAvailable("moto_server (SQS)", MOTO_URL, motoAvailable);

describe.skipIf(Boolean(skip))("SQS trigger, end to end on moto", () => {
  it("a failed record comes back with its receive count up; the successful ones are gone", async () => {
    const sdk = await import("@aws-sdk/client-sqs");
    const pair = await createMotoQueuePair(3);
    const client = new sdk.SQSClient(MOTO_CLIENT_CONFIG);
    try {
      for (const body of ["a", "poison", "c"]) {
        await client.send(new sdk.SendMessageCommand({ QueueUrl: pair.queueUrl, MessageBody: body, MessageAttributes: { eventId: { DataType: "String", StringValue: body } } }));
      }
      // What the event source mapping does: receive, invoke with the records, delete all but the reported failures.
      const invoke = async () => {
        const got = await client.send(new sdk.ReceiveMessageCommand({
          QueueUrl: pair.queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 1, WaitTimeSeconds: 1,
          MessageAttributeNames: ["All"], MessageSystemAttributeNames: ["All"],
        }));
        const event: SQSEvent = {
          Records: (got.Messages ?? []).map((m) => ({
            ...record(m.MessageId!, m.Body!, Number(m.Attributes!.ApproximateReceiveCount)),
            receiptHandle: m.ReceiptHandle!,
            messageAttributes: Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, stringAttr(v.StringValue!)])),
          })),
        };
        const seen: ReceivedMessage[] = [];
        const response = await handleSqsEvent(event, async (m) => { seen.push(m); if (m.body === "poison") throw new Error("cannot parse"); });
        const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
        for (const r of event.Records) {
          if (!failed.has(r.messageId)) await client.send(new sdk.DeleteMessageCommand({ QueueUrl: pair.queueUrl, ReceiptHandle: r.receiptHandle }));
        }
        return { seen, failed };
      };
      let round = await invoke();
      const all = [...round.seen];
      while (all.length < 3) { round = await invoke(); all.push(...round.seen); }
      expect(all.map((m) => m.body).sort()).toEqual(["a", "c", "poison"]);
      let again: ReceivedMessage[] = [];
      for (let i = 0; i < 20 && again.length === 0; i++) again = (await invoke()).seen;
      expect(again.map((m) => [m.body, m.attributes.eventId])).toEqual([["poison", "poison"]]);
      expect(again[0]!.deliveryCount).toBe(2);
    } finally {
      client.destroy();
      await pair.remove();
    }
  });
});
