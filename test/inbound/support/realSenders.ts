/**
 * Real senders for the handler tests, local and in the wiring tests: a GitHub `push` signed with
 * `@octokit/webhooks-methods` and Stripe invoice events signed with the stripe SDK's test header,
 * and a user's handler module for them written outside the repository (plain JavaScript: no
 * import from the platform), which a test names as INBOUND_HANDLERS or bundles into the functions.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sign as githubSign } from "@octokit/webhooks-methods";
import Stripe from "stripe";

export const GITHUB_SECRET = "It's a Secret to Everybody";
export const STRIPE_SECRET = "whsec_test_secret_for_handler_tests";
export const SENDER_PARTNERS = {
  github: { scheme: "github", secrets: [GITHUB_SECRET] },
  stripe: { scheme: "stripe", secrets: [STRIPE_SECRET] },
};

/**
 * The module: a GitHub push enqueues `repo.pushed` (id `gh-<delivery>`); Stripe invoices move
 * through the user's `invoice` machine, kept by the platform, with no table of their own.
 */
const MODULE = `
export const pushes = {
  name: "github-pushes",
  partners: ["github"],
  events: ["push"],
  async handle({ event, enqueue }) {
    await enqueue({ id: "gh-" + event.id, type: "repo.pushed", data: { ref: event.body.ref, commits: event.body.commits.length } });
  },
};
export const invoices = {
  name: "stripe-invoices",
  partners: ["stripe"],
  machine: {
    name: "invoice",
    states: ["open", "paid"],
    events: { "invoice.created": { from: [null], to: "open" }, "invoice.paid": { from: ["open"], to: "paid" } },
  },
  entityId: (event) => event.body.data?.object?.id,
};
export default [pushes, invoices];
`;

/** Writes the module to a new temp directory; returns its path. */
export function writeSenderHandlers(): string {
  const dir = mkdtempSync(join(tmpdir(), "sender-handlers-"));
  const file = join(dir, "handlers.mjs");
  writeFileSync(file, MODULE);
  return file;
}

export interface SignedRequest { headers: Record<string, string>; body: string }

/** A GitHub push as GitHub sends it (X-GitHub-Event: push, a delivery GUID), signed by octokit. */
export async function githubPush(delivery = randomUUID()): Promise<SignedRequest & { delivery: string }> {
  const body = JSON.stringify({ ref: "refs/heads/main", before: "0".repeat(40), after: "a".repeat(40), commits: [{ id: "a".repeat(40), message: "Fix ✓" }], repository: { full_name: "acme/app" } });
  return {
    delivery,
    body,
    headers: {
      "content-type": "application/json",
      "x-github-event": "push",
      "x-github-delivery": delivery,
      "x-hub-signature-256": await githubSign(GITHUB_SECRET, body),
    },
  };
}

const stripe = new Stripe("sk_test_unused");

/** A Stripe event about an invoice, signed with the SDK's test header. */
export function stripeInvoiceEvent(type: "invoice.created" | "invoice.paid", invoiceId: string, eventId = `evt_${randomUUID().replace(/-/g, "")}`): SignedRequest & { eventId: string } {
  const body = JSON.stringify({ id: eventId, object: "event", type, data: { object: { id: invoiceId, object: "invoice", amount_due: 1200, currency: "eur" } } });
  return {
    eventId,
    body,
    headers: { "content-type": "application/json", "stripe-signature": stripe.webhooks.generateTestHeaderString({ payload: body, secret: STRIPE_SECRET }) },
  };
}
