import { http } from "@google-cloud/functions-framework";
import { migrateHttp } from "./migrateHttp.js";
import { gcpRuntime } from "./runtime.js";
import { runAsProduction } from "./production.js";

// Before the framework makes its Express app: its own error pages carry no stack trace (production.ts).
runAsProduction();

http("migrate", (req, res) => migrateHttp(gcpRuntime(), req, res));
