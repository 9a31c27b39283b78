/**
 * The API describing itself: `GET /openapi.json` (OpenAPI 3.1, generated from the routes) and
 * `GET /docs`, a readable reference page made from it. Public, like the admin page: they carry
 * no data, and a client needs them before it has a token.
 */
import * as z from "zod/mini";
import { ADMIN_SECURITY_HEADERS } from "../../admin/assets.js";
import { openApiDocument } from "../openapi.js";
import { referencePage } from "../reference.js";
import type { Route } from "../router.js";
import { VERSION } from "../../version.js";

/** The API's version is the package's (shared/version.ts). */
export const API_VERSION = VERSION;

/**
 * The two routes describing `routes` (and themselves), and `elsewhere`: operations of the same
 * API that another function of the host serves (the cloud's ingest). Behind a base path (a
 * prefix of the host's ingress), the document names it as its server and the page links under it;
 * at the root, its server is "/" (the host the document was read from).
 */
export function documentRoutes(routes: readonly Route[], elsewhere: readonly Route[] = []): Route[] {
  const documents = new Map<string, Record<string, unknown>>();
  const documentAt = (basePath: string) => {
    let document = documents.get(basePath);
    if (!document) {
      // At the root the server is named too ("/", this document's own host), so a client generator
      // or an API tool that reads `servers` calls this server, not one it has to be told.
      document = openApiDocument([...routes, ...elsewhere, ...own], { version: API_VERSION, serverUrl: basePath || "/" });
      documents.set(basePath, document);
    }
    return document;
  };
  const own: Route[] = [
    {
      method: "GET", path: "/openapi.json", auth: "none",
      doc: {
        operationId: "openApiDocument", tag: "Reference", summary: "This API's OpenAPI 3.1 document", noDatabase: true,
        responses: { 200: { description: "The document.", schema: z.record(z.string(), z.unknown()) } },
      },
      handler: async (req) => ({ status: 200, headers: { "cache-control": "no-cache" }, body: documentAt(req.basePath) }),
    },
    {
      method: "GET", path: "/docs", auth: "none",
      doc: {
        operationId: "reference", tag: "Reference", summary: "This API's reference, as a page", noDatabase: true,
        responses: { 200: { description: "HTML.", mediaType: "text/html" } },
      },
      handler: async (req) => ({
        status: 200,
        headers: { ...ADMIN_SECURITY_HEADERS, "content-type": "text/html; charset=utf-8" },
        body: referencePage(documentAt(req.basePath), req.basePath),
      }),
    },
  ];
  return own;
}
