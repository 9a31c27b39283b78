import { http } from "@google-cloud/functions-framework";
import { relayHttp } from "./handlers.js";
import { gcpRuntime } from "./runtime.js";
import { runAsProduction } from "./production.js";

// Before the framework makes its Express app: its own error pages carry no stack trace (production.ts).
runAsProduction();

http("relay", (req, res) => relayHttp(gcpRuntime(), req, res));
