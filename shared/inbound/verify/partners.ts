/**
 * Inbound partners from configuration: `PARTNERS` (JSON) or `PARTNERS_FILE` (a path to the same
 * JSON), an object keyed by partner name. Validated once at start; a mistake stops the start with a
 * ConfigError naming the partner and the field. See docs/inbound-partners.md.
 *
 * @example
 * PARTNERS='{"stripe":{"scheme":"stripe","secrets":["whsec_…"]}}'
 */
import { readFileSync } from "node:fs";
import * as z from "zod/mini";
import { safeParse } from "../../safeParse.js";
import { ConfigError } from "../../config.js";
import { genericSecretKey, PLACEHOLDER, signedPayloadTemplate } from "./genericHmac.js";
import { standardWebhooksKey } from "./standardWebhooks.js";
import { publicKeyOf } from "../../crypto/ed25519.js";
import type { PartnerConfig, Scheme } from "./types.js";

const NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** An HTTP header name (RFC 9110 token). */
const headerName = z.string().check(z.regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, "must be an HTTP header name, e.g. X-Signature"));
const jsonPath = z.string().check(z.regex(/^[^.\s]+(\.[^.\s]+)*$/, "must be a dotted path into the JSON body, e.g. data.id"));

const secrets = z.array(z.string().check(z.minLength(1, "must not be empty"))).check(z.minLength(1, "list at least one secret (two during a rotation)"));
const tolerance = z.optional(z.number().check(z.int(), z.gte(1), z.lte(86_400)));
/** What the processor does with this partner's events that no handler takes (issue 16). Default: ignore. */
const unhandled = z.optional(z.enum(["ignore", "quarantine"]));
/**
 * Forwarding (issue 16): where each verified, de-duplicated event is handed on, signed with these
 * Standard Webhooks secrets; or `true`: only to the destinations added through the API (issue 30),
 * taken aside before the scheme's schema so a mistake in the object keeps its precise message.
 */
const forward = z.optional(z.strictObject({
  url: z.url({ protocol: /^https?$/, error: "must be an http(s) URL of your service" }),
  secrets: z.array(z.string().check(z.refine((s: string) => (standardWebhooksKey(s)?.length ?? 0) >= 16, "must be whsec_ followed by the base64 of at least 16 bytes (e.g. from `webhooks subscriptions create`)"))).check(z.minLength(1, "list at least one signing secret")),
}));

const schemas = {
  "standard-webhooks": z.strictObject({
    scheme: z.literal("standard-webhooks"),
    secrets: z.array(
      z.string().check(z.refine((s: string) => (standardWebhooksKey(s)?.length ?? 0) >= 16 || publicKeyOf(s) !== null, "must be whsec_ followed by the base64 of at least 16 bytes (v1), or the sender's whpk_ ed25519 public key (v1a)")),
    ).check(z.minLength(1, "list at least one secret (two during a rotation)")),
    toleranceSeconds: tolerance,
    unhandled,
    forward,
  }),
  stripe: z.strictObject({ scheme: z.literal("stripe"), secrets, toleranceSeconds: tolerance, unhandled, forward }),
  // GitHub signs no timestamp, so a tolerance would be a promise we cannot keep: not accepted.
  github: z.strictObject({ scheme: z.literal("github"), secrets, unhandled, forward }),
  "generic-hmac": z
    .strictObject({
      scheme: z.literal("generic-hmac"),
      secrets,
      toleranceSeconds: tolerance,
      signatureHeader: headerName,
      algorithm: z.optional(z.enum(["sha256", "sha512", "sha1"])),
      encoding: z.optional(z.enum(["hex", "base64", "base64url"])),
      prefix: z.optional(z.string()),
      secretEncoding: z.optional(z.enum(["utf8", "base64", "hex"])),
      timestampHeader: z.optional(headerName),
      timestampUnit: z.optional(z.enum(["seconds", "milliseconds"])),
      signedPayload: z.optional(z.string()),
      eventIdHeader: z.optional(headerName),
      eventIdField: z.optional(jsonPath),
      eventTypeHeader: z.optional(headerName),
      eventTypeField: z.optional(jsonPath),
      unhandled,
      forward,
    })
    .check(z.superRefine((p, ctx) => {
      // Stryker disable next-line StringLiteral: equivalent: describeIssue reads no code but unrecognized_keys and invalid_type
      const problem = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
      if (!p.eventIdHeader === !p.eventIdField) problem("eventIdHeader", "set exactly one of eventIdHeader or eventIdField: where the partner's event id is (none is ever invented)");
      if (p.eventTypeHeader && p.eventTypeField) problem("eventTypeHeader", "set at most one of eventTypeHeader or eventTypeField");
      p.secrets.forEach((s, i) => {
        if (!genericSecretKey(s, p.secretEncoding)) problem(`secrets[${i}]`, `is not valid ${p.secretEncoding} (secretEncoding)`);
      });
      const template = signedPayloadTemplate(p as PartnerConfig);
      const used = [...template.matchAll(PLACEHOLDER)].map((m) => m[1]);
      // Stryker disable next-line StringLiteral: equivalent: the group always matches, so the fallback is never used
      const names = [...template.matchAll(/\{([^{}]*)\}/g)].map((m) => m[1] ?? "");
      const unknown = names.filter((w) => !["body", "timestamp", "id"].includes(w));
      if (unknown.length) problem("signedPayload", `unknown placeholder {${unknown[0]}}; use {body}, {timestamp} and {id}`);
      if (used.filter((w) => w === "body").length !== 1) problem("signedPayload", "must contain {body} exactly once");
      const stamps = used.filter((w) => w === "timestamp").length;
      if (stamps > 0 && !p.timestampHeader) problem("signedPayload", "uses {timestamp} but no timestampHeader is set");
      if (p.timestampHeader && stamps === 0) problem("signedPayload", "must contain {timestamp}: a timestamp that is not signed proves nothing");
      if (used.includes("id") && !p.eventIdHeader) problem("signedPayload", "uses {id}, which needs eventIdHeader");
      if (p.toleranceSeconds !== undefined && !p.timestampHeader) problem("toleranceSeconds", "needs timestampHeader: without a signed timestamp there is nothing to check");
    })),
} satisfies Record<Scheme, z.ZodMiniType>;

const SCHEMES = Object.keys(schemas) as Scheme[];

function describeIssue(issue: z.core.$ZodIssue): string {
  // A path is one name, `secrets[1]`, or a nested one (`forward.url`); only invalid_type messages
  // say "received undefined" (so the code test's "true" mutant is equivalent). See docs/testing.md.
  const path = issue.path.reduce<string>((acc, key) => (typeof key === "number" ? `${acc}[${key}]` : acc ? `${acc}.${String(key)}` : String(key)), "");
  if (issue.code === "unrecognized_keys") return `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `"${k}"`).join(", ")} (check the spelling; see docs/inbound-partners.md)`;
  if (issue.code === "invalid_type" && issue.message.includes("received undefined")) return `${path}: is required`;
  return `${path}: ${issue.message}`;
}

/** Every field some scheme knows: without a valid scheme, a field none of them knows is still a mistake. */
const KNOWN_FIELDS = new Set(Object.values(schemas).flatMap((schema) => Object.keys(schema._zod.def.shape)));

/** What can be checked of a partner whose scheme is wrong or missing: its secrets, and unknown fields. */
function schemeFreeProblems(entry: Record<string, unknown>): string[] {
  const unknown = Object.keys(entry).filter((k) => !KNOWN_FIELDS.has(k));
  const problems = unknown.length ? [describeIssue({ code: "unrecognized_keys", keys: unknown, path: [], message: "", input: entry } as z.core.$ZodIssue)] : [];
  const parsed = safeParse(z.strictObject({ secrets }), { secrets: entry.secrets });
  if (!parsed.success) problems.push(...parsed.error.issues.map(describeIssue));
  return problems;
}

/**
 * Parses and validates the partners JSON: `{ "<name>": { "scheme": …, "secrets": [ … ], … } }`.
 * @param source named in errors, e.g. `PARTNERS` or `PARTNERS_FILE (/etc/partners.json)`.
 * @throws ConfigError listing every problem, each with the partner and field.
 */
export function parsePartners(json: string, source = "PARTNERS"): Map<string, PartnerConfig> {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (error) {
    throw new ConfigError(`${source} is not valid JSON (${(error as Error).message}). Expected an object keyed by partner name, see docs/inbound-partners.md.`, { cause: error });
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${source} must be a JSON object keyed by partner name, e.g. {"stripe":{"scheme":"stripe","secrets":["whsec_…"]}}.`);
  }
  const partners = new Map<string, PartnerConfig>();
  const problems: string[] = [];
  for (const [name, entry] of Object.entries(raw)) {
    const where = `partner "${name}"`;
    // Each mistake is reported, not the first alone: a bad name or scheme does not hide the rest.
    const badName = !NAME.test(name);
    if (badName) problems.push(`${where}: the name must be 1-64 lowercase letters, digits, - or _ (it is the path segment of POST /webhooks/<name>)`);
    const scheme = (entry as { scheme?: unknown } | null)?.scheme;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      problems.push(`${where}: must be an object with scheme and secrets`);
      continue;
    }
    if (!SCHEMES.includes(scheme as Scheme)) {
      problems.push(`${where}: scheme: must be one of ${SCHEMES.map((s) => `"${s}"`).join(", ")} (got ${JSON.stringify(scheme)})`);
      problems.push(...schemeFreeProblems(entry as Record<string, unknown>).map((p) => `${where}: ${p}`));
      continue;
    }
    const apiDestinationsOnly = (entry as { forward?: unknown }).forward === true;
    const parsed = safeParse(schemas[scheme as Scheme], apiDestinationsOnly ? { ...entry, forward: undefined } : entry);
    if (!parsed.success) {
      problems.push(...parsed.error.issues.map((issue) => `${where} (${String(scheme)}): ${describeIssue(issue)}`));
      continue;
    }
    if (!badName) partners.set(name, { name, ...parsed.data, ...(apiDestinationsOnly ? { forward: true } : {}) } as PartnerConfig);
  }
  if (problems.length) {
    throw new ConfigError(`Invalid ${source}:\n${problems.map((p) => `- ${p}`).join("\n")}\nFix the partner configuration and start again.`);
  }
  return partners;
}

/**
 * The partners from `PARTNERS` or from the file named by `PARTNERS_FILE` (not both).
 * Neither set: no partners, so every `POST /webhooks/:partner` answers 404.
 */
export function loadPartners(env: { PARTNERS?: string; PARTNERS_FILE?: string }): Map<string, PartnerConfig> {
  if (env.PARTNERS && env.PARTNERS_FILE) {
    throw new ConfigError("Both PARTNERS and PARTNERS_FILE are set; set only one of them.");
  }
  if (env.PARTNERS_FILE) {
    let text: string;
    try {
      // Stryker disable next-line StringLiteral: equivalent: without an encoding the file is a Buffer, which JSON.parse reads as its UTF-8 text
      text = readFileSync(env.PARTNERS_FILE, "utf8");
    } catch (error) {
      throw new ConfigError(`PARTNERS_FILE: cannot read ${env.PARTNERS_FILE} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); check the path and its permissions.`, { cause: error });
    }
    return parsePartners(text, `PARTNERS_FILE (${env.PARTNERS_FILE})`);
  }
  return env.PARTNERS ? parsePartners(env.PARTNERS) : new Map();
}
