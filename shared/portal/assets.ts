/**
 * The customer portal's static files (index.html, portal.js, portal.css in this folder), read
 * once, and the headers the page is served with. No build step, as for the admin page. The page's
 * Content-Security-Policy differs from the admin page's in one thing: `frame-ancestors` names the
 * origins allowed to frame this application's portal ('none' when there are none), and `img-src`
 * the origin of its theme's logo.
 */

/** The page's files and their types (functions/build.ts embeds exactly these). */
export const PORTAL_FILES: Record<string, string> = {
  "index.html": "text/html; charset=utf-8",
  "portal.js": "text/javascript; charset=utf-8",
  "portal.css": "text/css; charset=utf-8",
};

const cache = new Map<string, Promise<string>>();

/** One of the page's files, or undefined for any other name. */
export function portalAsset(name: string): Promise<{ contentType: string; body: string }> | undefined {
  const contentType = Object.hasOwn(PORTAL_FILES, name) ? PORTAL_FILES[name] : undefined;
  if (!contentType) return undefined;
  let body = cache.get(name);
  if (!body) {
    // Loaded on first use: in a cloud bundle the module holds the files' text (27 kB), which a
    // management function's cold start need not load before anyone opens the portal.
    body = import("./assetFiles.js").then(({ readAssetFile }) => readAssetFile(name));
    // A failed read must not be cached forever.
    body.catch(() => cache.delete(name));
    cache.set(name, body);
  }
  return body.then((text) => ({ contentType, body: text }));
}

/**
 * Headers of the portal's files: its own script and style only, its API only, no referrer (the
 * page's URL names the application), not cached (the policy depends on the application), framed
 * only by `frameAncestors` (already validated origins: shared/portal/origins.ts).
 */
export function portalSecurityHeaders(frameAncestors: readonly string[], logoUrl: string | null): Record<string, string> {
  const logoOrigin = logoUrl ? new URL(logoUrl).origin : null;
  const ancestors = frameAncestors.length > 0 ? frameAncestors.join(" ") : "'none'";
  return {
    "content-security-policy": `default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:${logoOrigin ? ` ${logoOrigin}` : ""}; base-uri 'none'; form-action 'self'; frame-ancestors ${ancestors}`,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
    vary: "Cookie",
  };
}
