/**
 * RabbitMQ (AMQP 0-9-1) destinations: one publish per attempt on a confirm channel, so an attempt
 * is delivered only once the broker has taken responsibility for the message (basic.ack); the
 * attempts that reach the client together are published in one run (coalesce.ts). The
 * envelope is the content, persistent (delivery mode 2), `contentType` application/json,
 * `messageId` the delivery id, `timestamp` the webhook timestamp, `type` the event type, and the
 * Standard Webhooks headers are message headers. Published `mandatory`: a message no queue is bound
 * to receive is returned by the broker, and the attempt fails (`unroutable`, retried) instead of
 * the message vanishing. One connection and one channel per destination, reopened after the broker
 * closes them (a channel closes on a missing exchange: 404, classified not_found). A broker that
 * blocks publishers (a memory or disk alarm) fails attempts at once as `throttled`. The only module
 * that loads amqplib, on the first RabbitMQ destination.
 */
import type { ChannelModel, ConfirmChannel } from "amqplib";
import type { OpenDestination } from "./config.js";
import { classifyAmqpError } from "./classify.js";
import { DestinationSendError, eventTypeOf, type DestinationClient, type DestinationMessage, type SendFailure } from "./message.js";

/** How long a connection attempt may take (ms). */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * The socket under a channel (amqplib keeps it as `channel.connection.stream`, not a documented
 * field), to cork while a group is written; null if a later amqplib moves it: then uncorked, as
 * before, only slower.
 */
function socketOf(channel: ConfirmChannel): { cork(): void; uncork(): void } | null {
  const stream = (channel as unknown as { connection?: { stream?: { cork?: unknown; uncork?: unknown } } }).connection?.stream;
  return typeof stream?.cork === "function" && typeof stream.uncork === "function" ? (stream as { cork(): void; uncork(): void }) : null;
}

export async function openRabbitMq(destination: OpenDestination & { kind: "rabbitmq" }): Promise<DestinationClient & { classify(error: unknown): SendFailure }> {
  const amqp = await import("amqplib");
  const url = new URL(destination.url);
  const user = destination.credentials && "username" in destination.credentials ? { username: destination.credentials.username, password: destination.secrets.password! } : null;
  const vhost = decodeURIComponent(url.pathname.slice(1)) || "/";
  const connectOptions = {
    protocol: url.protocol.slice(0, -1),
    hostname: url.hostname.replace(/^\[|\]$/g, ""),
    port: url.port ? Number(url.port) : url.protocol === "amqps:" ? 5671 : 5672,
    vhost,
    heartbeat: 30,
    ...(user ? user : {}),
  };
  const socketOptions = { timeout: CONNECT_TIMEOUT_MS, ...(url.protocol === "amqps:" ? { servername: url.hostname } : {}), ...(user ? { credentials: amqp.credentials.plain(user.username, user.password) } : {}) };

  let connection: Promise<ChannelModel> | null = null;
  let channel: Promise<ConfirmChannel> | null = null;
  /** Why the broker closed the channel or connection last (the confirm callbacks then only say "closed"). */
  let closedBecause: Error | null = null;
  let blocked: string | null = null;
  /** Message ids the broker returned as unroutable, until their confirm arrives (basic.return comes before basic.ack). */
  const returned = new Map<string, number>();
  let closing = false;

  const connectionOf = (): Promise<ChannelModel> => {
    connection ??= amqp.connect(connectOptions, socketOptions).then((c) => {
      c.on("error", (error: Error) => { closedBecause = error; });
      c.on("close", () => { connection = null; channel = null; blocked = null; });
      c.on("blocked", (reason: string) => { blocked = reason || "resource alarm"; });
      c.on("unblocked", () => { blocked = null; });
      return c;
    }, (error: unknown) => {
      connection = null;
      throw error;
    });
    return connection;
  };
  const channelOf = (): Promise<ConfirmChannel> => {
    channel ??= connectionOf().then((c) => c.createConfirmChannel()).then((ch) => {
      ch.on("error", (error: Error) => { closedBecause = error; });
      ch.on("close", () => { channel = null; });
      ch.on("return", (msg: { properties: { messageId?: string } }) => {
        const id = msg.properties.messageId;
        if (id) returned.set(id, (returned.get(id) ?? 0) + 1);
      });
      return ch;
    }, (error: unknown) => {
      channel = null;
      throw error;
    });
    return channel;
  };
  const takeReturned = (id: string): boolean => {
    const n = returned.get(id);
    if (!n) return false;
    if (n === 1) returned.delete(id);
    else returned.set(id, n - 1);
    return true;
  };

  /** Publishes on `ch` at once (amqplib queues the frames); settles on the broker's confirm. */
  const publish = (ch: ConfirmChannel, message: DestinationMessage) => new Promise<void>((resolve, reject) => {
    const type = eventTypeOf(message.body);
    try {
      ch.publish(destination.exchange, destination.routingKey, Buffer.from(message.body, "utf8"), {
        persistent: true,
        mandatory: true,
        contentType: "application/json",
        messageId: message.webhookId,
        timestamp: Number(message.attributes["webhook-timestamp"]),
        ...(type ? { type } : {}),
        headers: message.attributes,
      }, (error: unknown) => {
        if (error) return reject(closedBecause ?? error);
        if (takeReturned(message.webhookId)) {
          return reject(new DestinationSendError({ result: "retryable", errorClass: "unroutable", detail: `no queue is bound to exchange "${destination.exchange}" with routing key "${destination.routingKey}": the broker returned the message (bind a queue, then it is delivered at the next attempt)` }));
        }
        resolve();
      });
    } catch (error) {
      reject(error);
    }
  });
  const ready = async (): Promise<ConfirmChannel> => {
    if (blocked) throw new DestinationSendError({ result: "retryable", errorClass: "throttled", detail: `the broker blocks publishers: ${blocked}` });
    closedBecause = null;
    return channelOf();
  };

  return {
    async send(message) {
      await publish(await ready(), message);
    },
    async sendBatch(messages) {
      const ch = await ready();
      // All published in one synchronous run: amqplib's writer then sends their frames in one pass
      // (published one per turn, it wrote each on its own), into a corked socket: one write for the
      // group, not one system call per message (those were 40 % of a relay's CPU to a local
      // broker). Each message is confirmed on its own.
      const socket = socketOf(ch);
      socket?.cork();
      const outcomes = messages.map((m) => publish(ch, m).then(() => null, (error: unknown) => (error instanceof DestinationSendError ? error.failure : classifyAmqpError(error))));
      // The writer's pass was scheduled (setImmediate) by the first publish: this runs after it.
      if (socket) setImmediate(() => socket.uncork());
      return Promise.all(outcomes);
    },
    // No batch call in AMQP 0-9-1: the group only shares the writer's pass, so any size will do.
    batch: { maxMessages: 256, maxBytes: Number.MAX_SAFE_INTEGER, sizeOf: () => 0 },
    classify: classifyAmqpError,
    async close() {
      if (closing) return;
      closing = true;
      const c = connection;
      connection = null;
      channel = null;
      await c?.then((open) => open.close()).catch(() => {});
    },
  };
}
