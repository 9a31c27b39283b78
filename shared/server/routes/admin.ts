import type { PlatformContext } from "../../platform.js";
import type { Route } from "../router.js";

export function adminRoutes(_ctx: PlatformContext): Route[] {
  return [];
}
