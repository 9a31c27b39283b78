import { http } from "@google-cloud/functions-framework";
import { ingestHttp } from "./handlers.js";
import { topicAndClaimChecks } from "./claimChecks.js";
import { gcpRuntime } from "./runtime.js";
import { runAsProduction } from "./production.js";
import { withTelemetry } from "../telemetry.js";
import { GCP_TELEMETRY } from "./telemetry.js";

// Before the framework makes its Express app: its own error pages carry no stack trace (production.ts).
runAsProduction();

http("ingest", withTelemetry(GCP_TELEMETRY, (req, res) => ingestHttp(gcpRuntime(topicAndClaimChecks), req, res)));
