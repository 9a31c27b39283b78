/**
 * Managed identity endpoint TEST PEER: a local HTTP server playing the token endpoint that Azure
 * Functions / App Service expose to an app with a managed identity (`IDENTITY_ENDPOINT`,
 * `IDENTITY_HEADER`, api-version 2019-08-01). Not the real service, which runs only inside Azure,
 * and no official emulator of it exists; its client is the official one (`@azure/identity`'s
 * `ManagedIdentityCredential`, through MSAL), so what it must accept is what Microsoft's code sends.
 *
 * What it models: `GET <path>?api-version=2019-08-01&resource=<r>[&client_id=<id>]` with the
 * `X-IDENTITY-HEADER` secret; 401 for a missing or wrong secret, 400 for another api-version, a
 * missing resource or a client id of no assigned identity; 200 with `access_token`, `expires_on`
 * (epoch seconds, as a string), `resource`, `token_type`, `client_id`. Tokens are JWT-shaped
 * (unsigned) with the audience, issuer and times Azurite's `--oauth basic` checks, valid an hour.
 * It records every request.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

export interface IdentityRequest {
  resource: string | null;
  clientId: string | null;
  apiVersion: string | null;
  secret: string | undefined;
}

export interface ManagedIdentityTestPeer {
  /** What the platform sets: IDENTITY_ENDPOINT and IDENTITY_HEADER. */
  env: { IDENTITY_ENDPOINT: string; IDENTITY_HEADER: string };
  /** Client id of the user-assigned identity it knows (besides the system-assigned one). */
  userAssignedClientId: string;
  requests: IdentityRequest[];
  close(): Promise<void>;
}

const TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47";
const SYSTEM_ASSIGNED = "5e29463d-71da-4fe0-8e69-999b57db23b0";

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

function seenIn(req: IncomingMessage): IdentityRequest {
  const url = new URL(req.url ?? "/", "http://peer");
  return {
    resource: url.searchParams.get("resource"),
    clientId: url.searchParams.get("client_id"),
    apiVersion: url.searchParams.get("api-version"),
    secret: req.headers["x-identity-header"] as string | undefined,
  };
}

export async function startManagedIdentityTestPeer(): Promise<ManagedIdentityTestPeer> {
  const secret = randomUUID();
  const userAssignedClientId = randomUUID();
  const requests: IdentityRequest[] = [];

  /** What the endpoint answers `req`. */
  const answer = (req: IncomingMessage): { status: number; body: string } => {
    const url = new URL(req.url ?? "/", "http://peer");
    const seen = seenIn(req);
    const error = (status: number, message: string) => ({ status, body: JSON.stringify({ statusCode: status, message, correlationId: randomUUID() }) });
    if (url.pathname !== "/msi/token" || req.method !== "GET") return error(404, "Not found");
    if (seen.secret !== secret) return error(401, "The request is missing or has an invalid X-IDENTITY-HEADER.");
    if (seen.apiVersion !== "2019-08-01") return error(400, `Unsupported api-version ${seen.apiVersion}.`);
    if (!seen.resource) return error(400, "The resource parameter is required.");
    if (seen.clientId && seen.clientId !== userAssignedClientId) return error(400, "Unable to load the proper Managed Identity.");
    const now = Math.floor(Date.now() / 1000);
    const expiresOn = now + 3600;
    const clientId = seen.clientId ?? SYSTEM_ASSIGNED;
    const claims = { aud: seen.resource.replace(/\/$/, ""), iss: `https://sts.windows.net/${TENANT}/`, iat: now, nbf: now - 60, exp: expiresOn, appid: clientId, oid: clientId, tid: TENANT };
    return {
      status: 200,
      body: JSON.stringify({
        access_token: `${b64url({ typ: "JWT", alg: "none" })}.${b64url(claims)}.${Buffer.from(randomUUID()).toString("base64url")}`,
        expires_on: String(expiresOn),
        resource: seen.resource,
        token_type: "Bearer",
        client_id: clientId,
      }),
    };
  };

  const server = createServer((req, res) => {
    requests.push(seenIn(req));
    const { status, body } = answer(req);
    res.writeHead(status, { "content-type": "application/json" }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    env: { IDENTITY_ENDPOINT: `http://127.0.0.1:${port}/msi/token`, IDENTITY_HEADER: secret },
    userAssignedClientId,
    requests,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
