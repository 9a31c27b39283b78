/**
 * Issue 31, item 1: a subscription's destination has a kind, with validated settings, and
 * credentials stored encrypted like signing secrets (never answered, bound to the subscription
 * and the field, rewritten by the re-encryption pass). Both backends.
 */
import { afterEach, expect, it } from "vitest";
import { useKeyring } from "../../../shared/crypto/activeKeyring.js";
import { parseEncryptionKeys } from "../../../shared/crypto/keyring.js";
import { open } from "../../../shared/crypto/envelope.js";
import { reencryptSecrets, secretsByKey } from "../../../shared/crypto/reencrypt.js";
import { createDestinationPolicy } from "../../../shared/outbound/destinationPolicy.js";
import { destinationWhere, openDestination, type StoredDestination } from "../../../shared/outbound/destinations/config.js";
import { OutboundValidationError } from "../../../shared/outbound/errors.js";
import { createSubscription, getSubscription, listSubscriptions } from "../../../shared/outbound/subscriptions.js";
import { updateSubscription } from "../../../shared/outbound/subscriptionChanges.js";
import { describeEachBackend } from "../../support/databases.js";

const OLD = `old:${Buffer.alloc(32, 31).toString("base64")}`;
const NEW = `new:${Buffer.alloc(32, 32).toString("base64")}`;
const AWS_KEY = { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" };
const SQS = { kind: "sqs", queueUrl: "https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo", credentials: AWS_KEY };

/** The OutboundValidationError `promise` rejects with. */
async function refusal(promise: Promise<unknown>): Promise<OutboundValidationError> {
  const error = await promise.then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(OutboundValidationError);
  return error as OutboundValidationError;
}

describeEachBackend("subscription destinations: kinds, settings, sealed credentials", (ctx) => {
  afterEach(async () => {
    useKeyring(undefined);
    await ctx.db.query("TRUNCATE outbound_attempt_rows, outbound_replays, outbound_deliveries, outbound_events, outbound_subscriptions CASCADE");
  });
  const create = (destination: Record<string, unknown>, more: Record<string, unknown> = {}) =>
    createSubscription(ctx.db, { destination, eventTypes: ["order.*"], ...more });
  const storedOf = async (id: string) =>
    (await ctx.db.query<{ destination: StoredDestination | null; url: string }>("SELECT destination, url FROM outbound_subscriptions WHERE id = $1", [id])).rows[0]!;

  it("answers each kind's settings with defaults filled in, and a read-only <kind>: url; never a secret part", async () => {
    useKeyring(parseEncryptionKeys(OLD));
    const cases: [Record<string, unknown>, Record<string, unknown>, string][] = [
      [SQS, { kind: "sqs", region: "eu-west-1", fifo: true, endpoint: null, credentials: { accessKeyId: AWS_KEY.accessKeyId } }, "sqs:https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo"],
      [{ kind: "sns", topicArn: "arn:aws:sns:us-east-2:123456789012:orders" }, { region: "us-east-2", fifo: false, credentials: null }, "sns:arn:aws:sns:us-east-2:123456789012:orders"],
      [{ kind: "eventbridge", eventBus: "orders", region: "eu-central-1" }, { source: "multicloud-webhooks", detailType: null }, "eventbridge:eu-central-1/orders"],
      [{ kind: "servicebus", queue: "orders", credentials: { connectionString: "Endpoint=sb://shop.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=c2VjcmV0" } },
        { namespace: "shop.servicebus.windows.net", topic: null, credentials: { keyName: "send" } }, "servicebus:sb://shop.servicebus.windows.net/orders"],
      [{ kind: "servicebus", topic: "orders", namespace: "shop.servicebus.windows.net" }, { queue: null, credentials: null }, "servicebus:sb://shop.servicebus.windows.net/topics/orders"],
      [{ kind: "pubsub", topic: "projects/shop-prod/topics/orders" }, { endpoint: null, emulator: false }, "pubsub:projects/shop-prod/topics/orders"],
      [{ kind: "rabbitmq", url: "amqps://mq.example.com/shop", exchange: "webhooks", routingKey: "order.paid", credentials: { username: "relay", password: "hunter2-rabbit" } },
        { credentials: { username: "relay" } }, "rabbitmq:amqps://mq.example.com/shop?exchange=webhooks&routingKey=order.paid"],
    ];
    for (const [input, shown, url] of cases) {
      const sub = await create(input);
      expect(sub.url).toBe(url);
      expect(sub.destination).toMatchObject({ kind: input.kind, ...shown });
      const answered = JSON.stringify([sub, await getSubscription(ctx.db, sub.id, { includeSecrets: true }), await listSubscriptions(ctx.db)]);
      for (const secret of [AWS_KEY.secretAccessKey, "c2VjcmV0", "hunter2-rabbit"]) expect(answered).not.toContain(secret);
      expect(answered).not.toContain("sealed");
    }
    // An http subscription answers its destination too.
    const http = await createSubscription(ctx.db, { url: "https://example.com/hooks", eventTypes: ["*"] });
    expect(http.destination).toEqual({ kind: "http", url: "https://example.com/hooks" });
    expect((await createSubscription(ctx.db, { destination: { kind: "http", url: "https://example.com/b" }, eventTypes: ["*"] })).url).toBe("https://example.com/b");
  });

  it("stores the secret parts only as envelopes bound to the subscription and the field", async () => {
    useKeyring(parseEncryptionKeys(OLD));
    const sub = await create(SQS);
    const { destination } = await storedOf(sub.id);
    expect(Object.keys(destination!.sealed)).toEqual(["secretAccessKey"]);
    expect(destination!.sealed.secretAccessKey).toMatch(/^enc\.v1\.old\./);
    expect(JSON.stringify(destination)).not.toContain(AWS_KEY.secretAccessKey);
    expect(openDestination(sub.id, destination!).secrets).toEqual({ secretAccessKey: AWS_KEY.secretAccessKey });
    // Copied to another subscription or field, it does not decrypt.
    expect(() => openDestination("sub_other", destination!)).toThrow();
    expect(() => open(parseEncryptionKeys(OLD), destination!.sealed.secretAccessKey!, destinationWhere(sub.id, "sessionToken"))).toThrow();
  });

  it("the re-encryption pass rewrites destination credentials under the new key", async () => {
    useKeyring(parseEncryptionKeys(OLD));
    const sub = await create({ kind: "rabbitmq", url: "amqp://127.0.0.1:5672", exchange: "", routingKey: "q", credentials: { username: "guest", password: "guest" } });
    expect(await secretsByKey(ctx.db)).toEqual({ old: 2 }); // its signing secret, its password
    useKeyring(parseEncryptionKeys(`${NEW},${OLD}`));
    expect(await reencryptSecrets(ctx.db)).toMatchObject({ rewritten: 1, unreadable: [] });
    expect(await secretsByKey(ctx.db)).toEqual({ new: 2 });
    useKeyring(parseEncryptionKeys(NEW));
    expect(openDestination(sub.id, (await storedOf(sub.id)).destination!).secrets).toEqual({ password: "guest" });
  });

  it("refuses bad settings with the place and what to do", async () => {
    const cases: [Record<string, unknown>, string, RegExp, Record<string, unknown>?][] = [
      [{ kind: "sqs", queueUrl: "https://sqs.eu-west-1.amazonaws.com/orders" }, "destination.queueUrl", /12-digit account/],
      [{ kind: "sqs", queueUrl: "http://127.0.0.1:5000/123456789012/q" }, "destination.region", /is required/],
      [{ kind: "sqs", queueUrl: "https://sqs.eu-west-1.amazonaws.com/123456789012/q", credentials: { accessKeyId: "AKIAIOSFODNN7EXAMPLE" } }, "destination.credentials.secretAccessKey", /./],
      [{ kind: "sns", topicArn: "orders" }, "destination.topicArn", /SNS topic ARN/],
      [{ kind: "eventbridge", eventBus: "orders" }, "destination.region", /required with an event bus name/],
      [{ kind: "eventbridge", eventBus: "arn:aws:events:eu-west-1:123456789012:event-bus/o", region: "us-east-1" }, "destination.region", /omit region/],
      [{ kind: "eventbridge", eventBus: "o", region: "eu-west-1", source: "aws.s3" }, "destination.source", /reserved/],
      [{ kind: "servicebus", namespace: "x.servicebus.windows.net" }, "destination.queue", /queue or topic/],
      [{ kind: "servicebus", queue: "q", topic: "t", namespace: "x.servicebus.windows.net" }, "destination.queue", /queue or topic/],
      [{ kind: "servicebus", queue: "q" }, "destination.namespace", /relay's identity/],
      [{ kind: "servicebus", queue: "q", credentials: { connectionString: "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=k" } }, "destination.credentials.connectionString", /SharedAccessKey/],
      [{ kind: "servicebus", queue: "q", credentials: { connectionString: "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=a;EntityPath=other" } }, "destination.credentials.connectionString", /entity other/],
      [{ kind: "pubsub", topic: "orders" }, "destination.topic", /projects\/<project id>\/topics/],
      [{ kind: "pubsub", topic: "projects/shop-prod/topics/orders", emulator: true }, "destination.endpoint", /emulator's endpoint/],
      [{ kind: "rabbitmq", url: "amqp://guest:guest@127.0.0.1", exchange: "", routingKey: "q" }, "destination.url", /credentials\.username/],
      [{ kind: "rabbitmq", url: "https://mq.example.com", exchange: "", routingKey: "q" }, "destination.url", /amqps/],
      [{ kind: "kafka", url: "x" }, "destination.kind", /./],
      [SQS, "auth", /for http destinations/, { auth: { kind: "basic", username: "u", password: "p" } }],
      [SQS, "headers", /at most 6/, { headers: Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`x-h${i}`, "v"])) }],
      [SQS, "destination", /not both/, { url: "https://example.com/hooks" }],
    ];
    useKeyring(parseEncryptionKeys(OLD));
    for (const [destination, path, message, more] of cases) {
      const error = await refusal(create(destination, more));
      expect(error.issues.map((i) => i.path), JSON.stringify(destination)).toContain(path);
      expect(error.issues.find((i) => i.path === path)!.message).toMatch(message);
    }
    const none = await refusal(createSubscription(ctx.db, { eventTypes: ["*"] }));
    expect(none.message).toMatch(/give url .* or destination/);
    expect(await listSubscriptions(ctx.db)).toEqual([]);
  });

  it("with the destination policy, refuses endpoints and brokers on local addresses, as for URLs", async () => {
    const policy = createDestinationPolicy({ allowed: [] });
    const error = await refusal(createSubscription(ctx.db, { destination: { kind: "rabbitmq", url: "amqp://127.0.0.1:5672", exchange: "", routingKey: "q" }, eventTypes: ["*"] }, { destinationPolicy: policy }));
    expect(error.issues[0]!.path).toBe("destination.url");
    const sqs = await refusal(createSubscription(ctx.db, { destination: { ...SQS, credentials: undefined, endpoint: "http://10.0.0.8:4566" }, eventTypes: ["*"] }, { destinationPolicy: policy }));
    expect(sqs.issues[0]!.path).toBe("destination.endpoint");
    const allowed = createDestinationPolicy({ allowed: ["127.0.0.1"] });
    await expect(createSubscription(ctx.db, { destination: { kind: "rabbitmq", url: "amqp://127.0.0.1:5672", exchange: "", routingKey: "q" }, eventTypes: ["*"] }, { destinationPolicy: allowed })).resolves.toMatchObject({ destination: { kind: "rabbitmq" } });
  });

  it("an edit replaces the destination whole, switches kinds either way, and resets health", async () => {
    useKeyring(parseEncryptionKeys(OLD));
    const sub = await createSubscription(ctx.db, { url: "https://example.com/hooks", eventTypes: ["*"] });
    await ctx.db.query("UPDATE outbound_subscriptions SET status = 'degraded', consecutive_failures = 7 WHERE id = $1", [sub.id]);
    const toQueue = await updateSubscription(ctx.db, sub.id, { destination: SQS });
    expect(toQueue).toMatchObject({ url: `sqs:${SQS.queueUrl}`, destination: { kind: "sqs", fifo: true }, status: "active", health: { consecutiveFailures: 0 } });
    const first = (await storedOf(sub.id)).destination!;
    const again = await updateSubscription(ctx.db, sub.id, { destination: { ...SQS, credentials: { ...AWS_KEY, secretAccessKey: "rotated-secret-key-000000000000000000000" } } });
    const second = (await storedOf(sub.id)).destination!;
    expect(second.version).not.toBe(first.version); // a new client for the new credentials
    expect(openDestination(sub.id, second).secrets.secretAccessKey).toBe("rotated-secret-key-000000000000000000000");
    expect(JSON.stringify(again)).not.toContain("rotated-secret");
    // auth and too many headers are refused against the current queue destination.
    expect((await refusal(updateSubscription(ctx.db, sub.id, { auth: { kind: "basic", username: "u", password: "p" } }))).issues[0]!.path).toBe("auth");
    expect((await refusal(updateSubscription(ctx.db, sub.id, { headers: Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`x-h${i}`, "v"])) }))).issues[0]!.path).toBe("headers");
    const back = await updateSubscription(ctx.db, sub.id, { url: "https://example.com/again" });
    expect(back).toMatchObject({ url: "https://example.com/again", destination: { kind: "http", url: "https://example.com/again" } });
    expect((await storedOf(sub.id)).destination).toBeNull();
  });
});
