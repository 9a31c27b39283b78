import { app, type Timer } from "@azure/functions";
import { relayTimer } from "./relayTimer.js";
import { azureRuntime } from "./runtime.js";

/**
 * The registered handler, exported too so the bundle can be driven outside the host
 * (bench/functions.ts). Its runtime has no connectors: the relay never sends to the queue or reads
 * a claim-check, so its bundle carries neither client.
 */
export const handler = async (timer: Timer) => { await relayTimer(azureRuntime(), timer); };

app.timer("relay", {
  schedule: "%WEBHOOKS_RELAY_SCHEDULE%",
  runOnStartup: false,
  handler,
});
