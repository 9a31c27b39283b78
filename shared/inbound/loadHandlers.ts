/**
 * Loads the user's handler module named by `INBOUND_HANDLERS` (a path, relative to the working
 * directory, or a file: URL). Unset: no handlers, so every inbound event is recorded as ignored
 * (or quarantined, per partner) until one is configured.
 */
import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { ConfigError } from "../config.js";
import { handlersOf, type InboundHandler } from "./handlers.js";

export async function loadHandlers(spec: string | undefined, cwd = process.cwd()): Promise<InboundHandler[]> {
  if (!spec) return [];
  const url = spec.startsWith("file:") ? spec : pathToFileURL(isAbsolute(spec) ? spec : resolve(cwd, spec)).href;
  let module: unknown;
  try {
    module = await import(url);
  } catch (error) {
    throw new ConfigError(`INBOUND_HANDLERS: cannot load ${spec} (${(error as Error).message}); check the path (relative to ${cwd}) and that the module runs.`, { cause: error });
  }
  try {
    return handlersOf(module, `INBOUND_HANDLERS (${spec})`);
  } catch (error) {
    throw new ConfigError(`INBOUND_HANDLERS (${spec}): ${(error as Error).message}`, { cause: error });
  }
}
