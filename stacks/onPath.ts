/** Finding an executable the way a shell does, on the PATH of a given environment. */
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

/** Finds an executable on the PATH of `env`. */
export function onPath(name: string, env: Record<string, string | undefined>): string | undefined {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}
