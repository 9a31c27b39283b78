import { app, type HttpRequest } from "@azure/functions";
import { ingestHttp } from "./handlers.js";
import { queueAndClaimChecks } from "./claimChecks.js";
import { azureRuntime } from "./runtime.js";
import { withTelemetry } from "../telemetry.js";
import { AZURE_TELEMETRY } from "./telemetry.js";

/** The registered handler, exported too so the bundle can be driven outside the host (bench/functions.ts). */
export const handler = withTelemetry(AZURE_TELEMETRY, (request: HttpRequest) => ingestHttp(azureRuntime(queueAndClaimChecks), request));

app.http("ingest", {
  methods: ["POST"],
  authLevel: "anonymous", // the partner's signature is the authentication
  route: "webhooks/{partner}",
  handler,
});
