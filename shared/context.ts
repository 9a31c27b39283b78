/**
 * What every room of the platform is handed (the configuration, the database and the logger) and
 * what a background room gives back.
 * A module of its own, below all of them, so the routes and workers that take it need not import
 * the platform that assembles them (no import cycle).
 */
import type { Logger } from "pino";
import type { Config } from "./config.js";
import type { Database } from "./db/port.js";

export interface PlatformContext {
  config: Config;
  db: Database;
  logger: Logger;
}

/** Something running in the background until stopped (relay, inbox processor, …). */
export interface BackgroundWorker {
  readonly name: string;
  /** Stop claiming; finish or release in-flight work; resolve when done. */
  stop(): Promise<void>;
}
