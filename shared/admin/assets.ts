/**
 * The admin page's static files (index.html, app.js, app.css, client.js in this folder), read once
 * and served as strings. No build step at serving: what is in the folder is what the browser gets
 * (client.js is built by `npm run generate:client` and committed); the cloud bundles carry the
 * same files' text, embedded by functions/build.ts (./assetFiles.ts).
 */
import { readAssetFile } from "./assetFiles.js";

export interface Asset {
  contentType: string;
  body: string;
}

/** The page's files and their types (functions/build.ts embeds exactly these). */
export const ADMIN_FILES: Record<string, string> = {
  "index.html": "text/html; charset=utf-8",
  "app.js": "text/javascript; charset=utf-8",
  "app.css": "text/css; charset=utf-8",
  // The page's API calls on the generated client, bundled (./buildClient.ts): app.js imports it.
  "client.js": "text/javascript; charset=utf-8",
};

const cache = new Map<string, Promise<Asset>>();

/** One of the page's files, or undefined for any other name. */
export function adminAsset(name: string): Promise<Asset> | undefined {
  const contentType = Object.hasOwn(ADMIN_FILES, name) ? ADMIN_FILES[name] : undefined;
  if (!contentType) return undefined;
  let asset = cache.get(name);
  if (!asset) {
    asset = readAssetFile(name).then((body) => ({ contentType, body }));
    // A failed read must not be cached forever.
    asset.catch(() => cache.delete(name));
    cache.set(name, asset);
  }
  return asset;
}

/**
 * Headers of every admin asset: the page runs only its own script and style, cannot be framed,
 * and sends no referrer (URLs may carry ids).
 */
export const ADMIN_SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache",
};
