/**
 * Builds shared/admin/client.js, the admin page's typed API calls (./client.ts) with the
 * generated client and openapi-fetch, as one ES module the page imports. esbuild (a development
 * dependency) runs here only, never when the platform serves the page: client.js is committed.
 * `npm run generate:client` writes it; test/operator/client.test.ts compares it with a fresh build.
 */
import { build } from "esbuild";
import { fileURLToPath } from "node:url";

export const ADMIN_CLIENT_FILE = fileURLToPath(new URL("./client.js", import.meta.url));

const BANNER = "// Generated from shared/admin/client.ts by shared/admin/buildClient.ts (esbuild): do not edit, run `npm run generate:client`.";

/** The text client.js must have for client.ts, the client package and openapi-fetch as they are now. */
export async function adminClientBundle(): Promise<string> {
  const result = await build({
    entryPoints: [fileURLToPath(new URL("./client.ts", import.meta.url))],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    // Readable, as the page's other files are; it is small (openapi-fetch is ~6 kB minified).
    minify: false,
    legalComments: "inline",
    banner: { js: BANNER },
    logLevel: "silent",
    // esbuild names each input in a comment, relative to this folder: the same text from any directory.
    absWorkingDir: fileURLToPath(new URL("../..", import.meta.url)),
    // …and through a symlinked node_modules alike (the path as seen from the repository, not its target).
    preserveSymlinks: true,
  });
  return result.outputFiles[0]!.text;
}
