import { http } from "@google-cloud/functions-framework";
import { processPush } from "./handlers.js";
import { topicAndClaimChecks } from "./claimChecks.js";
import { gcpRuntime } from "./runtime.js";
import { runAsProduction } from "./production.js";
import { withTelemetry } from "../telemetry.js";
import { GCP_TELEMETRY } from "./telemetry.js";

// Before the framework makes its Express app: its own error pages carry no stack trace (production.ts).
runAsProduction();

http("processor", withTelemetry(GCP_TELEMETRY, (req, res) => processPush(gcpRuntime(topicAndClaimChecks), req, res)));
