/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`, keyed by the webhook
 * secret's text. The event id is `X-GitHub-Delivery`, the type `X-GitHub-Event` plus the body's
 * `action` when it has one (`issues.opened`, `pull_request.closed`; `push` has none). GitHub signs
 * neither a timestamp nor the delivery id, so the tolerance does not apply; de-duplication by
 * delivery id is what stops a replay from being processed twice. The SHA-1 `X-Hub-Signature` is
 * not accepted.
 */
import { isRejection, readHeader, requireHeader } from "./headers.js";
import { decodeStrict, hmac, matchesAny } from "./hmac.js";
import { reject, type SchemeVerifier } from "./types.js";

export const github: SchemeVerifier = {
  checkSignature(partner, headers, rawBody) {
    const header = requireHeader(headers, "x-hub-signature-256", 401, "missing_signature", "set a secret on the GitHub webhook so GitHub signs with SHA-256");
    if (isRejection(header)) return header;
    const signature = header.startsWith("sha256=") ? decodeStrict(header.slice("sha256=".length), "hex") : null;
    if (!signature) return reject(401, "malformed_signature", "The X-Hub-Signature-256 header must be `sha256=<hex>`.");
    // Keyed by the secret's text, as UTF-8 (Buffer.from's default).
    const expected = partner.secrets.map((secret) => hmac("sha256", Buffer.from(secret), [rawBody]));
    if (!matchesAny(expected, [signature])) {
      return reject(401, "signature_mismatch", "X-Hub-Signature-256 does not match this body with any of the partner's current secrets.");
    }
    return null;
  },

  identify(_partner, headers, body) {
    const id = requireHeader(headers, "x-github-delivery", 400, "missing_event_id", "GitHub sends the delivery id there, and it is the event id");
    if (isRejection(id)) return id;
    // Delivery ids are GUIDs; a comma means Node joined two X-GitHub-Delivery headers into one
    // value. The header is not signed, so refuse rather than store a made-up id.
    if (id.includes(",")) return reject(400, "ambiguous_header", "The X-GitHub-Delivery header was sent more than once; send it exactly once.");
    // Event names are words (`pull_request`): a comma, like an array, is the header sent twice.
    const type = readHeader(headers, "x-github-event");
    if ("ambiguous" in type || ("value" in type && type.value.includes(","))) {
      return reject(400, "ambiguous_header", "The X-GitHub-Event header was sent more than once; send it exactly once.");
    }
    // The action says what happened to the object (issue 16): `issues` alone would not tell opened from closed.
    const action = typeof body.action === "string" && /^[A-Za-z0-9_-]{1,64}$/.test(body.action) ? body.action : undefined;
    return { id, idSource: "header X-GitHub-Delivery", type: "value" in type ? (action ? `${type.value}.${action}` : type.value) : null };
  },
};
