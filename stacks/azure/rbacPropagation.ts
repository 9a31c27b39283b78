/**
 * A pause after role assignments, before anything relies on them. Azure RBAC is eventually
 * consistent: a new assignment can take minutes to reach Key Vault's data plane, so a secret
 * written (or a Key Vault reference resolved) right after its role assignment is refused with 403
 * on a first apply. Azure's verified Key Vault module waits the same way
 * (`wait_for_rbac_before_secret_operations`, a `time_sleep` from hashicorp/time).
 *
 * cdktf has no prebuilt bindings for hashicorp/time; the two classes below declare the provider
 * (so `required_providers` names it) and the one resource we use, as generated bindings do.
 */
import { TerraformProvider, TerraformResource } from "cdktf";
import { Construct } from "constructs";

/** How long Terraform waits after the role assignments it depends on. */
export const RBAC_PROPAGATION_SECONDS = 120;

class TimeProvider extends TerraformProvider {
  constructor(scope: Construct, id: string) {
    super(scope, id, { terraformResourceType: "time", terraformProviderSource: "hashicorp/time", terraformGeneratorMetadata: { providerName: "time", providerVersionConstraint: "~> 0.12" } });
  }
  protected override synthesizeAttributes(): Record<string, unknown> {
    return {};
  }
}

class TimeSleep extends TerraformResource {
  constructor(scope: Construct, id: string, private readonly createDuration: string, dependsOn: TerraformResource[]) {
    super(scope, id, { terraformResourceType: "time_sleep", terraformGeneratorMetadata: { providerName: "time" }, dependsOn });
  }
  protected override synthesizeAttributes(): Record<string, unknown> {
    return { create_duration: this.createDuration };
  }
}

/**
 * `new RbacPropagation(scope, "wait", [assignment…]).done`: depend on `done` to run after the
 * assignments have had time to propagate.
 */
export class RbacPropagation extends Construct {
  readonly done: TerraformResource;

  constructor(scope: Construct, id: string, assignments: TerraformResource[]) {
    super(scope, id);
    this.done = new TimeSleep(this, "sleep", `${RBAC_PROPAGATION_SECONDS}s`, assignments);
  }

  /** The stack's one declaration of hashicorp/time (call once per stack). */
  static declareProvider(scope: Construct): void {
    new TimeProvider(scope, "time");
  }
}
