/**
 * The user's inbound handlers inside a cloud function bundle. This module exports none; when the
 * functions are built with `INBOUND_HANDLERS=<module>` (`npm run build:functions`, see
 * functions/build.ts), the build replaces it with one that imports that module, so each cloud's
 * processor runs the same handlers as the local platform.
 */
import type { InboundHandler } from "../inbound/handlers.js";

let handlers: readonly InboundHandler[] = [];

/** The handlers bundled into this function (none unless built with INBOUND_HANDLERS). */
export function bundledHandlers(): readonly InboundHandler[] {
  return handlers;
}

/** Replaces the bundled handlers: for tests that run the functions' sources, not a bundle. */
export function useBundledHandlers(list: readonly InboundHandler[]): void {
  handlers = list;
}
