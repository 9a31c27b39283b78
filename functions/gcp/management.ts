import { http } from "@google-cloud/functions-framework";
import { managementHttpWith } from "./managementHttp.js";
import { gcpRuntime } from "./runtime.js";

// No connectors: the management API reads and writes the database only.
http("management", (req, res) => managementHttpWith(() => gcpRuntime(), req, res));
