/**
 * RabbitMQ (AMQP 0-9-1) destinations: one publish per attempt on a confirm channel, so an attempt
 * is delivered only once the broker has taken responsibility for the message (basic.ack). The
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
import { DestinationSendError, eventTypeOf, type DestinationClient, type SendFailure } from "./message.js";

/** How long a connection attempt may take (ms). */
const CONNECT_TIMEOUT_MS = 10_000;

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

  return {
    async send(message) {
      if (blocked) throw new DestinationSendError({ result: "retryable", errorClass: "throttled", detail: `the broker blocks publishers: ${blocked}` });
      closedBecause = null;
      const ch = await channelOf();
      await new Promise<void>((resolve, reject) => {
        try {
          ch.publish(destination.exchange, destination.routingKey, Buffer.from(message.body, "utf8"), {
            persistent: true,
            mandatory: true,
            contentType: "application/json",
            messageId: message.webhookId,
            timestamp: Number(message.attributes["webhook-timestamp"]),
            ...(message.eventType ?? eventTypeOf(message.body) ? { type: (message.eventType ?? eventTypeOf(message.body))! } : {}),
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
    },
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
