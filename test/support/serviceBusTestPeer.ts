/**
 * Azure Service Bus TEST PEER: a small in-process AMQP 1.0 peer, written on `rhea`, that the real
 * `@azure/service-bus` client can talk to. It is a test utility, not an emulator: it models the
 * slice of Service Bus our queue adapter and trigger tests use, and nothing more (see
 * docs/queues-servicebus.md for what it models and what it does not).
 *
 * How the SDK reaches it: a connection string with `UseDevelopmentEmulator=true` makes
 * `@azure/core-amqp` (>= 4.3.0) use plain TCP and SASL ANONYMOUS, on the port in the endpoint.
 *
 * What the SDK needs from a peer, and where each need is met below:
 * - `$cbs`: every link first sends a `put-token` request; we answer `status-code` 200 on the reply
 *   link, `correlation_id` = the request's `message_id` (no token is checked).
 * - sends: single messages arrive as format 0; `sendMessages([...])` arrives as format 0x80013700,
 *   an envelope whose data sections each hold one encoded message. The SDK sizes batches with
 *   the `max_message_size` we advertise on attach.
 * - peek-lock receivers (rcv-settle-mode "second", credit 0 then explicit credit, drain at the end
 *   of each `receiveMessages`): each delivery has a 16-byte tag (the lock token), a `message_id`
 *   and the annotations `x-opt-locked-until`, `x-opt-sequence-number`, `x-opt-enqueued-time`.
 *   The header `delivery_count` counts earlier failed deliveries (0 on the first), as the real
 *   service sends it; the JS SDK reports that number as `deliveryCount`.
 * - settlement: `accepted` = complete; `modified{undeliverable_here:false}` = abandon (the delivery
 *   counts); `rejected{condition "com.microsoft:dead-letter"}` = dead-letter, with
 *   `DeadLetterReason`/`DeadLetterErrorDescription` in the error info. We then settle with a plain
 *   state; a settlement whose lock has expired is answered `com.microsoft:message-lock-lost`.
 * - `<entity>/$management`: renew-lock, peek, schedule-message, cancel-scheduled-message and
 *   update-disposition (the SDK's fallback when the receiving link is gone).
 *
 * Queue model: per queue a lock duration and a max delivery count; an expired lock or an abandon
 * makes the message available again with its delivery count incremented, and once the count
 * reaches the maximum the message moves to the dead-letter subqueue (`<queue>/$DeadLetterQueue`)
 * with reason `MaxDeliveryCountExceeded`. Scheduled messages become visible at their time.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { AddressInfo, Server } from "node:net";
import { dirname, join } from "node:path";

// ---- the part of rhea this peer uses ---------------------------------------------------------
// rhea's bundled typings miss much of what a server side touches (link.remote, outcomes), so we
// declare the surface we use. rhea is CommonJS exporting a container instance: load it with
// require so it resolves the same way under tsx, vitest and plain node.
interface Terminus { address?: string }
interface Attach { source?: Terminus; target?: Terminus; snd_settle_mode?: number; rcv_settle_mode?: number; max_message_size?: number }
interface AmqpMessage {
  message_id?: unknown; correlation_id?: unknown; reply_to?: string; to?: string; delivery_count?: number;
  application_properties?: Record<string, unknown>; message_annotations?: Record<string, unknown>; body?: unknown;
}
interface Delivery { update(settled: boolean, state?: unknown): void; remote_state?: unknown }
interface Link {
  name: string;
  connection: unknown;
  remote: { attach?: Attach };
  local: { attach: Attach };
  close(error?: { condition: string; description: string }): void;
}
interface Sender extends Link { sendable(): boolean; send(message: AmqpMessage, tag?: Buffer): Delivery }
interface EventContext { connection: unknown; sender?: Sender; receiver?: Link; delivery?: Delivery; message?: unknown; format?: number }
interface Outcome { described(): unknown }
interface Container {
  sasl_server_mechanisms: { enable_anonymous(): void };
  on(event: string, handler: (context: EventContext) => void): void;
  listen(options: { host: string; port: number }): Server;
}
interface Rhea {
  create_container(options: Record<string, unknown>): Container;
  message: {
    encode(message: AmqpMessage): Buffer;
    decode(bytes: Buffer): AmqpMessage;
    accepted(): Outcome;
    released(): Outcome;
    rejected(fields: { error?: { condition: string; description: string } }): Outcome;
    modified(fields: { undeliverable_here?: boolean }): Outcome;
  };
  types: { wrap_long(value: number): unknown };
  uuid_to_string(bytes: Buffer): string;
}
const rhea = createRequire(import.meta.url)("rhea") as Rhea;

/** The AMQP message format of a batch envelope (Microsoft's batched-message format). */
const BATCH_FORMAT = 0x80013700;
const DEAD_LETTER_CONDITION = "com.microsoft:dead-letter";
const LOCK_LOST = "com.microsoft:message-lock-lost";

export interface TestQueueOptions {
  /** How long a peek-lock delivery stays locked. Default: 30 000 ms. */
  lockDurationMs?: number;
  /** Deliveries after which a message is dead-lettered with `MaxDeliveryCountExceeded`. Default: 10. */
  maxDeliveryCount?: number;
}

export interface TestPeerOptions {
  /** Advertised on every sending link's attach; larger messages are rejected. Default: 256 KiB. */
  maxMessageSize?: number;
}

/** What a test may inspect about a queue (counts only: assert behaviour through the SDK). */
export interface TestQueueStats {
  active: number;
  scheduled: number;
  locked: number;
  deadLettered: number;
}

export interface ServiceBusTestPeer {
  readonly port: number;
  /** A connection string the real SDK accepts for this peer. */
  readonly connectionString: string;
  createQueue(name: string, options?: TestQueueOptions): void;
  stats(queue: string): TestQueueStats;
  close(): Promise<void>;
}

/** A stored message. `message` is the decoded AMQP message as the client sent it. */
interface Entry {
  seq: number;
  message: AmqpMessage;
  enqueuedAt: number;
  visibleAt: number;
  /** Deliveries that ended without completion (abandon, lock expiry). */
  failedDeliveries: number;
  lock?: { token: string; until: number };
}

interface Entity {
  path: string;
  queueName: string;
  lockDurationMs: number;
  maxDeliveryCount: number;
  entries: Entry[];
  /** Set on a queue; undefined on its dead-letter subqueue. */
  deadLetter?: Entity;
  consumers: Set<Sender>;
}

interface Inflight {
  entity: Entity;
  entry: Entry;
  token: string;
}

/** rhea internals the drain echo needs (see `echoDrain`). */
interface DrainableSender {
  _draining?: boolean;
  _echoDrain?: boolean;
  _get_drain: () => boolean;
  issue_flow: boolean;
  credit: number;
  delivery_count: number;
  connection: { _register(): void };
}

/**
 * `UseDevelopmentEmulator=true` (plain TCP, no TLS) needs the SDK's `@azure/core-amqp` >= 4.3.0;
 * older versions would try TLS against our plain socket and fail obscurely. Fail clearly instead.
 */
function checkCoreAmqpVersion(): void {
  const fromServiceBus = createRequire(createRequire(import.meta.url).resolve("@azure/service-bus"));
  let dir = dirname(fromServiceBus.resolve("@azure/core-amqp"));
  for (; dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, "package.json");
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, "utf8")) as { name?: string; version?: string };
    if (pkg.name !== "@azure/core-amqp") continue;
    const [major = 0, minor = 0] = (pkg.version ?? "0.0").split(".").map(Number);
    if (major > 4 || (major === 4 && minor >= 3)) return;
    throw new Error(`The Service Bus test peer needs @azure/core-amqp >= 4.3.0 (UseDevelopmentEmulator support); found ${pkg.version} in ${dir}. Update @azure/service-bus.`);
  }
  throw new Error("The Service Bus test peer could not find @azure/core-amqp's package.json next to @azure/service-bus.");
}

/** Starts a peer on 127.0.0.1 and an ephemeral port. Close it in `afterAll`. */
export async function startServiceBusTestPeer(options: TestPeerOptions = {}): Promise<ServiceBusTestPeer> {
  checkCoreAmqpVersion();
  const maxMessageSize = options.maxMessageSize ?? 256 * 1024;
  const entities = new Map<string, Entity>();
  const inflight = new WeakMap<Delivery, Inflight>();
  const replyLinks = new Set<Sender>();
  let nextSeq = 1;

  const container = rhea.create_container({
    id: "servicebus-test-peer",
    // We settle every incoming delivery ourselves (accept, or reject an oversized message).
    autoaccept: false,
    // An abandon is `modified`; keep it distinct from `released`.
    treat_modified_as_released: false,
  });
  container.sasl_server_mechanisms.enable_anonymous();

  const entityFor = (address: string | undefined): Entity | undefined =>
    address === undefined ? undefined : entities.get(address.replace(/\/\$management$/, ""));

  // ---- the queue model -------------------------------------------------------------------------

  function enqueue(entity: Entity, message: AmqpMessage, now = Date.now()): Entry {
    const annotations = message.message_annotations ?? {};
    const scheduled = annotations["x-opt-scheduled-enqueue-time"] as Date | undefined;
    const entry: Entry = {
      seq: nextSeq++,
      message,
      enqueuedAt: now,
      visibleAt: scheduled instanceof Date ? scheduled.getTime() : now,
      failedDeliveries: 0,
    };
    entity.entries.push(entry);
    return entry;
  }

  function remove(entity: Entity, entry: Entry): void {
    const i = entity.entries.indexOf(entry);
    if (i >= 0) entity.entries.splice(i, 1);
  }

  function deadLetter(entity: Entity, entry: Entry, reason: string, description: string, extra = {}): void {
    remove(entity, entry);
    const target = entity.deadLetter ?? entity; // dead-lettering from the DLQ leaves it there
    const message = {
      ...entry.message,
      application_properties: {
        ...entry.message.application_properties,
        ...extra,
        DeadLetterReason: reason,
        DeadLetterErrorDescription: description,
      },
      message_annotations: { ...entry.message.message_annotations, "x-opt-deadletter-source": entity.queueName },
    };
    const copy = enqueue(target, message);
    copy.failedDeliveries = entry.failedDeliveries;
  }

  /** A delivery ended without completion: count it, and dead-letter past the maximum. */
  function release(entity: Entity, entry: Entry, propertiesToModify?: Record<string, unknown>): void {
    entry.lock = undefined;
    entry.failedDeliveries += 1;
    if (propertiesToModify) {
      entry.message.application_properties = { ...entry.message.application_properties, ...propertiesToModify };
    }
    if (entity.deadLetter && entry.failedDeliveries >= entity.maxDeliveryCount) {
      deadLetter(entity, entry, "MaxDeliveryCountExceeded",
        `Message could not be consumed after ${entity.maxDeliveryCount} delivery attempts.`);
    }
  }

  function isLockHeld(flight: Inflight, now = Date.now()): boolean {
    return flight.entity.entries.includes(flight.entry) && flight.entry.lock?.token === flight.token &&
      flight.entry.lock.until > now;
  }

  /** The message as delivered: the client's message plus the broker's annotations. */
  function outgoing(entry: Entry, lockedUntil?: number): AmqpMessage {
    const annotations: Record<string, unknown> = {
      ...entry.message.message_annotations,
      "x-opt-sequence-number": rhea.types.wrap_long(entry.seq),
      "x-opt-enqueued-time": new Date(entry.enqueuedAt),
    };
    if (lockedUntil !== undefined) annotations["x-opt-locked-until"] = new Date(lockedUntil);
    if (entry.visibleAt > Date.now()) annotations["x-opt-message-state"] = 2; // scheduled (peek)
    return {
      ...entry.message,
      message_id: entry.message.message_id ?? `seq-${entry.seq}`,
      delivery_count: entry.failedDeliveries,
      message_annotations: annotations,
    };
  }

  /** Expire locks, then hand visible messages to every consumer link that has credit. */
  function pump(entity: Entity): void {
    const now = Date.now();
    for (const entry of [...entity.entries]) {
      if (entry.lock && entry.lock.until <= now) release(entity, entry);
    }
    for (const sender of entity.consumers) {
      while (sender.sendable()) {
        const entry = entity.entries.find((e) => !e.lock && e.visibleAt <= now);
        if (!entry) break;
        const tag = randomBytes(16);
        // receiveAndDelete receivers ask for pre-settled deliveries (rhea settles them, as we echo
        // snd-settle-mode "settled" on attach): the message is gone once sent.
        if (sender.remote.attach?.snd_settle_mode === 1) {
          remove(entity, entry);
          sender.send(outgoing(entry), tag);
          continue;
        }
        const until = now + entity.lockDurationMs;
        entry.lock = { token: lockTokenOf(tag), until };
        const delivery = sender.send(outgoing(entry, until), tag);
        inflight.set(delivery, { entity, entry, token: entry.lock.token });
      }
    }
  }

  const pumpAll = () => {
    for (const entity of entities.values()) pump(entity);
  };
  // Lock expiry and scheduled messages are time-driven; a short tick is simpler than timers per message.
  const ticker = setInterval(pumpAll, 20);
  ticker.unref();

  // ---- links -----------------------------------------------------------------------------------

  container.on("receiver_open", (context: EventContext) => {
    // The client is a sender: to a queue, to `$cbs`, or to a `$management` node.
    const receiver = context.receiver!;
    const address = receiver.remote.attach?.target?.address as string | undefined;
    const local = receiver.local.attach;
    local.target = receiver.remote.attach?.target;
    local.source = receiver.remote.attach?.source;
    local.max_message_size = maxMessageSize;
    if (address !== "$cbs" && !entityFor(address)) {
      receiver.close({ condition: "amqp:not-found", description: `The messaging entity '${address}' could not be found.` });
    }
  });

  container.on("sender_open", (context: EventContext) => {
    // The client is a receiver: of a queue / dead-letter subqueue, or a reply link.
    const sender = context.sender!;
    const attach = sender.remote.attach!;
    const address = attach.source?.address as string | undefined;
    const local = sender.local.attach;
    local.source = attach.source;
    local.target = attach.target;
    local.snd_settle_mode = attach.snd_settle_mode;
    local.rcv_settle_mode = attach.rcv_settle_mode;
    if (address === "$cbs" || address?.endsWith("/$management")) {
      replyLinks.add(sender);
      return;
    }
    const entity = entityFor(address);
    if (!entity) {
      sender.close({ condition: "amqp:not-found", description: `The messaging entity '${address}' could not be found.` });
      return;
    }
    installDrainEcho(sender as unknown as DrainableSender);
    entity.consumers.add(sender);
  });

  const forget = (context: EventContext) => {
    if (!context.sender) return;
    replyLinks.delete(context.sender);
    for (const entity of entities.values()) entity.consumers.delete(context.sender);
  };
  container.on("sender_close", forget);
  container.on("sender_error", forget);
  const forgetConnection = (context: EventContext) => {
    for (const link of [...replyLinks]) if (link.connection === context.connection) replyLinks.delete(link);
    for (const entity of entities.values()) {
      for (const link of [...entity.consumers]) if (link.connection === context.connection) entity.consumers.delete(link);
    }
  };
  container.on("connection_close", forgetConnection);
  container.on("disconnected", forgetConnection);
  // A client going away mid-frame must not crash the test process.
  container.on("error", () => {});

  container.on("sendable", (context: EventContext) => {
    for (const entity of entities.values()) if (entity.consumers.has(context.sender!)) pump(entity);
  });

  container.on("sender_draining", (context: EventContext) => {
    for (const entity of entities.values()) if (entity.consumers.has(context.sender!)) pump(entity);
    echoDrain(context.sender as unknown as DrainableSender);
  });

  // ---- incoming messages: sends, $cbs, $management ---------------------------------------------

  container.on("message", (context: EventContext) => {
    const receiver = context.receiver!;
    const delivery = context.delivery!;
    const address = receiver.remote.attach?.target?.address as string | undefined;
    if (address === "$cbs") {
      // Put-token: accept any token. Real Service Bus validates the SAS or AAD token here.
      reply(context, 200, "OK", undefined, true);
      delivery.update(true, rhea.message.accepted().described());
      return;
    }
    const entity = entityFor(address)!;
    if (address?.endsWith("/$management")) {
      handleManagement(context, entity);
      delivery.update(true, rhea.message.accepted().described());
      return;
    }
    const format = context.format;
    const raw = context.message as unknown;
    const messages = format === BATCH_FORMAT
      ? batchContents(raw as Buffer)
      : [context.message as AmqpMessage];
    const size = format === BATCH_FORMAT ? (raw as Buffer).length : rhea.message.encode(messages[0]!).length;
    if (size > maxMessageSize) {
      delivery.update(true, rhea.message.rejected({ error: {
        condition: "amqp:link:message-size-exceeded",
        description: `The message (${size} bytes) exceeds the limit of ${maxMessageSize} bytes.`,
      } }).described());
      return;
    }
    const now = Date.now();
    for (const message of messages) enqueue(entity, message, now);
    delivery.update(true, rhea.message.accepted().described());
    pump(entity);
  });

  /** Decodes a batch envelope: each data section is one encoded message. */
  function batchContents(payload: Buffer): AmqpMessage[] {
    const envelope = rhea.message.decode(payload);
    const body = envelope.body as { content: Buffer | Buffer[]; multiple?: boolean };
    const sections = Array.isArray(body.content) ? body.content : [body.content];
    return sections.map((section) => rhea.message.decode(section));
  }

  /** Answers a request on the client's reply link (same connection, address, and `reply_to`). */
  function reply(context: EventContext, status: number, description: string, body?: unknown,
    cbs = false, condition?: string): void {
    const request = context.message as AmqpMessage;
    const node = context.receiver!.remote.attach?.target?.address as string;
    const candidates = [...replyLinks].filter((l) => l.connection === context.connection &&
      l.remote.attach?.source?.address === node);
    const link = candidates.find((l) => l.name === request.reply_to ||
      l.remote.attach?.target?.address === request.reply_to) ?? candidates[0];
    if (!link) return; // the client gave up on its reply link; it will time out and retry
    const properties: Record<string, unknown> = cbs
      ? { "status-code": status, "status-description": description }
      : { statusCode: status, statusDescription: description };
    if (condition) properties.errorCondition = condition;
    link.send({ correlation_id: request.message_id, to: request.reply_to, application_properties: properties, body });
  }

  function handleManagement(context: EventContext, entity: Entity): void {
    const request = context.message as AmqpMessage;
    const operation = request.application_properties?.operation as string;
    const body = (request.body ?? {}) as Record<string, unknown>;
    const now = Date.now();
    const byToken = (token: unknown) => {
      const key = Buffer.isBuffer(token) ? rhea.uuid_to_string(token) : String(token);
      return entity.entries.find((e) => e.lock?.token === key && e.lock.until > now);
    };
    switch (operation) {
      case "com.microsoft:renew-lock": {
        const entries = (body["lock-tokens"] as unknown[]).map(byToken);
        if (entries.some((e) => !e)) return reply(context, 410, "The lock supplied is invalid.", undefined, false, LOCK_LOST);
        for (const e of entries) e!.lock!.until = now + entity.lockDurationMs;
        return reply(context, 200, "OK", { expirations: entries.map((e) => new Date(e!.lock!.until)) });
      }
      case "com.microsoft:peek-message": {
        const from = Number(body["from-sequence-number"]);
        const count = Number(body["message-count"]);
        const found = entity.entries.filter((e) => e.seq >= from).slice(0, count);
        if (!found.length) return reply(context, 204, "No messages to peek.");
        return reply(context, 200, "OK", {
          messages: found.map((e) => ({ message: rhea.message.encode(outgoing(e)) })),
        });
      }
      case "com.microsoft:schedule-message": {
        const entries = (body.messages as Array<{ message: Buffer }>).map((m) =>
          enqueue(entity, rhea.message.decode(m.message), now));
        return reply(context, 200, "OK", { "sequence-numbers": entries.map((e) => e.seq) });
      }
      case "com.microsoft:cancel-scheduled-message": {
        const seqs = new Set((body["sequence-numbers"] as unknown[]).map(Number));
        for (const e of [...entity.entries]) if (seqs.has(e.seq) && e.visibleAt > now) remove(entity, e);
        return reply(context, 200, "OK");
      }
      case "com.microsoft:update-disposition": {
        const entries = (body["lock-tokens"] as unknown[]).map(byToken);
        if (entries.some((e) => !e)) return reply(context, 410, "The lock supplied is invalid.", undefined, false, LOCK_LOST);
        const status = body["disposition-status"];
        for (const e of entries) {
          if (status === "completed") remove(entity, e!);
          else if (status === "abandoned") release(entity, e!);
          else if (status === "suspended") {
            deadLetter(entity, e!, String(body["deadletter-reason"] ?? ""), String(body["deadletter-description"] ?? ""));
          } else return reply(context, 501, `Disposition '${String(status)}' is not modelled by the test peer.`, undefined, false, "amqp:not-implemented");
        }
        pump(entity);
        return reply(context, 200, "OK");
      }
      default:
        return reply(context, 501, `Operation '${operation}' is not modelled by the test peer.`, undefined, false, "amqp:not-implemented");
    }
  }

  // ---- settlement of our deliveries ------------------------------------------------------------

  function onOutcome(context: EventContext, plain: unknown, settle: (flight: Inflight) => void): void {
    const delivery = context.delivery!;
    const flight = inflight.get(delivery);
    if (!flight) return;
    inflight.delete(delivery);
    if (!isLockHeld(flight)) {
      delivery.update(true, rhea.message.rejected({ error: {
        condition: LOCK_LOST,
        description: "The lock supplied is invalid. Either the lock expired, or the message has already been removed from the queue.",
      } }).described());
      return;
    }
    settle(flight);
    // Settle echoing the client's outcome, without an error: the SDK fails a settlement whose
    // final state carries one. (An absent state would be encoded as a null rhea cannot read.)
    delivery.update(true, plain);
    pump(flight.entity);
  }

  container.on("accepted", (context: EventContext) =>
    onOutcome(context, rhea.message.accepted().described(), ({ entity, entry }) => remove(entity, entry)));
  container.on("released", (context: EventContext) =>
    onOutcome(context, rhea.message.released().described(), ({ entity, entry }) => release(entity, entry)));
  container.on("modified", (context: EventContext) =>
    onOutcome(context, rhea.message.modified({ undeliverable_here: false }).described(), ({ entity, entry }) => {
      const state = context.delivery!.remote_state as { undeliverable_here?: boolean; message_annotations?: Record<string, unknown> };
      // undeliverable_here=true is the SDK's defer: deferral is not modelled, so it counts as an abandon.
      release(entity, entry, state.message_annotations);
    }));
  container.on("rejected", (context: EventContext) =>
    onOutcome(context, rhea.message.rejected({}).described(), ({ entity, entry }) => {
      const error = (context.delivery!.remote_state as { error?: { condition?: string; info?: Record<string, unknown> } }).error;
      const { DeadLetterReason, DeadLetterErrorDescription, ...modified } = error?.info ?? {};
      const reason = error?.condition === DEAD_LETTER_CONDITION ? String(DeadLetterReason ?? "") : String(error?.condition ?? "rejected");
      deadLetter(entity, entry, reason, String(DeadLetterErrorDescription ?? ""), modified);
    }));

  // ---- listen ----------------------------------------------------------------------------------

  const server = container.listen({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  const port = (server.address() as AddressInfo).port;
  const sockets = new Set<import("node:net").Socket>();
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  return {
    port,
    connectionString:
      `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=RootManageSharedAccessKey;` +
      `SharedAccessKey=test-peer-key-not-checked;UseDevelopmentEmulator=true`,
    createQueue(name, queueOptions = {}) {
      if (entities.has(name)) throw new Error(`Queue '${name}' already exists on the test peer.`);
      const make = (path: string): Entity => ({
        path,
        queueName: name,
        lockDurationMs: queueOptions.lockDurationMs ?? 30_000,
        maxDeliveryCount: queueOptions.maxDeliveryCount ?? 10,
        entries: [],
        consumers: new Set(),
      });
      const queue = make(name);
      queue.deadLetter = make(`${name}/$DeadLetterQueue`);
      entities.set(queue.path, queue);
      entities.set(queue.deadLetter.path, queue.deadLetter);
    },
    stats(name) {
      const queue = entities.get(name);
      if (!queue?.deadLetter) throw new Error(`No queue '${name}' on the test peer.`);
      const now = Date.now();
      return {
        active: queue.entries.filter((e) => e.visibleAt <= now).length,
        scheduled: queue.entries.filter((e) => e.visibleAt > now).length,
        locked: queue.entries.filter((e) => e.lock && e.lock.until > now).length,
        deadLettered: queue.deadLetter.entries.length,
      };
    },
    async close() {
      clearInterval(ticker);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The lock token string the SDK derives from a delivery tag. The SDK reorders the first three
 * groups of the tag's bytes (.NET Guid byte order) before formatting it, and sends that string
 * back, as a uuid, in `$management` requests; we key locks by the same string.
 */
function lockTokenOf(tag: Buffer): string {
  const reordered = Buffer.from([tag[3]!, tag[2]!, tag[1]!, tag[0]!, tag[5]!, tag[4]!, tag[7]!, tag[6]!, ...tag.subarray(8)]);
  return rhea.uuid_to_string(reordered);
}

/**
 * Answers a drain request. rhea only writes `drain=true` on a sender's flow while credit remains,
 * but a client that drained while we were using up its credit still waits for a flow with
 * `drain=true` (the SDK waits, then closes its link). So after sending what we have, we always
 * echo the drain: consume the remaining credit and write one flow with `drain=true`.
 */
function installDrainEcho(sender: DrainableSender): void {
  sender._get_drain = function (this: DrainableSender) {
    if (!this._draining || !this._echoDrain) return false;
    this._echoDrain = false;
    this.delivery_count += this.credit;
    this.credit = 0;
    return true;
  };
}

function echoDrain(sender: DrainableSender): void {
  sender._echoDrain = true;
  sender.issue_flow = true;
  sender.connection._register();
}
