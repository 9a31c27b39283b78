import { http } from "@google-cloud/functions-framework";
import { ingestHttp } from "./handlers.js";
import { topicAndClaimChecks } from "./connections.js";
import { gcpRuntime } from "./runtime.js";

http("ingest", (req, res) => ingestHttp(gcpRuntime(topicAndClaimChecks), req, res));
