/**
 * What a cloud's deploy guide (docs/deploy-<cloud>.md) tells a newcomer to do for "a first
 * delivered webhook", read from the guide itself so the wiring tests run the sequence as written:
 * the handler module step 3 builds the functions with, the subscription step 6 creates first, and
 * the partner event it signs and posts. A guide that no longer says one of these fails here,
 * naming what it lacks, rather than the test quietly running something else.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Cloud } from "../../../stacks/artifacts.js";
import type { Received } from "./receivers.js";

export interface GuideSequence {
  /** `INBOUND_HANDLERS=<module>` of step 3's build command, relative to the repository. */
  handlersModule: string;
  /** The `--event` pattern of step 6's `webhooks subscriptions create`. */
  subscribedPattern: string;
  /** The partner the snippet posts as (`.replace("{partner}", "shop")`). */
  partner: string;
  /** The body the snippet signs (its `JSON.stringify({…})`), as the exact text it posts. */
  inboundBody: string;
}

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

function section(text: string, heading: RegExp, file: string): string {
  const parts = text.split(/\n(?=## )/);
  const found = parts.find((p) => heading.test(p.split("\n")[0]!));
  if (!found) throw new Error(`${file} has no section ${heading}`);
  return found;
}

function match(text: string, pattern: RegExp, what: string, file: string): RegExpExecArray {
  const m = pattern.exec(text);
  if (!m) throw new Error(`${file} does not say ${what} (looked for ${pattern})`);
  return m;
}

export function deployGuideSequence(cloud: Cloud): GuideSequence {
  const file = `docs/deploy-${cloud}.md`;
  const text = readFileSync(`${ROOT}${file}`, "utf8");
  const build = section(text, /^## 3\. Build and deploy/, file);
  const handlersModule = match(build, /INBOUND_HANDLERS=(\S+) npm run build:functions && npm run deploy -- (\w+)/, "step 3's build with a handler module", file);
  if (handlersModule[2] !== cloud) throw new Error(`${file} step 3 deploys ${handlersModule[2]}, not ${cloud}`);
  const first = section(text, /^## 6\. A first delivered webhook/, file);
  const create = match(first, /webhooks subscriptions create [^\n]*--event '([^']+)'/, "step 6's subscriptions create --event", file);
  const snippet = match(first, /const body = JSON\.stringify\((\{[^\n]*\})\);/, "step 6's signed body", file);
  // The subscription must come before the event: an outbound event goes to the subscriptions that
  // exist when it is enqueued, so the other order would deliver nothing.
  if (create.index > snippet.index) throw new Error(`${file} step 6 posts the inbound event before creating the subscription that should receive its outbound event`);
  const partner = match(first, /\.replace\("\{partner\}", "([^"]+)"\)/, "the partner the snippet posts as", file)[1]!;
  // The guide's object literal, evaluated as the snippet's node would (our own docs, in a test).
  const body = JSON.stringify(new Function(`return (${snippet[1]});`)() as unknown);
  return { handlersModule: handlersModule[1]!, subscribedPattern: create[1]!, partner, inboundBody: body };
}

/**
 * The outbound event the guide's partner event causes with the sample order domain: the order's
 * new state, named after the inbound type's transition (`order.created` → state `created`), and
 * its cause. What step 6 says the subscriber receives.
 */
export function outboundCausedBy(guide: GuideSequence): { type: string; data: Record<string, unknown> } {
  const sent = JSON.parse(guide.inboundBody) as { type: string; data: { order_id: string } };
  const state = sent.type.replace(/^order\./, "");
  return { type: `order.${state}`, data: { order_id: sent.data.order_id, state, cause: { partner: guide.partner } } };
}

/** Runs the relay (up to five times) until `path` received something; what it received there. */
export async function relayUntilReceived(path: string, received: Received[], relayTick: () => Promise<unknown>): Promise<Received[]> {
  for (let i = 0; i < 5 && !received.some((r) => r.path === path); i++) await relayTick();
  return received.filter((r) => r.path === path);
}
