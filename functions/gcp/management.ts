import { http } from "@google-cloud/functions-framework";
import { managementHttpWith } from "./managementHttp.js";
import { gcpRuntime } from "./runtime.js";
import { runAsProduction } from "./production.js";
import { withTelemetry } from "../telemetry.js";
import { GCP_TELEMETRY } from "./telemetry.js";

// Before the framework makes its Express app: its own error pages carry no stack trace (production.ts).
runAsProduction();

// No connectors: the management API reads and writes the database only.
http("management", withTelemetry(GCP_TELEMETRY, (req, res) => managementHttpWith(() => gcpRuntime(), req, res)));
