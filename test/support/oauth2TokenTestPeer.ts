/**
 * An OAuth 2.0 token endpoint for tests (RFC 6749 §4.4, client credentials) on 127.0.0.1, with
 * the bearer check a receiver behind an API gateway would make.
 *
 * What it models: `POST /token` with `grant_type=client_credentials`, the client authenticated by
 * HTTP Basic (client_secret_basic) or by client_id/client_secret in the form; answers
 * `{access_token, token_type: "Bearer", expires_in}` with tokens that expire after `expiresIn`
 * seconds; a wrong client gets 401 `{"error":"invalid_client"}` (§5.2), another grant type 400
 * `unsupported_grant_type`; `down` makes it answer 503, `close()` makes it refuse connections.
 * `revoke` ends a token before its expiry (the case a 401 from the endpoint reports).
 * Every token request is recorded (when, which client, scope, audience, what was answered).
 *
 * What it does not model: refresh tokens, JWT access tokens or signatures, scope validation
 * (scopes and audience are recorded, not checked), other grant types, PKCE, token introspection
 * or revocation endpoints, mTLS-bound tokens (RFC 8705), rate limiting, clock skew between hosts.
 */
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface TokenRequestRecord {
  at: number;
  clientId: string | null;
  /** Whether the client authenticated (right id and secret). */
  accepted: boolean;
  scope: string | null;
  audience: string | null;
  status: number;
  token: string | null;
}

export interface Oauth2TokenTestPeer {
  /** `http://127.0.0.1:<port>/token` */
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  /** Lifetime of tokens issued from now on, seconds. */
  expiresIn: number;
  /** When true, every token request gets 503. */
  down: boolean;
  readonly requests: TokenRequestRecord[];
  /** Tokens issued (successful requests), in order. */
  readonly issued: { token: string; at: number; expiresAt: number }[];
  /** Whether an `Authorization` header value carries a token issued here, unexpired and not revoked. */
  accepts(authorization: string | undefined): boolean;
  revoke(token: string): void;
  /** Stops listening: token requests then fail with connection refused. */
  close(): Promise<void>;
}

export async function startOauth2TokenTestPeer(options: { clientId?: string; clientSecret?: string; expiresIn?: number } = {}): Promise<Oauth2TokenTestPeer> {
  const live = new Map<string, number>(); // token → expires at (ms)
  const peer: Oauth2TokenTestPeer = {
    tokenUrl: "",
    clientId: options.clientId ?? "relay-client",
    clientSecret: options.clientSecret ?? `cs-${randomBytes(12).toString("hex")}`,
    expiresIn: options.expiresIn ?? 3600,
    down: false,
    requests: [],
    issued: [],
    accepts(authorization) {
      const m = /^Bearer (\S+)$/.exec(authorization ?? "");
      const expiresAt = m ? live.get(m[1]!) : undefined;
      return expiresAt !== undefined && Date.now() < expiresAt;
    },
    revoke(token) {
      live.delete(token);
    },
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const form = new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
      let clientId = form.get("client_id");
      let secret = form.get("client_secret");
      const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? "");
      if (basic) {
        const decoded = Buffer.from(basic[1]!, "base64").toString("utf8");
        const colon = decoded.indexOf(":");
        const unform = (s: string) => decodeURIComponent(s.replace(/\+/g, " "));
        clientId = unform(decoded.slice(0, colon));
        secret = unform(decoded.slice(colon + 1));
      }
      const accepted = clientId === peer.clientId && secret === peer.clientSecret;
      const answer = (status: number, body: unknown, token: string | null = null) => {
        peer.requests.push({ at: Date.now(), clientId, accepted, scope: form.get("scope"), audience: form.get("audience"), status, token });
        res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" });
        res.end(JSON.stringify(body));
      };
      if (req.method !== "POST" || req.url !== "/token") return answer(404, { error: "not_found" });
      if (peer.down) return answer(503, { error: "temporarily_unavailable" });
      if (form.get("grant_type") !== "client_credentials") return answer(400, { error: "unsupported_grant_type" });
      if (!accepted) return answer(401, { error: "invalid_client", error_description: "client authentication failed" });
      const token = `at-${peer.issued.length + 1}-${randomBytes(16).toString("base64url")}`;
      const at = Date.now();
      const expiresAt = at + peer.expiresIn * 1000;
      live.set(token, expiresAt);
      peer.issued.push({ token, at, expiresAt });
      answer(200, { access_token: token, token_type: "Bearer", expires_in: peer.expiresIn }, token);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  peer.tokenUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
  return peer;
}
