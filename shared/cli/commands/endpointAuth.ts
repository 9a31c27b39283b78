/**
 * The `--auth …` options of `subscriptions create` and `subscriptions update` (issue 29,
 * docs/endpointAuth.md). Secret parts (client secret, password, private key) are read from files,
 * never taken on the command line, where shell history and `ps` would keep them.
 */
import { readFile } from "node:fs/promises";
import { UsageError, type Invocation } from "../command.js";

export const AUTH_OPTIONS = {
  auth: { type: "string" },
  "auth-username": { type: "string" },
  "auth-password-file": { type: "string" },
  "token-url": { type: "string" },
  "client-id": { type: "string" },
  "client-secret-file": { type: "string" },
  scope: { type: "string" },
  audience: { type: "string" },
  "token-param": { type: "string", multiple: true },
  "client-auth": { type: "string" },
  "client-cert": { type: "string" },
  "client-key": { type: "string" },
  "client-ca": { type: "string" },
} as const;

export const AUTH_HELP = `Endpoint authentication (docs/endpointAuth.md; secret parts from files, stored encrypted):
  --auth basic           --auth-username <u> --auth-password-file <path>
  --auth oauth2          client credentials: --token-url <url> --client-id <id>
                         --client-secret-file <path> [--scope <s>] [--audience <a>]
                         [--token-param <name=value>...] [--client-auth basic|body]
  --auth mtls            --client-cert <pem file> --client-key <pem file> [--client-ca <pem file>]
  --auth none            (update only) remove it`;

const KIND_OPTIONS: Record<string, string[]> = {
  basic: ["auth-username", "auth-password-file"],
  oauth2: ["token-url", "client-id", "client-secret-file", "scope", "audience", "token-param", "client-auth"],
  mtls: ["client-cert", "client-key", "client-ca"],
};

async function fileText(inv: Invocation, option: string, trim: boolean): Promise<string> {
  const path = inv.values[option] as string | undefined;
  if (!path) throw new UsageError(`--${option} is required with --auth ${inv.values.auth}.`);
  try {
    const text = await readFile(path, "utf8");
    return trim ? text.trim() : text;
  } catch (error) {
    throw new UsageError(`Cannot read --${option} ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`);
  }
}

const required = (inv: Invocation, option: string): string => {
  const v = inv.values[option] as string | undefined;
  if (!v) throw new UsageError(`--${option} is required with --auth ${inv.values.auth}.`);
  return v;
};

/**
 * The `auth` field the options describe: undefined without --auth, null for `--auth none`
 * (when `allowNone`). Options of another kind than --auth's are refused.
 */
export async function authOf(inv: Invocation, allowNone: boolean): Promise<Record<string, unknown> | null | undefined> {
  const kind = inv.values.auth as string | undefined;
  const given = Object.values(KIND_OPTIONS).flat().filter((o) => inv.values[o] !== undefined);
  if (kind === undefined) {
    if (given.length > 0) throw new UsageError(`--${given[0]} needs --auth (basic, oauth2 or mtls).`);
    return undefined;
  }
  if (kind === "none" && allowNone) {
    if (given.length > 0) throw new UsageError(`--auth none takes no other auth option (got --${given[0]}).`);
    return null;
  }
  const own = KIND_OPTIONS[kind];
  if (!own) throw new UsageError(`--auth must be basic, oauth2 or mtls${allowNone ? " (or none)" : ""}; got ${JSON.stringify(kind)}.`);
  const foreign = given.find((o) => !own.includes(o));
  if (foreign) throw new UsageError(`--${foreign} does not apply to --auth ${kind}.`);
  switch (kind) {
    case "basic":
      return { kind: "basic", username: required(inv, "auth-username"), password: await fileText(inv, "auth-password-file", true) };
    case "oauth2": {
      const parameters: Record<string, string> = {};
      for (const p of (inv.values["token-param"] as string[] | undefined) ?? []) {
        const eq = p.indexOf("=");
        if (eq <= 0) throw new UsageError(`--token-param must be name=value; got ${JSON.stringify(p)}.`);
        parameters[p.slice(0, eq)] = p.slice(eq + 1);
      }
      const clientAuth = inv.values["client-auth"] as string | undefined;
      if (clientAuth !== undefined && clientAuth !== "basic" && clientAuth !== "body") throw new UsageError(`--client-auth must be basic or body; got ${JSON.stringify(clientAuth)}.`);
      return {
        kind: "oauth2ClientCredentials", tokenUrl: required(inv, "token-url"), clientId: required(inv, "client-id"), clientSecret: await fileText(inv, "client-secret-file", true),
        ...(inv.values.scope !== undefined ? { scope: inv.values.scope } : {}),
        ...(inv.values.audience !== undefined ? { audience: inv.values.audience } : {}),
        ...(Object.keys(parameters).length > 0 ? { parameters } : {}),
        ...(clientAuth ? { clientAuthentication: clientAuth } : {}),
      };
    }
    default:
      return {
        kind: "mtls", certificate: await fileText(inv, "client-cert", false), privateKey: await fileText(inv, "client-key", false),
        ...(inv.values["client-ca"] !== undefined ? { ca: await fileText(inv, "client-ca", false) } : {}),
      };
  }
}

interface PublicAuth { kind: string; username?: string; tokenUrl?: string; clientId?: string; scope?: string | null; certificate?: { subject: string; notAfter: string; expired: boolean; expiresSoon: boolean } }

/** One line saying how the relay authenticates to the endpoint (no secret: the API never answers one). */
export function describeAuth(auth: PublicAuth | null | undefined): string {
  if (!auth) return "none";
  if (auth.kind === "basic") return `basic (user ${auth.username})`;
  if (auth.kind === "oauth2ClientCredentials") return `oauth2 client credentials (client ${auth.clientId} at ${auth.tokenUrl}${auth.scope ? `, scope ${auth.scope}` : ""})`;
  if (auth.kind === "mtls" && auth.certificate) {
    const c = auth.certificate;
    return `mtls (${c.subject}, valid until ${c.notAfter}${c.expired ? ", EXPIRED" : c.expiresSoon ? ", expires soon" : ""})`;
  }
  return auth.kind;
}
