/**
 * A Cloud Storage TEST PEER, not an emulator: no Cloud Storage emulator runs on this machine
 * (Google ships none; fake-gcs-server is not installed here), so this in-process HTTP server
 * answers the JSON-API calls a claim-check makes through `@google-cloud/storage`
 * (shared/objectStore/gcs.ts): a multipart upload (`resumable: false`; a media upload too) and an
 * `alt=media` download. The client is the official SDK, so what the peer must accept is what
 * Google's own code sends; what the peer answers is our reading of the service. It models buckets as in-memory maps and nothing else (no ACLs,
 * generations, resumable uploads, auth).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createHash } from "node:crypto";
import { CRC32C } from "@google-cloud/storage";

export interface GcsTestPeer {
  /** For `new Storage({ apiEndpoint })`. */
  endpoint: string;
  objects: Map<string, Buffer>;
  close(): Promise<void>;
}

function mediaOfMultipart(body: Buffer, contentType: string): Buffer {
  const boundary = /boundary="?([^";]+)"?/.exec(contentType)?.[1];
  if (!boundary) throw new Error("multipart upload without a boundary");
  const text = body.toString("latin1");
  const parts = text.split(`--${boundary}`).slice(1, -1);
  const media = parts[1];
  if (media === undefined) throw new Error("multipart upload without a media part");
  const start = media.indexOf("\r\n\r\n") + 4;
  return Buffer.from(media.slice(start, media.length - 2), "latin1");
}

function crc32cOf(bytes: Buffer): string {
  const crc = new CRC32C();
  crc.update(bytes);
  return crc.toString();
}

export async function startGcsTestPeer(): Promise<GcsTestPeer> {
  const objects = new Map<string, Buffer>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://peer");
      const upload = /^\/upload\/storage\/v1\/b\/([^/]+)\/o$/.exec(url.pathname);
      if (req.method === "POST" && upload) {
        const name = url.searchParams.get("name") ?? "";
        const bytes = url.searchParams.get("uploadType") === "multipart"
          ? mediaOfMultipart(Buffer.concat(chunks), req.headers["content-type"] ?? "")
          : Buffer.concat(chunks);
        let objectName = name;
        if (!objectName) {
          const meta = /\{[^]*?\}/.exec(Buffer.concat(chunks).toString("latin1"))?.[0];
          objectName = meta ? (JSON.parse(meta) as { name: string }).name : "";
        }
        objects.set(`${upload[1]}/${objectName}`, bytes);
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ kind: "storage#object", bucket: upload[1], name: objectName, size: String(bytes.length), generation: "1", md5Hash: createHash("md5").update(bytes).digest("base64"), crc32c: crc32cOf(bytes) }));
        return;
      }
      const download = /^\/(?:download\/)?storage\/v1\/b\/([^/]+)\/o\/(.+)$/.exec(url.pathname);
      if (req.method === "GET" && download) {
        const key = `${download[1]}/${decodeURIComponent(download[2] ?? "")}`;
        const bytes = objects.get(key);
        if (!bytes) {
          res.writeHead(404, { "content-type": "application/json" });
          res.end(JSON.stringify({ error: { code: 404, message: `No such object: ${key}` } }));
          return;
        }
        res.writeHead(200, { "content-type": "application/octet-stream", "content-length": bytes.length, "x-goog-generation": "1" });
        res.end(bytes);
        return;
      }
      res.writeHead(501, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: 501, message: `test peer does not model ${req.method} ${url.pathname}` } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    objects,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
