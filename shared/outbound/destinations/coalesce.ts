/**
 * Send coalescing for queue destinations (issue 31): the attempts that reach one destination
 * client in the same turn of the event loop go out together, in as few calls as the service's
 * batch limits allow (SendMessageBatch, PublishBatch, PutEvents: 10 messages, 256 KiB; a Service
 * Bus batch; RabbitMQ publishes written in one pass). The relay starts a subscription's attempts
 * in bursts (a claim's deliveries, the completions one answer frees), so a burst costs one call
 * instead of one per message. Nothing waits on a clock for company: the group is sent at
 * `setImmediate`, right after the turn that queued it, so a lone message goes out as soon as it
 * did alone (and by the client's one-message call, as before).
 *
 * What each attempt keeps:
 * - its own outcome: a refused entry fails only its message, classified on its own; a call that
 *   failed as a whole fails every message in it;
 * - its own deadline: one timer per attempt; past it the attempt is a `timeout` (the service may
 *   have taken it: at least once). The call is aborted once every message in it has timed out.
 * - order: messages of one ordering key are never in one call nor in flight together; the relay
 *   already sends a key one message at a time, and this holds even if a caller did not.
 */
import { DestinationSendError, type DestinationClient, type DestinationMessage, type SendFailure } from "./message.js";

type Client = DestinationClient & { classify(error: unknown): SendFailure };

export interface Coalescer {
  /** Sends `message` with the next group; resolves with null (the service took it) or its failure. Never rejects. */
  send(message: DestinationMessage, deadlineMs: number): Promise<SendFailure | null>;
}

interface Entry {
  message: DestinationMessage;
  size: number;
  settle(failure: SendFailure | null): void;
  settled: boolean;
  /** The call it went out in, once sent. */
  call: Call | null;
}

interface Call {
  abort: AbortController;
  /** Its messages still waiting for an answer (not timed out). */
  waiting: number;
}

/** @param label the destination's kind, for the timeout's message. */
export function createCoalescer(client: Client, label: string): Coalescer {
  const limits = client.sendBatch ? client.batch : undefined;
  let queued: Entry[] = [];
  let scheduled = false;
  /** Ordering keys with a message queued or in flight → their next messages, held until it settles. */
  const keys = new Map<string, Entry[]>();

  const failureOf = (error: unknown): SendFailure => (error instanceof DestinationSendError ? error.failure : client.classify(error));

  const enqueue = (entry: Entry) => {
    queued.push(entry);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };

  const release = (key: string) => {
    const held = keys.get(key);
    let next = held?.shift();
    while (next?.settled) next = held!.shift(); // timed out while held: not sent
    if (next) enqueue(next);
    else keys.delete(key);
  };

  const dispatch = (group: Entry[]) => {
    const call: Call = { abort: new AbortController(), waiting: group.length };
    for (const entry of group) entry.call = call;
    const sent = group.length === 1
      ? client.send(group[0]!.message, call.abort.signal).then(() => [null])
      : client.sendBatch!(group.map((e) => e.message), call.abort.signal);
    sent.then(
      (results) => group.forEach((entry, i) => entry.settle(results[i] ?? null)),
      (error: unknown) => {
        const failure = failureOf(error);
        for (const entry of group) entry.settle(failure);
      },
    );
  };

  function flush() {
    scheduled = false;
    const entries = queued.filter((e) => !e.settled);
    queued = [];
    let group: Entry[] = [];
    let bytes = 0;
    for (const entry of entries) {
      if (!limits || (limits.shares && !limits.shares(entry.message))) {
        dispatch([entry]);
        continue;
      }
      if (group.length > 0 && (group.length >= limits.maxMessages || bytes + entry.size > limits.maxBytes)) {
        dispatch(group);
        group = [];
        bytes = 0;
      }
      group.push(entry);
      bytes += entry.size;
    }
    if (group.length > 0) dispatch(group);
  }

  return {
    send(message, deadlineMs) {
      return new Promise<SendFailure | null>((resolve) => {
        const entry: Entry = {
          message,
          size: limits ? limits.sizeOf(message) : 0,
          settled: false,
          call: null,
          settle(failure) {
            if (entry.settled) return;
            entry.settled = true;
            clearTimeout(timer);
            if (message.orderingKey !== null) release(message.orderingKey);
            resolve(failure);
          },
        };
        const timer = setTimeout(() => {
          const call = entry.call;
          entry.settle(client.classify(Object.assign(new Error(`no answer from the ${label} destination within ${deadlineMs} ms`), { name: "AttemptTimeout" })));
          // Nobody waits for the call any more: abort it (the SDKs stop and free its socket).
          if (call && --call.waiting === 0) call.abort.abort();
        }, deadlineMs);
        const key = message.orderingKey;
        if (key !== null) {
          const held = keys.get(key);
          if (held) return void held.push(entry);
          keys.set(key, []);
        }
        enqueue(entry);
      });
    },
  };
}
