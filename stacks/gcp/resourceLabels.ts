/**
 * Labels on every GCP resource that takes them (`app`, `stack`), so billing exports and the
 * console can tell this stack's resources apart. Set after the stack is built, by attribute
 * (`user_labels` where Google named them so, alert policies and notification channels, whose
 * `labels` are settings; `labels` elsewhere),
 * so no construct has to remember them. Cloud SQL keeps its labels inside `settings`: the
 * database construct sets those itself.
 */
import { TerraformResource } from "cdktf";
import type { IConstruct } from "constructs";

export function stackLabels(stackId: string): Record<string, string> {
  return { app: "multicloud-webhooks", stack: stackId };
}

type Labels = Record<string, string> | undefined;

/** Merges `labels` into every resource under `root` whose type has a `labels` or `user_labels` argument. */
export function labelResources(root: IConstruct, labels: Record<string, string>): void {
  for (const node of root.node.findAll()) {
    if (!TerraformResource.isTerraformResource(node)) continue;
    const target = node as unknown as Record<string, unknown>;
    // The generated classes have accessors for every argument of the type (`in` finds them); the
    // getter answers a reference to the attribute, `…Input` what was set.
    // Where a type has both, `labels` is configuration (a notification channel's `email_address`).
    if ("userLabels" in target) target.userLabels = { ...labels, ...(target.userLabelsInput as Labels) };
    else if ("labels" in target) target.labels = { ...labels, ...(target.labelsInput as Labels) };
  }
}
