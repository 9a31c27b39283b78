/** `webhooks subscriptions rotate-secret|public-keys`: a subscription's signing secrets (docs/secrets.md). */
import { UsageError, type Command, type Invocation } from "../command.js";
import { printJson } from "../output.js";

/** `--signature-scheme v1|v1a`, checked here so a typo is a usage error (exit 2), not a 400 from the API. */
export function signatureSchemeOf(inv: Invocation): "v1" | "v1a" | undefined {
  const scheme = inv.values["signature-scheme"] as string | undefined;
  if (scheme === undefined || scheme === "v1" || scheme === "v1a") return scheme;
  throw new UsageError(`--signature-scheme must be v1 (HMAC, whsec_) or v1a (ed25519, whsk_); got ${JSON.stringify(scheme)}.`);
}

export const subscriptionsRotateSecret: Command = {
  name: "subscriptions rotate-secret",
  summary: "Rotate a subscription's signing secret: a new one is generated and put first, the newest current one kept (deliveries carry both signatures). The new one is printed once.",
  usage: "subscriptions rotate-secret <subscription id> [--signature-scheme v1|v1a]",
  help: `Options:
  --signature-scheme <s>  the new secret's kind: v1 (HMAC, whsec_) or v1a (ed25519, whsk_;
                          its receivers verify with \`webhooks subscriptions public-keys\`).
                          Default: like the newest current one.
Call it again once every receiver verifies the new one: the older one is then dropped.

Example (moving a v1 subscription to v1a):
  webhooks subscriptions rotate-secret sub_123 --signature-scheme v1a`,
  options: { "signature-scheme": { type: "string" } },
  positionals: [1, 1],
  async run(inv) {
    const scheme = signatureSchemeOf(inv);
    const sub = await inv.api().POST("/subscriptions/{id}/secrets", { params: { path: { id: inv.positionals[0]! } }, body: scheme ? { signatureScheme: scheme } : {} });
    if (inv.json) inv.io.stdout(printJson(sub));
    else inv.io.stdout(`Rotated ${sub.id}. Keep the new secret: it is not shown again.\nsecrets (newest first): ${(sub.secrets ?? []).join(" ")}\n`);
  },
};

export const subscriptionsPublicKeys: Command = {
  name: "subscriptions public-keys",
  summary: "Show the whpk_ public keys a receiver verifies a subscription's v1a signatures with. Public: safe to hand over.",
  usage: "subscriptions public-keys <subscription id>",
  help: "Newest first (two during a rotation); none for a subscription that signs with v1 (HMAC) only.",
  positionals: [1, 1],
  async run(inv) {
    const r = await inv.api().GET("/subscriptions/{id}/public-keys", { params: { path: { id: inv.positionals[0]! } } });
    if (inv.json) inv.io.stdout(printJson(r));
    else if (r.publicKeys.length === 0) inv.io.stdout(`${r.id} signs with v1 (HMAC) only: it has no public key. Rotate with --signature-scheme v1a to add one.\n`);
    else inv.io.stdout(`${r.publicKeys.join("\n")}\n`);
  },
};
