/**
 * Azurite, Microsoft's Azure Storage emulator (a devDependency), started as a child process on a
 * free port with in-memory storage and its telemetry off (this machine has no internet).
 * With `tls` it serves HTTPS with that certificate and checks bearer tokens (`--oauth basic`:
 * a JWT's audience, issuer and times, not its signature), so managed-identity tokens can be used.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { freePort } from "./freePort.js";

/** Azurite's fixed, public development account key. */
const DEV_ACCOUNT = "devstoreaccount1";
const DEV_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

export interface Azurite {
  connectionString: string;
  /** The account's Blob endpoint (path-style: `http(s)://127.0.0.1:<port>/devstoreaccount1`). */
  blobEndpoint: string;
  stop(): Promise<void>;
}

export interface AzuriteOptions {
  /** PEM files: serve HTTPS and accept OAuth bearer tokens besides Shared Key. */
  tls?: { certPath: string; keyPath: string };
}


/**
 * Starts Azurite on a free port. The port is free when asked but Azurite binds it a moment later:
 * on a busy machine another process may take it meanwhile (EADDRINUSE), so that is retried.
 */
export async function startAzurite(options: AzuriteOptions = {}): Promise<Azurite> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startAzuriteOnce(options);
    } catch (error) {
      if (attempt >= 4 || !/EADDRINUSE/.test((error as Error).message)) throw error;
    }
  }
}

async function startAzuriteOnce(options: AzuriteOptions): Promise<Azurite> {
  const port = await freePort();
  const bin = fileURLToPath(new URL("../../node_modules/azurite/dist/src/blob/main.js", import.meta.url));
  const tls = options.tls ? ["--cert", options.tls.certPath, "--key", options.tls.keyPath, "--oauth", "basic"] : [];
  const child = spawn(process.execPath, [bin, "--blobHost", "127.0.0.1", "--blobPort", String(port), "--inMemoryPersistence", "--disableTelemetry", "--skipApiVersionCheck", "--loose", "--silent", ...tls], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Azurite did not start within 20 s: ${output}`)), 20_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("successfully listens")) { clearTimeout(timer); resolve(); }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("exit", (code) => { clearTimeout(timer); reject(new Error(`Azurite exited with ${code}: ${output}`)); });
  });
  const blobEndpoint = `${options.tls ? "https" : "http"}://127.0.0.1:${port}/${DEV_ACCOUNT}`;
  return {
    connectionString: `DefaultEndpointsProtocol=${options.tls ? "https" : "http"};AccountName=${DEV_ACCOUNT};AccountKey=${DEV_KEY};BlobEndpoint=${blobEndpoint};`,
    blobEndpoint,
    stop: () => new Promise((resolve) => {
      child.removeAllListeners("exit");
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    }),
  };
}
