/**
 * Settings of a cloud function, read once at cold start from the environment (which the stacks
 * fill from the cloud's secret store: Key Vault references on Azure, Secret Manager environment
 * secrets on GCP; on AWS the function reads Secrets Manager itself, see functions/aws/runtime.ts).
 * A missing or bad setting stops the cold start with a message naming it.
 */
import * as z from "zod/mini";
import { safeParse } from "../safeParse.js";

export class FunctionConfigError extends Error {
  override name = "FunctionConfigError";
}

/**
 * Validates `env` against `shape`; throws FunctionConfigError naming every missing or bad
 * variable and what it should hold.
 */
export function readSettings<T extends z.core.$ZodShape>(shape: T, env: Record<string, string | undefined>, where: string): z.infer<z.ZodMiniObject<T>> {
  const picked: Record<string, string> = {};
  for (const key of Object.keys(shape)) {
    const value = env[key];
    if (value !== undefined && value !== "") picked[key] = value;
  }
  const parsed = safeParse(z.object(shape), picked);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => {
      const name = String(i.path[0]);
      return picked[name] === undefined ? `- ${name} is not set (${i.message})` : `- ${name}: ${i.message}`;
    });
    throw new FunctionConfigError(`The ${where} function cannot start:\n${lines.join("\n")}\nSet these in the function's settings (the stacks do; see docs/functions.md).`);
  }
  return parsed.data;
}

export const poolSize = z._default(z.coerce.number().check(z.int(), z.gte(1), z.lte(20)), 2);

/** A path prefix such as `/api` (letters, digits, `-`, `_`, `.`, `/`), where an ingress mounts the management API. */
export const managementBasePath = z.string().check(z.regex(/^\/?[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*\/?$/, "a path prefix such as /api"));

/**
 * How the relay runs (stack key `relayMode`): `listening` (the default) keeps each scheduled run
 * listening (LISTEN/NOTIFY and the poll backstop) until close to its budget, runs overlapping so
 * one always listens; `scheduled` drains what is due and stops when idle, and the management
 * function wakes a run when it commits something to send. The stacks always set it (their
 * default: `listening`); a function started without it drains as before (`scheduled`).
 */
export const relayMode = z._default(z.enum(["listening", "scheduled"]), "scheduled");
export type RelayMode = "listening" | "scheduled";
