import { app } from "@azure/functions";
import { relayTimer } from "./handlers.js";
import { azureRuntime } from "./runtime.js";

app.timer("relay", {
  schedule: "%WEBHOOKS_RELAY_SCHEDULE%",
  runOnStartup: false,
  handler: async (timer) => { await relayTimer(azureRuntime(), timer); },
});
