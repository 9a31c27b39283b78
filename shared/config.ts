/**
 * Configuration of the local platform, from the environment, validated once at start.
 * A bad value stops the start with a message that names the variable and what it expects.
 */
import { randomBytes } from "node:crypto";
import * as z from "zod/mini";
import { MIN_RETENTION_DAYS } from "./retention/policy.js";
import { safeParse } from "./safeParse.js";
import { parseEncryptionKeys } from "./crypto/keyring.js";
import { parseOriginList } from "./portal/origins.js";

export class ConfigError extends Error {
  override name = "ConfigError";
}

const intFrom = (min: number, max: number, fallback: number) => z._default(z.coerce.number().check(z.int(), z.gte(min), z.lte(max)), fallback);

/** 0 (keep forever) or at least MIN_RETENTION_DAYS (the alert scan's window, see retention/policy.ts). */
const retentionDays = (fallback: number) => z._default(z.coerce.number().check(
  z.int(),
  z.refine(
    (n) => n === 0 || (n >= MIN_RETENTION_DAYS && n <= 36_500),
    `use 0 (keep forever) or ${MIN_RETENTION_DAYS} to 36500 days (the alert scan looks 7 days back)`,
  ),
), fallback);

const schema = z.object({
  /** HTTP port of the local server. Default: 8080. */
  PORT: intFrom(0, 65535, 8080),
  /** PostgreSQL URL. Absent: the embedded PGlite database in DATA_DIR. */
  DATABASE_URL: z.optional(z.url()),
  /** Where the embedded database keeps its files. Default: `.data/pglite`. */
  DATA_DIR: z._default(z.string().check(z.minLength(1)), ".data/pglite"),
  /** Bearer token of the management API and admin page. Absent: one is generated and printed. */
  ADMIN_TOKEN: z.optional(z.string().check(z.minLength(16, "use at least 16 characters"))),
  LOG_LEVEL: z._default(z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]), "info"),
  /** Largest event payload accepted, in bytes (outbound events and inbound bodies). Default: 256 KiB. */
  MAX_PAYLOAD_BYTES: intFrom(1024, 10 * 1024 * 1024, 256 * 1024),
  /**
   * Largest inbound webhook body accepted, in bytes. Absent: MAX_PAYLOAD_BYTES. The cloud stacks
   * set it to what their ingress can carry (docs/deploy.md); bodies above the queue's message
   * limit travel by claim-check. At most 64 MiB.
   */
  MAX_INBOUND_BODY_BYTES: z.optional(z.coerce.number().check(z.int(), z.gte(1024), z.lte(64 * 1024 * 1024))),
  /**
   * Destinations exempt from the SSRF policy: comma-separated hostnames, IPs or CIDRs
   * (e.g. `127.0.0.1,localhost` for a local demo). Default: none.
   */
  ALLOWED_DESTINATIONS: z._default(z.string(), ""),
  /** Outbound relay: most deliveries claimed per query. Default: 500 (measured in bench/outbound.ts). */
  OUTBOUND_BATCH_SIZE: intFrom(1, 1000, 500),
  /** Outbound relay: most deliveries held at once (HTTP, then awaiting their write); what a crash holds up for a lease. Default: 1024. */
  OUTBOUND_CONCURRENCY: intFrom(1, 1024, 1024),
  /**
   * Outbound: deliveries of one subscription leased at once across every relay (waiting for an HTTP
   * turn, in flight, or awaiting their write), for subscriptions that set no `maxInFlight`. A relay
   * keeps far fewer of an endpoint that is slow or hangs (docs/outbound.md#flow-control). Default: 1024.
   */
  OUTBOUND_MAX_IN_FLIGHT: intFrom(1, 10_000, 1024),
  /** Outbound relay: lease length in seconds, renewed while held; how long a crashed relay's deliveries wait. Default: 60. */
  OUTBOUND_LEASE_SECONDS: intFrom(5, 3600, 60),
  /** Outbound relay: backstop poll when no NOTIFY arrives, in ms. Default: 1000. */
  OUTBOUND_POLL_INTERVAL_MS: intFrom(10, 60_000, 1000),
  /** Outbound: deadline of one delivery attempt, in ms. Default: 10000. */
  OUTBOUND_TIMEOUT_MS: intFrom(100, 120_000, 10_000),
  /** Outbound: attempts per delivery before it becomes a dead letter (a subscription may override). Default: 12. */
  OUTBOUND_MAX_ATTEMPTS: intFrom(1, 100, 12),
  /** Outbound: consecutive failures that mark an endpoint degraded / disabled. Default: 5 / 20. */
  OUTBOUND_DEGRADE_AFTER: intFrom(1, 10_000, 5),
  OUTBOUND_DISABLE_AFTER: intFrom(1, 10_000, 20),
  /**
   * Outbound circuit breaker: seconds a run of failures must last (besides OUTBOUND_DISABLE_AFTER of
   * them) before it disables the endpoint: sustained failure, not a burst. Default: 30.
   */
  OUTBOUND_BREAKER_WINDOW_SECONDS: intFrom(0, 86_400, 30),
  /** Outbound: seconds between probes of a disabled endpoint. Default: 60. */
  OUTBOUND_PROBE_INTERVAL_SECONDS: intFrom(1, 86_400, 60),
  /**
   * Outbound retention: days a delivered delivery (with its attempt log) is kept after it was
   * delivered; 0 keeps them forever. Default: 30.
   */
  OUTBOUND_RETENTION_DAYS: retentionDays(30),
  /** Outbound retention of dead letters, counted from when they died; 0 (default) keeps them until replayed. */
  OUTBOUND_DEAD_LETTER_RETENTION_DAYS: retentionDays(0),
  /** Inbound retention: days a processed inbox entry (raw payload included) is kept; 0 keeps them forever. Default: 30. */
  INBOX_RETENTION_DAYS: retentionDays(30),
  /** Inbound partners as JSON (see README), or PARTNERS_FILE pointing at such a file. */
  PARTNERS: z.optional(z.string()),
  PARTNERS_FILE: z.optional(z.string()),
  /** Your inbound handler module (docs/inbound-handlers.md), a path relative to the working directory. Unset: events are recorded as ignored. */
  INBOUND_HANDLERS: z.optional(z.string()),
  /** Inbox entries the processor claims per round. Default: 20. */
  INBOX_BATCH_SIZE: intFrom(1, 1000, 20),
  /** Seconds a processor's claim lasts before another may take the entry. Default: 60. */
  INBOX_LEASE_SECONDS: intFrom(1, 3600, 60),
  /** Processor poll interval when idle, in ms (local ingest also wakes it). Default: 1000. */
  INBOX_POLL_MS: intFrom(10, 60_000, 1000),
  /** Seconds to wait after the 1st, 2nd, … processing failure; one more quarantines. Default: 60,300,900. */
  INBOX_RETRY_SCHEDULE: z.pipe(
    z._default(z.string().check(z.regex(/^\s*\d+(\s*,\s*\d+)*\s*$/, "use comma-separated whole seconds, e.g. 60,300,900")), "60,300,900"),
    z.transform((s: string) => s.split(",").map((x) => Number(x.trim()))),
  ),
  /** Seconds before a deferred entry is looked at again (sooner when its entity changes). Default: 30. */
  INBOX_DEFER_DELAY_SECONDS: intFrom(1, 86_400, 30),
  /** Seconds an entry may stay deferred, from its first deferral, before quarantine. Default: 3600. */
  INBOX_DEFER_DEADLINE_SECONDS: intFrom(1, 30 * 86_400, 3600),
  /** Where a new dead letter or quarantined entry is announced (signed, via our own outbox). */
  ALERT_WEBHOOK_URL: z.optional(z.url()),
  /**
   * Keys of the secrets stored in the database (signing secrets, header values): comma-separated
   * `<keyId>:<base64 of 32 bytes>`; the first encrypts, all decrypt (docs/secrets.md). Absent: the
   * embedded database uses a key generated into `<DATA_DIR>.encryption-keys`; PostgreSQL refuses to start.
   */
  ENCRYPTION_KEYS: z.optional(z.string()),
  /**
   * Origins that may frame every application's customer portal (CSP `frame-ancestors`),
   * comma-separated (`https://shop.example.com,https://*.example.org`), besides each application's
   * own list (docs/portal.md#embedding). Default: none; the portal cannot be framed.
   */
  PORTAL_FRAME_ANCESTORS: z._default(z.string().check(z.refine((s: string) => { try { parseOriginList(s); return true; } catch { return false; } },
    "use comma-separated origins such as https://shop.example.com (scheme, host, optional port; no path)")), ""),
  /** Where customers reach this platform (`https://webhooks.example.com`): portal links are made on it. Absent: the request's own host. */
  PORTAL_BASE_URL: z.optional(z.url()),
  /** Signing secret (`whsec_…`) of the alert subscription, so the receiver can verify alerts. Absent: generated, not retrievable. */
  ALERT_WEBHOOK_SECRET: z.optional(z.string().check(z.regex(/^whsec_[A-Za-z0-9+/=]{32,}$/, "use whsec_ followed by base64 (e.g. from `webhooks subscriptions create`)"))),
});

export type Config = Omit<z.infer<typeof schema>, "MAX_INBOUND_BODY_BYTES"> & { ADMIN_TOKEN: string; adminTokenGenerated: boolean; MAX_INBOUND_BODY_BYTES: number };

/** Settings whose values are secrets (or hold one, as a URL's password): an error names them, never quotes them. */
const SECRET_SETTINGS = new Set(["ADMIN_TOKEN", "ALERT_WEBHOOK_SECRET", "DATABASE_URL", "ENCRYPTION_KEYS"]);

/** Reads and validates the configuration; throws ConfigError naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const picked: Record<string, string | undefined> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== "") picked[key] = value;
  }
  const parsed = safeParse(schema, picked);
  if (!parsed.success) {
    // A secret's value is never quoted: the message goes to logs (a cloud function logs it).
    const got = (name: string) => (SECRET_SETTINGS.has(name) ? "its value is not shown" : `got ${JSON.stringify(picked[name])}`);
    const lines = parsed.error.issues.map((i) => `- ${i.path.join(".")}: ${i.message} (${got(String(i.path[0]))})`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}\nFix these environment variables and start again.`);
  }
  // Checked here rather than in the schema, whose messages quote the value: key bytes are never
  // printed. An Azure Key Vault reference left unresolved is reported by the Azure runtime instead.
  if (parsed.data.ENCRYPTION_KEYS !== undefined && !parsed.data.ENCRYPTION_KEYS.startsWith("@Microsoft.KeyVault(")) {
    try {
      parseEncryptionKeys(parsed.data.ENCRYPTION_KEYS);
    } catch (error) {
      throw new ConfigError(`Invalid configuration:\n- ENCRYPTION_KEYS: ${(error as Error).message}\nFix this environment variable and start again.`);
    }
  }
  const generated = !parsed.data.ADMIN_TOKEN;
  return {
    ...parsed.data,
    MAX_INBOUND_BODY_BYTES: parsed.data.MAX_INBOUND_BODY_BYTES ?? parsed.data.MAX_PAYLOAD_BYTES,
    ADMIN_TOKEN: parsed.data.ADMIN_TOKEN ?? randomBytes(18).toString("base64url"),
    adminTokenGenerated: generated,
  };
}
