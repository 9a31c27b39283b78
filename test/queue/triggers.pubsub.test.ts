/**
 * The Pub/Sub push translation: the push envelope and the CloudEvent form (shapes as Google
 * documents them), precise validation errors, and, on the emulator, a real push subscription
 * POSTing to a local server: non-2xx nacks, Pub/Sub redelivers with deliveryAttempt up.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ReceivedMessage } from "../../shared/queue/port.js";
import { createPubSubQueue } from "../../shared/queue/pubsub.js";
import { fromPubSubPush, handlePubSubPush, MESSAGE_PUBLISHED, PushEnvelopeError } from "../../shared/queue/triggers/pubsub.js";
import { PUBSUB_EMULATOR_HOST, PUBSUB_PROJECT, pubsubEmulatorAvailable, skipUnlessAvailable } from "../support/emulators.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

/** A push body as a push subscription with a dead-letter policy sends it. */
const pushBody = {
  message: {
    attributes: { partner: "github", eventId: "d5a1-44", contentType: "application/json" },
    data: b64('{"action":"opened"}'),
    messageId: "2070443601311540",
    message_id: "2070443601311540",
    publishTime: "2021-02-26T19:13:55.749Z",
    publish_time: "2021-02-26T19:13:55.749Z",
  },
  subscription: "projects/myproject/subscriptions/mysubscription",
  deliveryAttempt: 3,
};

describe("Pub/Sub push translation", () => {
  it("turns a push envelope into the port's message", () => {
    expect(fromPubSubPush(pushBody)).toEqual({
      id: "2070443601311540",
      body: '{"action":"opened"}',
      attributes: { partner: "github", eventId: "d5a1-44", contentType: "application/json" },
      deliveryCount: 3,
      receipt: "projects/myproject/subscriptions/mysubscription/2070443601311540",
      subscription: "projects/myproject/subscriptions/mysubscription",
      publishTime: "2021-02-26T19:13:55.749Z",
    });
  });

  it("reads the CloudEvent form (Eventarc / Cloud Run functions) the same way", () => {
    const cloudEvent = {
      specversion: "1.0", id: "2070443601311540", type: MESSAGE_PUBLISHED,
      source: "//pubsub.googleapis.com/projects/myproject/topics/inbound", time: "2021-02-26T19:13:55.749Z",
      datacontenttype: "application/json", data: { message: pushBody.message, subscription: pushBody.subscription },
    };
    expect(fromPubSubPush(cloudEvent)).toMatchObject({ id: "2070443601311540", body: '{"action":"opened"}', deliveryCount: 1 });
  });

  it("counts 1 when the subscription has no dead-letter policy (no deliveryAttempt)", () => {
    const { deliveryAttempt: _omit, ...withoutAttempt } = pushBody;
    expect(fromPubSubPush(withoutAttempt).deliveryCount).toBe(1);
  });

  it("names every problem of a malformed push, with its path", () => {
    const bad = { message: { data: "%%%", attributes: { n: 1 } }, deliveryAttempt: 0 };
    let error: PushEnvelopeError | undefined;
    try { fromPubSubPush(bad); } catch (e) { error = e as PushEnvelopeError; }
    expect(error).toBeInstanceOf(PushEnvelopeError);
    expect(error!.problems).toEqual([
      "message.messageId must be a non-empty string",
      "message.data must be base64 text",
      "message.attributes.n must be a string",
      "subscription must be a non-empty string",
      "deliveryAttempt must be a whole number >= 1",
    ]);
    expect(() => fromPubSubPush({ specversion: "1.0", type: "google.cloud.storage.object.v1.finalized", data: {} })).toThrow(/expected google.cloud.pubsub.topic.v1.messagePublished/);
    expect(() => fromPubSubPush("hello")).toThrow(/must be a JSON object/);
  });

  it("answers 204 on success, 400 on a malformed push, 500 (no internals) on a handler failure", async () => {
    expect(await handlePubSubPush(pushBody, async () => {})).toEqual({ status: 204, body: "" });
    expect((await handlePubSubPush({ message: {} }, async () => {})).status).toBe(400);
    const errors: unknown[] = [];
    const failed = await handlePubSubPush(pushBody, async () => { throw new TypeError("secret detail at /srv/x.ts:12"); }, { onError: (e) => errors.push(e) });
    expect(failed.status).toBe(500);
    expect(failed.body).not.toMatch(/secret|x\.ts/);
    expect(errors).toHaveLength(1);
  });
});

const skip = await skipUnlessAvailable("the Pub/Sub emulator", PUBSUB_EMULATOR_HOST, pubsubEmulatorAvailable);

describe.skipIf(Boolean(skip))("Pub/Sub push, end to end on the emulator", () => {
  let server: Server;
  let handled: ReceivedMessage[] = [];
  let statuses: number[] = [];
  let behaviour: (m: ReceivedMessage) => Promise<void> = async () => {};

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", async () => {
        const answer = await handlePubSubPush(JSON.parse(Buffer.concat(chunks).toString("utf8")), async (m) => {
          handled.push(m);
          await behaviour(m);
        });
        statuses.push(answer.status);
        res.writeHead(answer.status).end(answer.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** A topic with a push subscription to our server (dead-letter policy: 5 attempts, fast retries). */
  async function pushTopic() {
    process.env.PUBSUB_EMULATOR_HOST ??= PUBSUB_EMULATOR_HOST;
    handled = [];
    statuses = [];
    const { PubSub } = await import("@google-cloud/pubsub");
    const pubsub = new PubSub({ projectId: PUBSUB_PROJECT, universeDomain: "googleapis.com", emulatorMode: true });
    const name = `push-${Date.now().toString(36)}`;
    const [topic] = await pubsub.createTopic(name);
    const [dlt] = await pubsub.createTopic(`${name}-dlq`);
    const [dls] = await dlt.createSubscription(`${name}-dlq-reader`);
    const { port } = server.address() as AddressInfo;
    const [subscription] = await topic.createSubscription(`${name}-push`, {
      pushConfig: { pushEndpoint: `http://127.0.0.1:${port}/push` },
      deadLetterPolicy: { deadLetterTopic: dlt.name, maxDeliveryAttempts: 5 },
      retryPolicy: { minimumBackoff: { seconds: 0 }, maximumBackoff: { seconds: 1 } },
    });
    const queue = await createPubSubQueue({
      projectId: PUBSUB_PROJECT, topic: name, subscription: `${name}-push`, deadLetterTopic: `${name}-dlq`, deadLetterSubscription: `${name}-dlq-reader`,
    });
    return {
      queue,
      async remove() {
        await queue.close();
        for (const thing of [subscription, dls, topic, dlt]) await thing.delete().catch(() => {});
        await pubsub.close();
      },
    };
  }

  const waitFor = async (done: () => boolean | Promise<boolean>) => {
    const deadline = Date.now() + 45_000;
    while (!(await done()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  };

  it("a nacked push is delivered again, same message, until a 2xx", async () => {
    let failuresLeft = 2;
    behaviour = async () => { if (failuresLeft-- > 0) throw new Error("not yet"); };
    const { queue, remove } = await pushTopic();
    try {
      await queue.send({ body: '{"id":"evt_push"}', attributes: { partner: "github", eventId: "evt_push" } });
      await waitFor(() => statuses.includes(204));
      expect(statuses).toEqual([500, 500, 204]);
      // deliveryCount is not asserted here: the emulator leaves `deliveryAttempt` out of push bodies
      // (Google Cloud sends it when a dead-letter policy is set); the translation is tested above.
      expect(handled.every((m) => m.body === '{"id":"evt_push"}' && m.attributes.eventId === "evt_push")).toBe(true);
      expect(new Set(handled.map((m) => m.id)).size).toBe(1);
    } finally {
      await remove();
    }
  }, 60_000);

  it("a push that keeps failing ends in the dead-letter topic after maxDeliveryAttempts", async () => {
    behaviour = async () => { throw new Error("poison"); };
    const { queue, remove } = await pushTopic();
    try {
      await queue.send({ body: "poison", attributes: { eventId: "evt_poison" } });
      let dead: Awaited<ReturnType<typeof queue.receiveDeadLetters>> = [];
      await waitFor(async () => (dead = await queue.receiveDeadLetters({ visibilitySeconds: 30 })).length > 0);
      expect(statuses).toEqual([500, 500, 500, 500, 500]);
      expect(dead).toHaveLength(1);
      expect(dead[0]).toMatchObject({ body: "poison", attributes: { eventId: "evt_poison" }, deliveryCount: 5 });
      expect(dead[0]!.reason).toMatch(/max delivery attempts \(5\)/);
      await queue.ackDeadLetter(dead[0]!);
    } finally {
      await remove();
    }
  }, 60_000);
});
