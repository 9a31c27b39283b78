/**
 * The publisher (shared/queue/pubsubPublisher.ts, `@google-cloud/pubsub`) against Google's Pub/Sub
 * emulator, read back through the pull adapter's subscription. The Google Cloud path (the service
 * account's token from the metadata server) is google-auth-library's, inside the SDK; no metadata
 * server or Pub/Sub service runs here, so it is not exercised (the emulator takes no token).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { QueueAdapter } from "../../shared/queue/port.js";
import { createPubSubQueue } from "../../shared/queue/pubsub.js";
import { createPubSubPublisher, PubSubPublishError, REST_MAX_MESSAGE_BYTES, type PubSubPublisher } from "../../shared/queue/pubsubPublisher.js";
import { MessageRejectedError } from "../../shared/queue/validate.js";
import { createEmulatorTopics, PUBSUB_EMULATOR_HOST, pubsubEmulatorAvailable, skipUnlessAvailable } from "../support/emulators.js";
import { deadHost } from "../support/failures.js";

const opened: PubSubPublisher[] = [];
const publisherFor = (options: Parameters<typeof createPubSubPublisher>[0]) => {
  const publisher = createPubSubPublisher(options);
  opened.push(publisher);
  return publisher;
};
afterAll(async () => { for (const p of opened) await p.close(); });

describe("Pub/Sub publisher on the emulator", () => {
  let skip: string | undefined;
  let topics: Awaited<ReturnType<typeof createEmulatorTopics>> | undefined;
  let reader: QueueAdapter;

  beforeAll(async () => {
    skip = await skipUnlessAvailable("the Pub/Sub emulator", PUBSUB_EMULATOR_HOST, pubsubEmulatorAvailable);
    if (skip) return;
    topics = await createEmulatorTopics(5);
    reader = await createPubSubQueue(topics);
  }, 60_000);
  afterAll(async () => {
    await reader?.close();
    await topics?.remove();
  });

  it("publishes body and attributes exactly; a pull subscription receives them", async (t) => {
    if (skip) return t.skip();
    const publisher = publisherFor({ projectId: topics!.projectId, topic: topics!.topic, emulatorHost: PUBSUB_EMULATOR_HOST });
    const body = JSON.stringify({ text: "héllo \u2603", bytes: "x".repeat(70_000) });
    const { id } = await publisher.send({ body, attributes: { partner: "shop", eventId: "evt_rest_1", skipped: undefined } });
    expect(id).toMatch(/\S/);
    const [got] = await reader.receive({ waitSeconds: 5, max: 1 });
    expect(got).toMatchObject({ id, body, attributes: { partner: "shop", eventId: "evt_rest_1" } });
    expect(got!.attributes).not.toHaveProperty("skipped");
    await reader.ack(got!);
  });

  it("names the topic when it does not exist (NOT_FOUND)", async (t) => {
    if (skip) return t.skip();
    const publisher = publisherFor({ projectId: topics!.projectId, topic: "no-such-topic", emulatorHost: PUBSUB_EMULATOR_HOST });
    const error = await publisher.send({ body: "{}" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PubSubPublishError);
    expect(error).toMatchObject({ code: 5, message: expect.stringMatching(/topics\/no-such-topic: publish failed \(5 NOT_FOUND.*\); does the topic exist\?$/) });
  });

  it("rejects what Pub/Sub would refuse before sending anything", async (t) => {
    if (skip) return t.skip();
    const publisher = publisherFor({ projectId: topics!.projectId, topic: topics!.topic, emulatorHost: PUBSUB_EMULATOR_HOST });
    await expect(publisher.send({ body: "x".repeat(REST_MAX_MESSAGE_BYTES + 1) })).rejects.toThrow(MessageRejectedError);
    await expect(publisher.send({ body: "{}", delaySeconds: 5 })).rejects.toThrow(/cannot delay a publish/);
    await expect(publisher.send({ body: "{}", attributes: { googKey: "v" } })).rejects.toThrow(/reserved by Pub\/Sub/);
    expect(await reader.receive({ waitSeconds: 1 })).toEqual([]);
  });
});

describe("Pub/Sub publisher when nothing answers", () => {
  it("rejects with PubSubPublishError once its time is up, the SDK's retries included", async () => {
    const publisher = publisherFor({ projectId: "p", topic: "inbound", emulatorHost: await deadHost(), timeoutMs: 2_000 });
    const error = await publisher.send({ body: "{}" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PubSubPublishError);
    // What stopped the SDK's retries of UNAVAILABLE is the bound we gave it.
    expect((error as Error).message).toMatch(/^Pub\/Sub topic projects\/p\/topics\/inbound: publish failed \(Total timeout of API google\.pubsub\.v1\.Publisher exceeded 2000 milliseconds .*UNAVAILABLE/);
  }, 30_000);
});
