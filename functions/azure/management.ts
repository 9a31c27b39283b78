import { app, type HttpRequest } from "@azure/functions";
import { managementHttpWith } from "./managementHttp.js";
import { azureRuntime } from "./runtime.js";
import { withTelemetry } from "../telemetry.js";
import { AZURE_TELEMETRY } from "./telemetry.js";

/**
 * The registered handler, exported too so the bundle can be driven outside the host. Its runtime
 * has no connectors: the management API reads and writes the database, and in scheduled mode
 * sends the relay's wake-ups (managementHttp.ts, the Service Bus client loaded on the first).
 */
export const handler = withTelemetry(AZURE_TELEMETRY, (request: HttpRequest) => managementHttpWith(() => azureRuntime(), request));

app.http("management", {
  // Every method reaches the API, which answers 405 with `Allow` itself (the host would answer 404).
  methods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
  authLevel: "anonymous", // the API checks its own bearer token
  route: "{*path}",
  handler,
});
