/**
 * The REST publisher (shared/queue/pubsubPublisher.ts) against Google's Pub/Sub emulator, read
 * back through the SDK adapter's pull subscription; and, for the Google Cloud path (token from
 * the metadata server, bearer on the publish and on Cloud Storage claim-checks), against
 * in-process TEST PEERS: a metadata server and recorders standing in for pubsub.googleapis.com
 * and storage.googleapis.com, since none of them runs here.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccessTokenError, metadataAccessToken } from "../../shared/cloud/googleAccessToken.js";
import { createGcsStore } from "../../shared/objectStore/gcs.js";
import type { QueueAdapter } from "../../shared/queue/port.js";
import { createPubSubQueue } from "../../shared/queue/pubsub.js";
import { createPubSubPublisher, PubSubPublishError, REST_MAX_MESSAGE_BYTES } from "../../shared/queue/pubsubPublisher.js";
import { MessageRejectedError } from "../../shared/queue/validate.js";
import { createEmulatorTopics, PUBSUB_EMULATOR_HOST, pubsubEmulatorAvailable, skipUnlessAvailable } from "../support/emulators.js";
import { deadHost } from "../support/failures.js";

interface Peer { url: string; host: string; requests: { method: string; path: string; headers: IncomingMessage["headers"]; body: string }[]; close(): Promise<void> }

/** An HTTP server answering `answer(request)`, recording every request. */
async function startPeer(answer: (path: string, headers: IncomingMessage["headers"]) => { status: number; body: unknown }): Promise<Peer> {
  const requests: Peer["requests"] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      requests.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      const { status, body } = answer(req.url ?? "", req.headers);
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url: `http://${host}`, host, requests, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}


describe("Pub/Sub REST publisher on the emulator", () => {
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
    const publisher = createPubSubPublisher({ projectId: topics!.projectId, topic: topics!.topic, emulatorHost: PUBSUB_EMULATOR_HOST });
    const body = JSON.stringify({ text: "héllo \u2603", bytes: "x".repeat(70_000) });
    const { id } = await publisher.send({ body, attributes: { partner: "shop", eventId: "evt_rest_1", skipped: undefined } });
    expect(id).toMatch(/\S/);
    const [got] = await reader.receive({ waitSeconds: 5, max: 1 });
    expect(got).toMatchObject({ id, body, attributes: { partner: "shop", eventId: "evt_rest_1" } });
    expect(got!.attributes).not.toHaveProperty("skipped");
    await reader.ack(got!);
  });

  it("names the topic when it does not exist (404)", async (t) => {
    if (skip) return t.skip();
    const publisher = createPubSubPublisher({ projectId: topics!.projectId, topic: "no-such-topic", emulatorHost: PUBSUB_EMULATOR_HOST });
    const error = await publisher.send({ body: "{}" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PubSubPublishError);
    expect(error).toMatchObject({ status: 404, message: expect.stringMatching(/topics\/no-such-topic: publish answered 404 .*does the topic exist/) });
  });

  it("rejects what Pub/Sub would refuse before sending anything", async (t) => {
    if (skip) return t.skip();
    const publisher = createPubSubPublisher({ projectId: topics!.projectId, topic: topics!.topic, emulatorHost: PUBSUB_EMULATOR_HOST });
    await expect(publisher.send({ body: "x".repeat(REST_MAX_MESSAGE_BYTES + 1) })).rejects.toThrow(MessageRejectedError);
    await expect(publisher.send({ body: "{}", delaySeconds: 5 })).rejects.toThrow(/cannot delay a publish/);
    await expect(publisher.send({ body: "{}", attributes: { googKey: "v" } })).rejects.toThrow(/reserved by Pub\/Sub/);
    expect(await reader.receive({ waitSeconds: 1 })).toEqual([]);
  });
});

describe("Pub/Sub REST publisher when nothing answers", () => {
  it("rejects with PubSubPublishError saying no answer came", async () => {
    const publisher = createPubSubPublisher({ projectId: "p", topic: "inbound", emulatorHost: await deadHost(), timeoutMs: 2_000 });
    await expect(publisher.send({ body: "{}" })).rejects.toThrow(/projects\/p\/topics\/inbound: publish got no answer \(POST .* failed: .*ECONNREFUSED/);
  });
});

describe("on Google Cloud: a token from the metadata server (test peers)", () => {
  let metadata: Peer;
  let pubsubApi: Peer;
  let issued = 0;
  beforeAll(async () => {
    metadata = await startPeer((path, headers) => {
      if (path !== "/computeMetadata/v1/instance/service-accounts/default/token") return { status: 404, body: { error: "not_found" } };
      if (headers["metadata-flavor"] !== "Google") return { status: 403, body: { error: "Missing Metadata-Flavor:Google header." } };
      return { status: 200, body: { access_token: `token-${++issued}`, expires_in: 3599, token_type: "Bearer" } };
    });
    pubsubApi = await startPeer(() => ({ status: 200, body: { messageIds: ["42"] } }));
  });
  afterAll(async () => {
    await metadata?.close();
    await pubsubApi?.close();
  });

  it("publishes to the REST path with the bearer token, fetched once for several publishes", async () => {
    const publisher = createPubSubPublisher({
      projectId: "acme", topic: "inbound", emulatorHost: "", endpoint: pubsubApi.url,
      accessToken: metadataAccessToken({ metadataHost: metadata.host }),
    });
    const before = issued;
    expect(await Promise.all([publisher.send({ body: "a" }), publisher.send({ body: "b" })])).toEqual([{ id: "42" }, { id: "42" }]);
    expect(await publisher.send({ body: "c", attributes: { partner: "shop" } })).toEqual({ id: "42" });
    expect(issued - before).toBe(1);
    const last = pubsubApi.requests.at(-1)!;
    expect(last).toMatchObject({ method: "POST", path: "/v1/projects/acme/topics/inbound:publish" });
    expect(last.headers.authorization).toBe(`Bearer token-${issued}`);
    expect(JSON.parse(last.body)).toEqual({ messages: [{ data: Buffer.from("c").toString("base64"), attributes: { partner: "shop" } }] });
  });

  it("Cloud Storage claim-checks carry the same kind of bearer token (JSON API media upload and download)", async () => {
    const stored = new Map<string, string>();
    const storageApi = await startPeer((path) => {
      const url = new URL(path, "http://peer");
      if (url.pathname === "/upload/storage/v1/b/claims/o") {
        stored.set(url.searchParams.get("name") ?? "", "uploaded");
        return { status: 200, body: { name: url.searchParams.get("name") } };
      }
      return { status: 404, body: { error: { code: 404, message: "No such object" } } };
    });
    try {
      const store = await createGcsStore({ bucket: "claims", apiEndpoint: storageApi.url, accessToken: metadataAccessToken({ metadataHost: metadata.host }) });
      expect(await store.put("inbound/shop/evt 1", Buffer.from("{}"), "application/json")).toBe("gs://claims/inbound/shop/evt 1");
      expect(stored.has("inbound/shop/evt 1")).toBe(true);
      await expect(store.get("gs://claims/inbound/shop/evt 2")).rejects.toThrow(/Could not read claim-check gs:\/\/claims\/inbound\/shop\/evt 2: Cloud Storage answered 404 \(No such object\)/);
      expect(storageApi.requests.map((r) => [r.method, r.path.split("?")[0], r.headers.authorization])).toEqual([
        ["POST", "/upload/storage/v1/b/claims/o", expect.stringMatching(/^Bearer token-\d+$/)],
        ["GET", "/storage/v1/b/claims/o/inbound%2Fshop%2Fevt%202", expect.stringMatching(/^Bearer token-\d+$/)],
      ]);
    } finally {
      await storageApi.close();
    }
  });

  it("asks again a minute before the token expires", async () => {
    let clock = 1_000_000;
    const token = metadataAccessToken({ metadataHost: metadata.host, now: () => clock });
    const first = await token();
    clock += 3599_000 - 61_000;
    expect(await token()).toBe(first);
    clock += 2_000;
    expect(await token()).not.toBe(first);
  });

  it("says why there is no token: no metadata server, or one that refuses", async () => {
    await expect(metadataAccessToken({ metadataHost: await deadHost(), timeoutMs: 2_000 })()).rejects.toThrow(/metadata server at 127\.0\.0\.1:\d+ did not answer .*ECONNREFUSED/);
    const refusing = await startPeer(() => ({ status: 404, body: { error: "not_found", error_description: "no service account" } }));
    try {
      const error = await metadataAccessToken({ metadataHost: refusing.host })().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AccessTokenError);
      expect((error as Error).message).toMatch(/answered 404 \(not_found: no service account\); check the function's service account/);
    } finally {
      await refusing.close();
    }
  });

  it("a publish without a token fails before reaching Pub/Sub", async () => {
    const seen = pubsubApi.requests.length;
    const publisher = createPubSubPublisher({ projectId: "acme", topic: "inbound", emulatorHost: "", endpoint: pubsubApi.url, accessToken: metadataAccessToken({ metadataHost: await deadHost(), timeoutMs: 2_000 }) });
    await expect(publisher.send({ body: "x" })).rejects.toBeInstanceOf(AccessTokenError);
    expect(pubsubApi.requests.length).toBe(seen);
  });
});
