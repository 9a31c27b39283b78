import { app } from "@azure/functions";
import { processServiceBusMessage } from "./handlers.js";
import { azureRuntime } from "./runtime.js";

app.serviceBusQueue("processor", {
  connection: "ServiceBusConnection",
  queueName: "%WEBHOOKS_QUEUE_NAME%",
  handler: (message, context) => processServiceBusMessage(azureRuntime(), message, context),
});
