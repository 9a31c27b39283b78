/**
 * A Standard Webhooks sender that signs only v1a, with tweetnacl (an ed25519 implementation
 * independent of node:crypto): the spec's content `{msg_id}.{timestamp}.{payload}`, the header as
 * the spec writes it. For test/inbound/verify.v1a*.test.ts.
 */
import nacl from "tweetnacl";

export const body = JSON.stringify({ type: "invoice.paid", timestamp: "2025-11-24T16:00:00Z", data: { id: "inv_1", amount: 4200 } });

export const sender = nacl.sign.keyPair.fromSeed(Buffer.alloc(32, 0x2a));
export const other = nacl.sign.keyPair.fromSeed(Buffer.alloc(32, 0x17));
export const whpk = (pair: nacl.SignKeyPair) => `whpk_${Buffer.from(pair.publicKey).toString("base64")}`;

/** tweetnacl signs `${id}.${ts}.${payload}` and writes the header as the spec does. */
export function signedHeaders(opts: { pair?: nacl.SignKeyPair; id?: string; ts: number; payload?: string; signature?: string }) {
  const id = opts.id ?? "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";
  const sig = nacl.sign.detached(Buffer.from(`${id}.${opts.ts}.${opts.payload ?? body}`), (opts.pair ?? sender).secretKey);
  return { "webhook-id": id, "webhook-timestamp": String(opts.ts), "webhook-signature": opts.signature ?? `v1a,${Buffer.from(sig).toString("base64")}` };
}

