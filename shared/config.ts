/**
 * Configuration of the local platform, from the environment, validated once at start.
 * A bad value stops the start with a message that names the variable and what it expects.
 */
import { randomBytes } from "node:crypto";
import { z } from "zod";

export class ConfigError extends Error {
  override name = "ConfigError";
}

const intFrom = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const schema = z.object({
  /** HTTP port of the local server. Default: 8080. */
  PORT: intFrom(0, 65535).default(8080),
  /** PostgreSQL URL. Absent: the embedded PGlite database in DATA_DIR. */
  DATABASE_URL: z.string().url().optional(),
  /** Where the embedded database keeps its files. Default: `.data/pglite`. */
  DATA_DIR: z.string().min(1).default(".data/pglite"),
  /** Bearer token of the management API and admin page. Absent: one is generated and printed. */
  ADMIN_TOKEN: z.string().min(16, "use at least 16 characters").optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** Largest event payload accepted, in bytes (outbound events and inbound bodies). Default: 256 KiB. */
  MAX_PAYLOAD_BYTES: intFrom(1024, 10 * 1024 * 1024).default(256 * 1024),
  /**
   * Destinations exempt from the SSRF policy: comma-separated hostnames, IPs or CIDRs
   * (e.g. `127.0.0.1,localhost` for a local demo). Default: none.
   */
  ALLOWED_DESTINATIONS: z.string().default(""),
  /** Inbound partners as JSON (see README), or PARTNERS_FILE pointing at such a file. */
  PARTNERS: z.string().optional(),
  PARTNERS_FILE: z.string().optional(),
  /** Where a new dead letter or quarantined entry is announced (signed, via our own outbox). */
  ALERT_WEBHOOK_URL: z.string().url().optional(),
});

export type Config = z.infer<typeof schema> & { ADMIN_TOKEN: string; adminTokenGenerated: boolean };

/** Reads and validates the configuration; throws ConfigError naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const picked: Record<string, string | undefined> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== "") picked[key] = value;
  }
  const parsed = schema.safeParse(picked);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `- ${i.path.join(".")}: ${i.message} (got ${JSON.stringify(picked[String(i.path[0])])})`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}\nFix these environment variables and start again.`);
  }
  const generated = !parsed.data.ADMIN_TOKEN;
  return {
    ...parsed.data,
    ADMIN_TOKEN: parsed.data.ADMIN_TOKEN ?? randomBytes(18).toString("base64url"),
    adminTokenGenerated: generated,
  };
}
