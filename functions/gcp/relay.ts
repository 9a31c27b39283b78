import { http } from "@google-cloud/functions-framework";
import { relayHttp } from "./handlers.js";
import { gcpRuntime } from "./runtime.js";

http("relay", (req, res) => relayHttp(gcpRuntime(), req, res));
