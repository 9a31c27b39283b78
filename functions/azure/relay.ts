import { app, type Timer } from "@azure/functions";
import { relayTimer } from "./handlers.js";
import { azureRuntime } from "./runtime.js";

/** The registered handler, exported too so the bundle can be driven outside the host (bench/functions.ts). */
export const handler = async (timer: Timer) => { await relayTimer(azureRuntime(), timer); };

app.timer("relay", {
  schedule: "%WEBHOOKS_RELAY_SCHEDULE%",
  runOnStartup: false,
  handler,
});
