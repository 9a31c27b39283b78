/**
 * Each application's portal settings: the origins that may frame its portal (besides
 * PORTAL_FRAME_ANCESTORS, every application's) and a light theme (a name shown in the header, a
 * logo URL, an accent colour). Validated here, so nothing a setting holds can break out of the
 * page's Content-Security-Policy or its markup: origins are read back from the URL parser
 * (./origins.ts), the logo is an https URL whose origin alone enters `img-src`, the colour is
 * `#rrggbb`, and the page sets the name as text, never as HTML.
 */
import * as z from "zod/mini";
import type { Queryable } from "../db/port.js";
import { NotFoundError } from "../outbound/errors.js";
import { parseOrThrow } from "../outbound/validation.js";
import { normalizeOrigin, originProblem } from "./origins.js";

/** Most origins per application: a policy header stays short. */
export const MAX_FRAME_ANCESTORS = 20;

export interface PortalTheme {
  name: string | null;
  logoUrl: string | null;
  accentColor: string | null;
}

export interface PortalSettings {
  applicationId: string;
  frameAncestors: string[];
  theme: PortalTheme;
  updatedAt: Date | null;
}

const origin = z.string().check(z.refine((s: string) => originProblem(s.trim()) === null, { error: (issue) => `${JSON.stringify(String(issue.input).slice(0, 100))}: ${originProblem(String(issue.input).trim())}` }));

const logoUrl = z.string().check(
  z.maxLength(2000, "at most 2000 characters"),
  z.refine((s: string) => {
    try {
      const u = new URL(s);
      // https only (an http logo on an https page is mixed content); http for a local test host.
      return (u.protocol === "https:" || (u.protocol === "http:" && ["localhost", "127.0.0.1", "[::1]"].includes(u.hostname))) && !u.username && !u.password;
    } catch {
      return false;
    }
  }, "use an https URL of an image, e.g. https://cdn.example.com/logo.svg (http only for localhost)"),
);

export const portalSettingsInputSchema = z.strictObject({
  /** Origins that may frame this application's portal, e.g. `https://app.example.com`. Replaces the list. */
  frameAncestors: z.optional(z.array(origin).check(z.maxLength(MAX_FRAME_ANCESTORS, `at most ${MAX_FRAME_ANCESTORS} origins`))),
  theme: z.optional(z.strictObject({
    /** Shown in the portal's header instead of the application's name. */
    name: z.optional(z.nullable(z.string().check(z.minLength(1, "give a name, or null for the application's"), z.maxLength(80, "at most 80 characters")))),
    logoUrl: z.optional(z.nullable(logoUrl)),
    accentColor: z.optional(z.nullable(z.string().check(z.regex(/^#[0-9a-fA-F]{6}$/, "use a colour as #rrggbb, e.g. #0b7285")))),
  })),
});

interface Row { application_id: string; frame_ancestors: string[]; theme_name: string | null; theme_logo_url: string | null; theme_accent: string | null; updated_at: Date }

const EMPTY_THEME: PortalTheme = { name: null, logoUrl: null, accentColor: null };

/** The settings of a live application (its defaults when none were set). */
export async function getPortalSettings(q: Queryable, applicationId: string): Promise<PortalSettings> {
  const { rows } = await q.query<Row & { live: boolean }>(
    `SELECT a.id AS application_id, p.frame_ancestors, p.theme_name, p.theme_logo_url, p.theme_accent, p.updated_at
     FROM outbound_applications a LEFT JOIN portal_settings p ON p.application_id = a.id
     WHERE a.id = $1 AND a.deleted_at IS NULL`,
    [applicationId],
  );
  const r = rows[0];
  if (!r) throw new NotFoundError("application", applicationId);
  return {
    applicationId,
    frameAncestors: r.frame_ancestors ?? [],
    theme: r.updated_at ? { name: r.theme_name, logoUrl: r.theme_logo_url, accentColor: r.theme_accent } : EMPTY_THEME,
    updatedAt: r.updated_at ?? null,
  };
}

/** Changes the fields given (`frameAncestors` replaces the list; a theme field set to null goes back to the default). */
export async function updatePortalSettings(q: Queryable, applicationId: string, input: unknown): Promise<PortalSettings> {
  const valid = parseOrThrow(portalSettingsInputSchema, input ?? {}, "portal settings");
  const current = await getPortalSettings(q, applicationId);
  const theme = { ...current.theme, ...Object.fromEntries(Object.entries(valid.theme ?? {}).filter(([, v]) => v !== undefined)) } as PortalTheme;
  const frameAncestors = valid.frameAncestors ? [...new Set(valid.frameAncestors.map(normalizeOrigin))] : current.frameAncestors;
  await q.query(
    `INSERT INTO portal_settings (application_id, frame_ancestors, theme_name, theme_logo_url, theme_accent, updated_at)
     VALUES ($1, $2, $3, $4, $5, now())
     ON CONFLICT (application_id) DO UPDATE SET frame_ancestors = EXCLUDED.frame_ancestors, theme_name = EXCLUDED.theme_name,
       theme_logo_url = EXCLUDED.theme_logo_url, theme_accent = EXCLUDED.theme_accent, updated_at = now()`,
    [applicationId, frameAncestors, theme.name, theme.logoUrl, theme.accentColor?.toLowerCase() ?? null],
  );
  return getPortalSettings(q, applicationId);
}

/** The origins allowed to frame an application's portal page: the global ones and its own. */
export async function frameAncestorsOf(q: Queryable, applicationId: string | undefined, global: readonly string[]): Promise<{ origins: string[]; logoUrl: string | null }> {
  if (!applicationId) return { origins: [...global], logoUrl: null };
  const settings = await getPortalSettings(q, applicationId).catch((error: unknown) => {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  });
  return { origins: [...new Set([...global, ...(settings?.frameAncestors ?? [])])], logoUrl: settings?.theme.logoUrl ?? null };
}
