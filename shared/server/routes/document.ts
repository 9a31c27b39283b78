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

export const API_VERSION = "0.2.0";

/** The two routes describing `routes` (and themselves). */
export function documentRoutes(routes: readonly Route[]): Route[] {
  let document: Record<string, unknown> | undefined;
  const own: Route[] = [
    {
      method: "GET", path: "/openapi.json", auth: "none",
      doc: {
        operationId: "openApiDocument", tag: "Reference", summary: "This API's OpenAPI 3.1 document", noDatabase: true,
        responses: { 200: { description: "The document.", schema: z.record(z.string(), z.unknown()) } },
      },
      handler: async () => ({ status: 200, headers: { "cache-control": "no-cache" }, body: (document ??= openApiDocument([...routes, ...own], { version: API_VERSION })) }),
    },
    {
      method: "GET", path: "/docs", auth: "none",
      doc: {
        operationId: "reference", tag: "Reference", summary: "This API's reference, as a page", noDatabase: true,
        responses: { 200: { description: "HTML.", mediaType: "text/html" } },
      },
      handler: async () => ({
        status: 200,
        headers: { ...ADMIN_SECURITY_HEADERS, "content-type": "text/html; charset=utf-8" },
        body: referencePage((document ??= openApiDocument([...routes, ...own], { version: API_VERSION }))),
      }),
    },
  ];
  return own;
}
