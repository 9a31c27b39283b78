// The Lambda Node.js runtime, as far as a wiring test needs it: loads the bundle the way Lambda
// reads a function's `handler` attribute (`index.handler`: the export `handler` of
// `<bundle>/index.mjs`), then calls it with each event the test sends and a context whose
// getRemainingTimeInMillis counts down from the function's `timeout`. It does not model
// freezing between invocations, memory limits or the runtime API.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { serve } from "../support/rpc.mjs";

const [bundleDir, handlerAttribute, timeoutSeconds, functionName] = process.argv.slice(2);
const dot = handlerAttribute?.lastIndexOf(".") ?? -1;
if (dot <= 0) throw new Error(`aws driver: handler attribute ${JSON.stringify(handlerAttribute)} is not <module>.<export>`);
const file = join(bundleDir, `${handlerAttribute.slice(0, dot)}.mjs`);
if (!existsSync(file)) throw new Error(`Runtime.ImportModuleError: ${file} does not exist (handler ${handlerAttribute})`);
const module = await import(pathToFileURL(file).href);
const handler = module[handlerAttribute.slice(dot + 1)];
if (typeof handler !== "function") throw new Error(`Runtime.HandlerNotFound: ${handlerAttribute} is undefined or not exported`);

let requests = 0;
serve(async (kind, event) => {
  if (kind !== "invoke") throw new Error(`aws driver: unknown kind ${kind}`);
  const deadline = Date.now() + Number(timeoutSeconds) * 1000;
  const context = {
    functionName,
    awsRequestId: `wiring-${++requests}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
  return handler(event, context);
});
