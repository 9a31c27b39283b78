import { app } from "@azure/functions";
import { ingestHttp } from "./handlers.js";
import { azureRuntime } from "./runtime.js";

app.http("ingest", {
  methods: ["POST"],
  authLevel: "anonymous", // the partner's signature is the authentication
  route: "webhooks/{partner}",
  handler: (request) => ingestHttp(azureRuntime(), request),
});
