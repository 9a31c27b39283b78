/**
 * A built function directory as a Terraform asset: a deterministic zip (see zipDirectory.ts)
 * copied into the stack's output, referenced by path from the function resource.
 */
import { AssetType, TerraformAsset } from "cdktf";
import type { Construct } from "constructs";
import { zipDirectory } from "./zipDirectory.js";

export function functionAsset(scope: Construct, id: string, artifactDir: string): TerraformAsset {
  return new TerraformAsset(scope, id, { path: zipDirectory(artifactDir), type: AssetType.FILE });
}
