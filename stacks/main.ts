/**
 * The cdktf app (`"app"` in cdktf.json): three stacks, one per cloud.
 * `cdktf synth` writes them to cdktf.out; `cdktf deploy webhooks-<cloud>` applies one.
 */
import { ArtifactsMissingError } from "./artifacts.js";
import { buildApp } from "./app.js";
import { StackConfigError } from "./config.js";

try {
  buildApp().synth();
} catch (error) {
  // Known configuration problems get their message only; anything else keeps its stack.
  if (error instanceof StackConfigError || error instanceof ArtifactsMissingError) {
    console.error(`\n${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
