import type { PlatformContext } from "../../platform.js";
import type { Route } from "../router.js";

export function outboundRoutes(_ctx: PlatformContext): Route[] {
  return [];
}
