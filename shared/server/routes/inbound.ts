import type { PlatformContext } from "../../platform.js";
import type { Route } from "../router.js";

export function inboundRoutes(_ctx: PlatformContext): Route[] {
  return [];
}
