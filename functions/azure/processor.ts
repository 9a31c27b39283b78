import { app, type InvocationContext } from "@azure/functions";
import { processServiceBusMessage } from "./handlers.js";
import { queueAndClaimChecks } from "./claimChecks.js";
import { azureRuntime } from "./runtime.js";
import { withTelemetry } from "../telemetry.js";
import { AZURE_TELEMETRY } from "./telemetry.js";

/** The registered handler, exported too so the bundle can be driven outside the host (bench/functions.ts). */
export const handler = withTelemetry(AZURE_TELEMETRY, (message: unknown, context: InvocationContext) => processServiceBusMessage(azureRuntime(queueAndClaimChecks), message, context));

app.serviceBusQueue("processor", {
  connection: "ServiceBusConnection",
  queueName: "%WEBHOOKS_QUEUE_NAME%",
  handler,
});
