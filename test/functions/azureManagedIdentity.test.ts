/**
 * Our managed-identity `TokenCredential` (shared/cloud/azureManagedIdentity.ts) against the
 * identity endpoint test peer (test/support/managedIdentityTestPeer.ts), and the Blob claim-check
 * client authenticated with its tokens on Azurite over HTTPS with `--oauth basic` (which checks
 * each token's audience, issuer and times), as the functions run in Azure.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { globalAgent } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AbortError, ManagedIdentityCredential, ManagedIdentityError, resourceOf } from "../../shared/cloud/azureManagedIdentity.js";
import { httpRequest } from "../../shared/cloud/httpRequest.js";
import { BLOB_API_VERSION, createAzureBlobStore } from "../../shared/objectStore/azureBlob.js";
import { sharedKeyAuthorization } from "../../shared/objectStore/azureSharedKey.js";
import { ClaimCheckError } from "../../shared/objectStore/port.js";
import { openBlobClaimChecks, openServiceBusQueue } from "../../functions/azure/connections.js";
import { readAzureSettings } from "../../functions/azure/runtime.js";
import { startAzurite, type Azurite } from "../support/azurite.js";
import { startManagedIdentityTestPeer, type ManagedIdentityTestPeer } from "../support/managedIdentityTestPeer.js";
import { eventually } from "./support.js";
import { failure } from "../support/failures.js";

const SERVICE_BUS = "https://servicebus.azure.net//.default";
const STORAGE = "https://storage.azure.com/.default";

let peer: ManagedIdentityTestPeer;
beforeAll(async () => { peer = await startManagedIdentityTestPeer(); });
afterAll(async () => { await peer?.close(); });
afterEach(() => { peer.releaseHeld(); peer.requests.length = 0; peer.tokenLifetimeSeconds = 3600; });


const credential = (options: ConstructorParameters<typeof ManagedIdentityCredential>[0] = {}) =>
  new ManagedIdentityCredential({ env: peer.env, retryDelayMs: 1, ...options });

describe("ManagedIdentityCredential on the identity endpoint test peer", () => {
  it("asks for the scope's resource with the header and api-version, and returns the token with its expiry", async () => {
    const before = Date.now();
    const token = await credential().getToken(SERVICE_BUS);
    expect(peer.requests).toEqual([{ resource: "https://servicebus.azure.net/", clientId: null, apiVersion: "2019-08-01", secret: peer.env.IDENTITY_HEADER }]);
    expect(token.token.split(".")).toHaveLength(3);
    expect(token.expiresOnTimestamp).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 3600_000);
    expect(token.expiresOnTimestamp).toBeLessThanOrEqual(Date.now() + 3600_000);
  });

  it("sends the user-assigned identity's client id", async () => {
    await credential({ clientId: peer.userAssignedClientId }).getToken([STORAGE]);
    expect(peer.requests).toEqual([expect.objectContaining({ resource: "https://storage.azure.com", clientId: peer.userAssignedClientId })]);
  });

  it("caches per resource; inside the refresh margin returns the held token at once and renews it behind", async () => {
    let now = Date.now();
    const c = credential({ now: () => now, refreshMarginMs: 300_000 });
    const [a, b] = await Promise.all([c.getToken(SERVICE_BUS), c.getToken(SERVICE_BUS)]);
    expect(a).toBe(b);
    expect(peer.requests).toHaveLength(1);
    now = a.expiresOnTimestamp - 300_001; // just before the margin: still the held token
    expect(await c.getToken(SERVICE_BUS)).toBe(a);
    await c.getToken(STORAGE); // another resource: its own token
    expect(peer.requests.map((r) => r.resource)).toEqual(["https://servicebus.azure.net/", "https://storage.azure.com"]);
    now = a.expiresOnTimestamp - 299_999; // inside the margin: the held token, and one renewal
    peer.tokenLifetimeSeconds = 7200; // so the renewed token is outside the margin at this `now`
    const [c1, c2] = await Promise.all([c.getToken(SERVICE_BUS), c.getToken(SERVICE_BUS)]);
    expect(c1).toBe(a);
    expect(c2).toBe(a);
    await eventually("the renewed token", async () => (await c.getToken(SERVICE_BUS)) !== a);
    expect(peer.requests).toHaveLength(3);
  });

  it("returns the held token while the endpoint hangs on its renewal", async () => {
    let now = Date.now();
    const c = credential({ now: () => now, timeoutMs: 60_000 });
    const held = await c.getToken(SERVICE_BUS);
    now = held.expiresOnTimestamp - 60_000;
    peer.holdNext(1);
    expect(await c.getToken(SERVICE_BUS)).toBe(held);
    await eventually("the renewal to reach the endpoint", async () => peer.heldCount() === 1);
    expect(await c.getToken(SERVICE_BUS)).toBe(held); // joins the renewal in flight: no second request
    expect(peer.requests).toHaveLength(2);
    peer.tokenLifetimeSeconds = 7200;
    peer.releaseHeld();
    await eventually("the renewed token", async () => (await c.getToken(SERVICE_BUS)) !== held);
  });

  it("keeps using a still-valid token when a renewal fails, and waits out a back-off before the next", async () => {
    let now = Date.now();
    const c = credential({ now: () => now, failureBackoffMs: 10_000 });
    const held = await c.getToken(SERVICE_BUS);
    now = held.expiresOnTimestamp - 120_000; // due for renewal, still valid for two minutes
    peer.failNext(3, 503, JSON.stringify({ message: "busy" }));
    expect(await c.getToken(SERVICE_BUS)).toBe(held);
    await eventually("the renewal's three tries", async () => peer.requests.length === 4);
    now += 5_000; // within the back-off (or still recording the failure): the held token, no request
    expect(await c.getToken(SERVICE_BUS)).toBe(held);
    expect(peer.requests).toHaveLength(4);
    // A second a poll: once the back-off is over, one renewal behind the held token.
    peer.tokenLifetimeSeconds = 7200;
    await eventually("a renewal after the back-off", async () => { now += 1_000; return (await c.getToken(SERVICE_BUS)) !== held; });
    expect(peer.requests).toHaveLength(5);
  });

  it("without a valid token the caller gets the failure, and within the back-off the same failure at once", async () => {
    let now = Date.now();
    const c = credential({ now: () => now, failureBackoffMs: 10_000 });
    const held = await c.getToken(SERVICE_BUS);
    now = held.expiresOnTimestamp + 1; // expired
    peer.failNext(3, 503, JSON.stringify({ message: "busy" }));
    await expect(c.getToken(SERVICE_BUS)).rejects.toThrow(/answered 503 .*busy\. The endpoint is the platform's; retry later\.$/);
    expect(peer.requests).toHaveLength(4);
    now += 1_000;
    const error = await failure(c.getToken(SERVICE_BUS));
    expect(error).toBeInstanceOf(ManagedIdentityError);
    expect(error).toMatchObject({ status: 503, message: expect.stringMatching(/answered 503 .*busy.*\(Failed 1 s ago; the endpoint is asked again in 9 s\.\)$/) });
    expect(peer.requests).toHaveLength(4);
    now += 9_000; // the back-off is over: asked again
    const renewed = await c.getToken(SERVICE_BUS);
    expect(renewed).not.toBe(held);
    expect(peer.requests).toHaveLength(5);
  });

  it("a hanging endpoint and no token held: the caller waits three request deadlines at most, then fails saying so", async () => {
    const c = credential({ timeoutMs: 200 });
    peer.holdNext(3);
    const error = await failure(c.getToken(SERVICE_BUS));
    expect(error).toBeInstanceOf(ManagedIdentityError);
    expect(error.message).toMatch(/did not answer a token request .*no complete answer within 200 ms/);
    expect(peer.requests).toHaveLength(3);
  });

  it("one caller's abort rejects only its own wait, with an AbortError; the shared request goes on", async () => {
    const c = credential({ timeoutMs: 60_000 });
    const early = new AbortController();
    early.abort();
    await expect(c.getToken(SERVICE_BUS, { abortSignal: early.signal })).rejects.toBeInstanceOf(AbortError);
    expect(peer.requests).toHaveLength(0);

    peer.holdNext(1);
    const quitter = new AbortController();
    const patient = new AbortController();
    const first = c.getToken(SERVICE_BUS, { abortSignal: quitter.signal });
    const second = c.getToken(SERVICE_BUS, { abortSignal: patient.signal });
    const third = c.getToken(SERVICE_BUS);
    await eventually("the shared request to reach the endpoint", async () => peer.heldCount() === 1);
    quitter.abort();
    const aborted = await failure(first);
    expect(aborted).toBeInstanceOf(AbortError);
    expect(aborted).toMatchObject({ name: "AbortError", message: "The token request for https://servicebus.azure.net/ was aborted by its caller." });
    peer.releaseHeld();
    const [t2, t3] = await Promise.all([second, third]);
    expect(t2).toBe(t3);
    expect(peer.requests).toHaveLength(1); // the abort was not a failure to retry
    expect(await c.getToken(SERVICE_BUS)).toBe(t2); // and the token was kept
  });

  it("retries 429 and 5xx twice, then says which endpoint answered what", async () => {
    peer.failNext(2, 500, JSON.stringify({ message: "internal" }));
    expect((await credential().getToken(SERVICE_BUS)).token).toBeTruthy();
    expect(peer.requests).toHaveLength(3);
    peer.requests.length = 0;
    peer.failNext(3, 429, JSON.stringify({ message: "slow down" }));
    const error = await failure(credential().getToken(SERVICE_BUS));
    expect(error).toBeInstanceOf(ManagedIdentityError);
    expect(error).toMatchObject({ status: 429, message: expect.stringMatching(/IDENTITY_ENDPOINT\) answered 429 .*slow down/) });
    expect(peer.requests).toHaveLength(3);
  });

  it("names the client id setting when the identity is not assigned, without retrying", async () => {
    const error = await failure(credential({ clientId: "00000000-0000-0000-0000-000000000000", clientIdSetting: "ServiceBusConnection__clientId" }).getToken(SERVICE_BUS));
    expect(error).toBeInstanceOf(ManagedIdentityError);
    expect((error as Error).message).toMatch(/answered 400 .*Unable to load the proper Managed Identity.*Check that ServiceBusConnection__clientId is the client id of an identity assigned/);
    expect(peer.requests).toHaveLength(1);
  });

  it("says the endpoint refused IDENTITY_HEADER, and never repeats the header's value", async () => {
    const wrong = "not-the-secret-0123456789";
    const error = await failure(new ManagedIdentityCredential({ env: { ...peer.env, IDENTITY_HEADER: wrong } }).getToken(SERVICE_BUS));
    expect((error as Error).message).toMatch(/answered 401 .*refused IDENTITY_HEADER/);
    expect((error as Error).message).not.toContain(wrong);
    expect((error as Error).message).not.toContain(peer.env.IDENTITY_HEADER);
  });

  it("refuses to start without IDENTITY_ENDPOINT or IDENTITY_HEADER, naming them", () => {
    expect(() => new ManagedIdentityCredential({ env: {} })).toThrow(/IDENTITY_ENDPOINT and IDENTITY_HEADER are not set/);
    expect(() => new ManagedIdentityCredential({ env: { IDENTITY_ENDPOINT: peer.env.IDENTITY_ENDPOINT } })).toThrow(/: IDENTITY_HEADER is not set/);
    expect(() => new ManagedIdentityCredential({ env: { ...peer.env, IDENTITY_ENDPOINT: "not a url" } })).toThrow(/IDENTITY_ENDPOINT is not a URL/);
  });

  it("reports an endpoint that does not answer", async () => {
    const closed = await startManagedIdentityTestPeer();
    await closed.close();
    const c = new ManagedIdentityCredential({ env: closed.env, retryDelayMs: 1 });
    await expect(c.getToken(SERVICE_BUS)).rejects.toThrow(/IDENTITY_ENDPOINT, http:\/\/127\.0\.0\.1:\d+\/msi\/token\) did not answer .*ECONNREFUSED/);
  });

  it("refuses a 200 that is not JSON, has no token, or no readable expiry, without quoting the body", async () => {
    peer.failNext(1, 200, "<html>login</html>");
    await expect(credential().getToken(SERVICE_BUS)).rejects.toThrow(/answered 200 with a body that is not JSON/);
    peer.failNext(1, 200, JSON.stringify({ expires_on: "1" }));
    await expect(credential().getToken(SERVICE_BUS)).rejects.toThrow(/answered 200 without an access_token/);
    peer.failNext(1, 200, JSON.stringify({ access_token: "secret-token-value", expires_on: "soon" }));
    const error = await failure(credential().getToken(SERVICE_BUS));
    expect(error.message).toMatch(/without a readable expires_on/);
    expect(error.message).not.toContain("secret-token-value");
  });

  it("accepts expires_on as an ISO date, and one scope only", async () => {
    const at = new Date(Date.now() + 3_000_000);
    peer.failNext(1, 200, JSON.stringify({ access_token: "t", expires_on: at.toISOString() }));
    expect((await credential().getToken(SERVICE_BUS)).expiresOnTimestamp).toBe(at.getTime());
    expect(() => resourceOf([SERVICE_BUS, STORAGE])).toThrow(ManagedIdentityError);
    expect(resourceOf("https://vault.azure.net")).toBe("https://vault.azure.net");
  });
});

// ---- Blob claim-checks with bearer tokens, on Azurite over HTTPS ---------------------------------
let azurite: Azurite | undefined;
let certDir: string | undefined;
let skipTls: string | undefined;
const savedCa = globalAgent.options.ca;

describe("Blob claim-checks with managed identity tokens on Azurite (HTTPS, --oauth basic)", () => {
  beforeAll(async () => {
    certDir = await mkdtemp(join(tmpdir(), "azurite-tls-"));
    const certPath = join(certDir, "cert.pem");
    const keyPath = join(certDir, "key.pem");
    try {
      await promisify(execFile)("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
        "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", keyPath, "-out", certPath]);
    } catch (error) {
      if (process.env.CI && process.env.CI !== "false") throw error;
      skipTls = `openssl could not make a certificate (${(error as Error).message})`;
      console.warn(`\n!!! ${skipTls}: the Blob bearer-token tests are SKIPPED.\n`);
      return;
    }
    azurite = await startAzurite({ tls: { certPath, keyPath } });
    // Our client goes through node:https's global agent: trust the test certificate there.
    globalAgent.options.ca = await readFile(certPath);
    // Setup only: create the container with a Shared Key request (the signing the Azurite contract tests check).
    const key = /AccountKey=([^;]+)/.exec(azurite.connectionString)![1]!;
    const url = new URL(`${azurite.blobEndpoint}/claim-checks?restype=container`);
    const headers: Record<string, string> = { "x-ms-date": new Date().toUTCString(), "x-ms-version": BLOB_API_VERSION, "content-length": "0" };
    headers.authorization = sharedKeyAuthorization("devstoreaccount1", key, "PUT", url, headers);
    const created = await httpRequest(url.href, { method: "PUT", headers, body: "" });
    expect(created.status).toBe(201);
  }, 60_000);

  afterAll(async () => {
    globalAgent.options.ca = savedCa;
    await azurite?.stop();
    if (certDir) await rm(certDir, { recursive: true, force: true });
  });

  it("stores and reads back bytes with a token for https://storage.azure.com", async (t) => {
    if (skipTls) return t.skip();
    const store = await createAzureBlobStore({ container: "claim-checks", accountUrl: azurite!.blobEndpoint, credential: credential({ clientId: peer.userAssignedClientId }) });
    const bytes = Buffer.from(JSON.stringify({ id: "evt_mi", note: "y".repeat(300 * 1024) }));
    const reference = await store.put("inbound/shop/evt_mi", bytes, "application/json");
    expect(reference).toBe("azblob://claim-checks/inbound/shop/evt_mi");
    expect((await store.get(reference)).equals(bytes)).toBe(true);
    expect(peer.requests).toEqual([expect.objectContaining({ resource: "https://storage.azure.com", clientId: peer.userAssignedClientId })]);
  });

  it("is refused by Blob Storage with a token for another audience, and says what to check", async (t) => {
    if (skipTls) return t.skip();
    const wrongAudience = { getToken: () => credential().getToken("https://vault.azure.net/.default") };
    const store = await createAzureBlobStore({ container: "claim-checks", accountUrl: azurite!.blobEndpoint, credential: wrongAudience });
    const error = await failure(store.put("inbound/shop/evt_x", Buffer.from("{}")));
    expect(error).toBeInstanceOf(ClaimCheckError);
    expect(error.message).toMatch(/^Put Blob claim-checks\/inbound\/shop\/evt_x: Blob Storage answered 403 AuthenticationFailed .*"Storage Blob Data Contributor" role/);
  });

  it("a token it cannot get fails the put as a ClaimCheckError that says so", async (t) => {
    if (skipTls) return t.skip();
    const store = await createAzureBlobStore({ container: "claim-checks", accountUrl: azurite!.blobEndpoint, credential: credential({ clientId: "11111111-1111-1111-1111-111111111111", clientIdSetting: "AZURE_CLIENT_ID" }) });
    const error = await failure(store.put("inbound/shop/evt_nt", Buffer.from("{}")));
    expect(error).toBeInstanceOf(ClaimCheckError);
    expect(error.message).toMatch(/^Put Blob claim-checks\/inbound\/shop\/evt_nt at https:\/\/127\.0\.0\.1:\d+\/devstoreaccount1: no token for Blob Storage \(.*answered 400 .*Check that AZURE_CLIENT_ID/);
  });

  it("the functions' claim-check settings with an account URL use the managed identity (AZURE_CLIENT_ID)", async (t) => {
    if (skipTls) return t.skip();
    const saved = { ...process.env };
    Object.assign(process.env, peer.env);
    try {
      const settings = readAzureSettings({ WEBHOOKS_QUEUE_NAME: "q", WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL: azurite!.blobEndpoint, AZURE_CLIENT_ID: peer.userAssignedClientId });
      const store = await openBlobClaimChecks(settings);
      const reference = await store!.put("inbound/shop/evt_settings", Buffer.from("{}"));
      expect((await store!.get(reference)).toString()).toBe("{}");
      expect(peer.requests[0]).toMatchObject({ clientId: peer.userAssignedClientId });
    } finally {
      for (const key of Object.keys(peer.env)) if (saved[key] === undefined) delete process.env[key];
    }
  });

  it("without the platform's identity variables the claim-check store cannot open, and says why", async () => {
    const settings = readAzureSettings({ WEBHOOKS_QUEUE_NAME: "q", WEBHOOKS_CLAIM_CHECK_ACCOUNT_URL: "https://acct.blob.core.windows.net" });
    await expect(openBlobClaimChecks(settings)).rejects.toThrow(/IDENTITY_ENDPOINT and IDENTITY_HEADER are not set/);
  });
});

describe("the Service Bus connector with managed identity", () => {
  const settings = () => readAzureSettings({ WEBHOOKS_QUEUE_NAME: "inbound", ServiceBusConnection__fullyQualifiedNamespace: "webhooks-ns.servicebus.windows.net", ServiceBusConnection__clientId: peer.userAssignedClientId });

  it("opens the queue with our credential when the platform's identity variables are set", async () => {
    const saved = { ...process.env };
    Object.assign(process.env, peer.env);
    try {
      const queue = await openServiceBusQueue(settings()); // connects on first use, not here
      expect(queue.name).toBe("servicebus");
      await queue.close();
    } finally {
      for (const key of Object.keys(peer.env)) if (saved[key] === undefined) delete process.env[key];
    }
  });

  it("without them, fails the cold start naming IDENTITY_ENDPOINT and IDENTITY_HEADER", async () => {
    await expect(openServiceBusQueue(settings())).rejects.toThrow(/Managed identity is not available: IDENTITY_ENDPOINT and IDENTITY_HEADER are not set/);
  });
});
