import { app, type Timer } from "@azure/functions";
import { relayOffsetTimer, relayTimer, relayWoken } from "./relayTimer.js";
import { azureRuntime } from "./runtime.js";
import { withTelemetry } from "../telemetry.js";
import { AZURE_TELEMETRY } from "./telemetry.js";

/**
 * The registered handler, exported too so the bundle can be driven outside the host
 * (bench/functions.ts). Its runtime has no connectors: the relay never sends to the queue or reads
 * a claim-check, so its bundle carries neither client.
 */
export const handler = withTelemetry(AZURE_TELEMETRY, async (timer: Timer) => { await relayTimer(azureRuntime(), timer); });

export const offsetHandler = withTelemetry(AZURE_TELEMETRY, async (timer: Timer) => { await relayOffsetTimer(azureRuntime(), timer); });

app.timer("relay", {
  schedule: "%WEBHOOKS_RELAY_SCHEDULE%",
  runOnStartup: false,
  handler,
});

// Half an interval after "relay": with it, one run always listens (relayTimer.ts).
app.timer("relayOffset", {
  schedule: "%WEBHOOKS_RELAY_OFFSET_SCHEDULE%",
  runOnStartup: false,
  handler: offsetHandler,
});

/** Scheduled mode: a woken run per wake-up the management app sends (relayTimer.ts). */
export const wakeHandler = withTelemetry(AZURE_TELEMETRY, async () => { await relayWoken(azureRuntime()); });

// Registered only where the stack names the queue (scheduled mode): the host refuses a trigger
// whose queue setting is missing.
if (process.env.WEBHOOKS_RELAY_WAKE_QUEUE) {
  app.serviceBusQueue("relayWake", {
    connection: "ServiceBusConnection",
    queueName: "%WEBHOOKS_RELAY_WAKE_QUEUE%",
    handler: wakeHandler,
  });
}
