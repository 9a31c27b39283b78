import { http } from "@google-cloud/functions-framework";
import { migrateHttp } from "./handlers.js";
import { gcpRuntime } from "./runtime.js";

http("migrate", (req, res) => migrateHttp(gcpRuntime(), req, res));
