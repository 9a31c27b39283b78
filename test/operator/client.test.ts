/**
 * Issue 32 must-show 3: the typed client (shared/client/) is the API's. Its committed types are
 * what openapi-typescript makes of the document the platform serves, regenerated here and
 * compared, so a route, a parameter or a field changed without `npm run generate:client` fails
 * this test (and, through the types, `tsc` wherever the CLI or the admin page's client.ts calls
 * it); the admin page's bundle of those calls (client.js) is rebuilt and compared too. The
 * package, packed as `npm pack` packs it, is then used as a consumer would against a running
 * platform.
 *
 * One backend: nothing here depends on the database's kind; the operations themselves are
 * checked on both in test/operator/openapi.test.ts.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { managementDocument } from "../../shared/client/document.js";
import { ADMIN_CLIENT_FILE, adminClientBundle } from "../../shared/admin/buildClient.js";
import { generatedSchema, REGENERATE_COMMAND, SCHEMA_FILE } from "../../shared/client/generate.js";
import { openTestDatabase } from "../support/databases.js";
import { startTestPlatform, type TestPlatform } from "./harness.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CLIENT = join(ROOT, "shared/client");
// Asynchronous: the platform answering the consumer runs in this process.
const run = promisify(execFile);

/** The first line where two texts part, to point at the drift. */
function firstDifference(committed: string, generated: string): string {
  const a = committed.split("\n");
  const b = generated.split("\n");
  const line = a.findIndex((text, i) => text !== b[i]);
  const at = line === -1 ? a.length : line;
  return `line ${at + 1}: committed ${JSON.stringify(a[at] ?? "<end of file>")}, generated ${JSON.stringify(b[at] ?? "<end of file>")}`;
}

describe("the typed client", () => {
  let t: TestPlatform;
  let closeDb: () => Promise<void>;
  beforeAll(async () => {
    const opened = await openTestDatabase("pglite");
    closeDb = opened.close;
    t = await startTestPlatform(opened.db, {}, { workers: false });
  }, 120_000);
  afterAll(async () => {
    await t?.stop();
    await closeDb?.();
  });

  it("is generated from the document the platform serves at /openapi.json", async () => {
    const served = await (await fetch(`${t.baseUrl}/openapi.json`)).json();
    expect(await managementDocument()).toEqual(served);
  });

  it(`matches the API as it is now (else: run \`${REGENERATE_COMMAND}\` and commit shared/client/schema.ts)`, async () => {
    const committed = readFileSync(SCHEMA_FILE, "utf8");
    const generated = await generatedSchema();
    const same = committed === generated;
    expect(same, same ? "" : `shared/client/schema.ts differs from what the API's OpenAPI document generates (${firstDifference(committed, generated)}). Run \`${REGENERATE_COMMAND}\` and commit shared/client/schema.ts.`).toBe(true);
  }, 60_000);

  it(`the admin page's client.js is client.ts built as it is now (else: run \`${REGENERATE_COMMAND}\` and commit shared/admin/client.js)`, async () => {
    const committed = readFileSync(ADMIN_CLIENT_FILE, "utf8");
    const built = await adminClientBundle();
    const same = committed === built;
    expect(same, same ? "" : `shared/admin/client.js differs from a fresh build of shared/admin/client.ts (${firstDifference(committed, built)}). Run \`${REGENERATE_COMMAND}\` and commit shared/admin/client.js.`).toBe(true);
    // And the page serves it: app.js imports it, from the same folder.
    const served = await fetch(`${t.baseUrl}/admin/client.js`);
    expect(served.headers.get("content-type")).toContain("text/javascript");
    expect(await served.text()).toBe(committed);
    expect(await (await fetch(`${t.baseUrl}/admin/app.js`)).text()).toContain('from "./client.js"');
  }, 60_000);

  it("notices a document that changed: an operation added to it is missing from the committed types", async () => {
    // The comparison above is only as good as the generation is sensitive: a route the document
    // gains must change the generated text.
    const { default: openapiTS, astToString } = await import("openapi-typescript");
    const document = await managementDocument() as { paths: Record<string, unknown> };
    const paths = document.paths as Record<string, Record<string, { operationId: string }>>;
    const changed = { ...document, paths: { ...paths, "/not-yet-committed": { get: { ...paths["/healthz"]!.get!, operationId: "notYetCommitted" } } } };
    const text = astToString(await openapiTS(changed as never, { silent: true }));
    expect(text).toContain('"/not-yet-committed"');
    expect(readFileSync(SCHEMA_FILE, "utf8")).not.toContain('"/not-yet-committed"');
  }, 60_000);

  it("a CLI call to a path, a parameter or a field the document lacks does not compile; the right ones do", async () => {
    const ts = (await import("typescript")).default;
    const dir = mkdtempSync(join(tmpdir(), "client-tsc-"));
    try {
      const file = join(dir, "calls.mts");
      // Each wrong line names what it gets wrong; tsc must refuse exactly those lines.
      writeFileSync(file, `
        import type { ApiClient } from ${JSON.stringify(join(ROOT, "shared/cli/api.js"))};
        export async function calls(api: ApiClient) {
          const sub = await api.GET("/subscriptions/{id}", { params: { path: { id: "sub_1" } } });
          const status: "active" | "degraded" | "disabled" = sub.status;
          await api.POST("/subscriptions/{id}/pause", { params: { path: { id: sub.id } } });
          await api.GET("/deliveries", { params: { query: { subscriptionId: sub.id, limit: 10 } } });
          await api.GET("/subscription/{id}", { params: { path: { id: "sub_1" } } }); // WRONG: path
          await api.GET("/deliveries", { params: { query: { subscription: "sub_1" } } }); // WRONG: query parameter
          await api.POST("/subscriptions", { body: { endpoint: "https://example.com", eventTypes: ["a"] } }); // WRONG: body field
          return [status, sub.nope]; // WRONG: answer field
        }
      `);
      const program = ts.createProgram([file], { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, strict: true, skipLibCheck: true, noEmit: true, types: [] });
      const lines = readFileSync(file, "utf8").split("\n");
      const refused = new Set(ts.getPreEmitDiagnostics(program).filter((d) => d.file?.fileName === file).map((d) => d.file!.getLineAndCharacterOfPosition(d.start!).line));
      const wrong = lines.flatMap((text, i) => (text.includes("// WRONG") ? [i] : []));
      expect(wrong).toHaveLength(4);
      expect([...refused].sort((a, b) => a - b)).toEqual(wrong);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("packs as @multicloud-webhooks/client and works from the tarball against a platform", async () => {
    const out = mkdtempSync(join(tmpdir(), "client-pack-"));
    try {
      // `npm pack` runs the package's prepack (tsc -p tsconfig.build.json) as it would when
      // published; scripts are asked for by name, since `npx vitest` runs with ignore-scripts set.
      const { npm_config_ignore_scripts: _ignored, ...env } = process.env;
      await run("npm", ["pack", "--ignore-scripts=false", "--pack-destination", out, "--loglevel", "error"], { cwd: CLIENT, env });
      // The package's one dependency is the one the repository's own code runs with.
      const own = JSON.parse(readFileSync(join(CLIENT, "package.json"), "utf8"));
      const root = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
      expect(own.dependencies).toEqual({ "openapi-fetch": root.dependencies["openapi-fetch"] });
      expect(own.version, "the client is versioned with the platform whose API it types").toBe(root.version);
      const tarball = join(out, `multicloud-webhooks-client-${own.version}.tgz`);
      const listed = (await run("tar", ["-tzf", tarball])).stdout.trim().split("\n").sort();
      expect(listed).toEqual(["package/README.md", "package/dist/index.d.ts", "package/dist/index.js", "package/dist/schema.d.ts", "package/dist/schema.js", "package/package.json"]);
      // A consumer's node_modules: the package and its one dependency.
      const modules = join(out, "consumer/node_modules");
      mkdirSync(join(modules, "@multicloud-webhooks/client"), { recursive: true });
      await run("tar", ["-xzf", tarball, "-C", join(modules, "@multicloud-webhooks/client"), "--strip-components=1"]);
      symlinkSync(join(ROOT, "node_modules/openapi-fetch"), join(modules, "openapi-fetch"));
      const consumer = join(out, "consumer/use.mjs");
      const script = `
        import { createWebhooksClient, dataOf, WebhooksApiError } from "@multicloud-webhooks/client";
        const api = createWebhooksClient({ url: process.env.URL, token: process.env.TOKEN });
        const created = await dataOf(api.POST("/applications", { body: { name: "packed client" } }));
        const read = await dataOf(api.GET("/applications/{id}", { params: { path: { id: created.id } } }));
        let refused;
        try { await dataOf(api.GET("/applications/{id}", { params: { path: { id: "app_missing/../x" } } })); } catch (e) { refused = e; }
        const anonymous = await createWebhooksClient({ url: process.env.URL }).GET("/me");
        console.log(JSON.stringify({ created, read, refused: { isApiError: refused instanceof WebhooksApiError, status: refused.status, code: refused.code }, anonymous: anonymous.response.status }));
      `;
      writeFileSync(consumer, script);
      const answer = JSON.parse((await run(process.execPath, [consumer], { cwd: join(out, "consumer"), env: { ...process.env, URL: t.baseUrl, TOKEN: t.token }, timeout: 60_000 })).stdout);
      expect(answer.created.name).toBe("packed client");
      expect(answer.read).toEqual(answer.created);
      // The path parameter is encoded (no traversal to another route): the API's own 404.
      expect(answer.refused).toEqual({ isApiError: true, status: 404, code: "not_found" });
      expect(answer.anonymous).toBe(401);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 120_000);
});
