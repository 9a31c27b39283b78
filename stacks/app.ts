/**
 * Builds the cdktf App with the three stacks. Used by `stacks/main.ts` (the cdktf app), the
 * comparison, the security check and the tests, so all of them look at the same stacks.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { App } from "cdktf";
import { type ArtifactOptions, type Cloud, resolveArtifacts } from "./artifacts.js";
import { AwsWebhooksStack } from "./aws/awsWebhooksStack.js";
import { AzureWebhooksStack } from "./azure/azureWebhooksStack.js";
import { loadStackConfig, readContext, type StackConfig } from "./config.js";
import { GcpWebhooksStack } from "./gcp/gcpWebhooksStack.js";

export const CLOUDS: readonly Cloud[] = ["aws", "azure", "gcp"];

/** Stack names, as `cdktf deploy <stack>` expects them. */
export const STACK_NAMES: Record<Cloud, string> = { aws: "webhooks-aws", azure: "webhooks-azure", gcp: "webhooks-gcp" };

export interface BuildOptions {
  outdir?: string;
  /** Default: from cdktf.json context and WEBHOOKS_* variables. */
  config?: StackConfig;
  artifacts?: ArtifactOptions;
  /** Which stacks to build. Default: all three. */
  clouds?: readonly Cloud[];
}

/** Creates the App and its stacks; call `app.synth()` to write Terraform JSON. */
export function buildApp(options: BuildOptions = {}): App {
  const config = options.config ?? loadStackConfig(readContext());
  const placeholders = options.artifacts?.placeholders ?? process.env.WEBHOOKS_SYNTH_PLACEHOLDERS === "1";
  const artifactOptions = { ...options.artifacts, placeholders };
  const clouds = options.clouds ?? CLOUDS;
  // Resolve every artifact first, so a missing build fails before any construct is created.
  const artifacts = Object.fromEntries(clouds.map((c) => [c, resolveArtifacts(c, artifactOptions)]));
  const app = new App({ outdir: options.outdir, stackTraces: false });
  if (clouds.includes("aws")) new AwsWebhooksStack(app, STACK_NAMES.aws, { config, artifacts: artifacts.aws! });
  if (clouds.includes("azure")) new AzureWebhooksStack(app, STACK_NAMES.azure, { config, artifacts: artifacts.azure! });
  if (clouds.includes("gcp")) new GcpWebhooksStack(app, STACK_NAMES.gcp, { config, artifacts: artifacts.gcp! });
  return app;
}

/** Terraform JSON of one synthesized stack. */
export type TerraformJson = {
  resource?: Record<string, Record<string, Record<string, unknown>>>;
  data?: Record<string, Record<string, Record<string, unknown>>>;
  output?: Record<string, { value: unknown }>;
  provider?: Record<string, unknown>;
  variable?: Record<string, unknown>;
};

/** Synthesizes into `outdir` and reads back each stack's `cdk.tf.json`. */
export function synthesize(options: BuildOptions & { outdir: string }): Record<Cloud, TerraformJson> {
  const app = buildApp(options);
  app.synth();
  const result = {} as Record<Cloud, TerraformJson>;
  for (const cloud of options.clouds ?? CLOUDS) {
    result[cloud] = JSON.parse(readFileSync(join(options.outdir, "stacks", STACK_NAMES[cloud], "cdk.tf.json"), "utf8")) as TerraformJson;
  }
  return result;
}
