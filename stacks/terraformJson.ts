/**
 * Reading synthesized Terraform JSON: the resources of a type, the construct path (and so the
 * component) each came from. Shared by the comparison, the security check and the tests.
 */
import type { TerraformJson } from "./app.js";

export interface SynthResource {
  type: string;
  /** Terraform logical name, e.g. `queue_dlq_441322FF`. */
  name: string;
  /** Construct path, e.g. `webhooks-aws/queue/dlq`. */
  path: string;
  /** The component (top-level construct id under the stack), e.g. `queue`. */
  component: string;
  body: Record<string, unknown>;
}

/** Every resource of the stack, in synthesized order. */
export function allResources(json: TerraformJson): SynthResource[] {
  const out: SynthResource[] = [];
  for (const [type, byName] of Object.entries(json.resource ?? {})) {
    for (const [name, body] of Object.entries(byName)) {
      const path = (body["//"] as { metadata?: { path?: string } } | undefined)?.metadata?.path ?? name;
      out.push({ type, name, path, component: path.split("/")[1] ?? "stack", body });
    }
  }
  return out;
}

/** Resources of one type. */
export function resourcesOf(json: TerraformJson, type: string): SynthResource[] {
  return allResources(json).filter((r) => r.type === type);
}

/** The one resource of a type whose construct path ends with `suffix`; throws if not exactly one. */
export function resourceAt(json: TerraformJson, type: string, suffix: string): SynthResource {
  const found = resourcesOf(json, type).filter((r) => r.path.endsWith(suffix));
  if (found.length !== 1) {
    throw new Error(`expected one ${type} at …${suffix}, found ${found.length} (${resourcesOf(json, type).map((r) => r.path).join(", ")})`);
  }
  return found[0]!;
}

/** `${aws_sqs_queue.queue_dlq_441322FF.arn}` → true when `value` references that resource. */
export function references(value: unknown, resource: SynthResource, attribute?: string): boolean {
  const ref = `${resource.type}.${resource.name}${attribute ? `.${attribute}` : ""}`;
  return typeof value === "string" && value.includes(ref);
}

/** The first element of a block that Terraform JSON may hold as an object or a one-item list. */
export function block(value: unknown): Record<string, unknown> {
  const first = Array.isArray(value) ? value[0] : value;
  return (first ?? {}) as Record<string, unknown>;
}
