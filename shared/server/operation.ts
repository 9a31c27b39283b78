/**
 * How a route describes itself for the OpenAPI document: the same zod schemas that validate its
 * query and body, and the schema of each answer. A route without a description is left out of
 * the document (the admin page's static files).
 */
import type * as z from "zod/mini";
import type { AccessRule } from "../tenancy/accessRule.js";

export interface ResponseDoc {
  description: string;
  /** The JSON body's schema; none for an empty body. */
  schema?: z.core.$ZodType;
  /** Response headers worth naming, with what they mean. */
  headers?: Record<string, string>;
  /** A body that is not JSON (e.g. `text/html`). */
  mediaType?: string;
}

export interface OperationDoc {
  operationId: string;
  summary: string;
  description?: string;
  /** The group it is listed under: Subscriptions, Events, Deliveries, Dead letters, Inbox, … */
  tag: string;
  /** The query's schema (a strict object): it validates the query, and documents it. */
  query?: z.core.$ZodType;
  /** The JSON body's schema, the one the core validates it with. */
  body?: z.core.$ZodType;
  /** Whether a body must be sent. Default: true when `body` is given. */
  bodyRequired?: boolean;
  /** A body that is not JSON: its media type (the inbound webhook takes the partner's bytes as they are). */
  bodyMediaType?: string;
  /** Successful answers and the errors particular to it (409, …); the common errors are added. */
  responses: Record<number, ResponseDoc>;
  /** Leave out the 503 a database outage answers (routes that need no database). */
  noDatabase?: boolean;
  /**
   * What it needs of the caller (authenticated routes): read or write, operators only or
   * application keys too, and the resource whose application must match. Shown in the document as
   * `x-access`; enforced by shared/tenancy/access.ts. Undeclared: operators with write access only.
   */
  access?: AccessRule;
}
