import { http } from "@google-cloud/functions-framework";
import { processPush } from "./handlers.js";
import { topicAndClaimChecks } from "./connections.js";
import { gcpRuntime } from "./runtime.js";

http("processor", (req, res) => processPush(gcpRuntime(topicAndClaimChecks), req, res));
