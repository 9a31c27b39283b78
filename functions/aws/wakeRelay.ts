/**
 * AWS, `relayMode: "scheduled"`: the management function wakes the relay function
 * (`WEBHOOKS_RELAY_FUNCTION`) with an asynchronous Invoke (`InvocationType: Event`, payload
 * `{"wake": true}`, which functions/aws/relay.ts reads as a woken run). Lambda queues the event and
 * answers 202 at once, so the API request never waits for the run. The stack bounds what a burst
 * can start: the relay's reserved concurrency, and an event invoke config that drops a wake-up
 * Lambda could not run within a minute (the scheduled run delivers instead) rather than retrying
 * it for hours. Loaded only by the management function, and only in scheduled mode.
 */
import { InvokeCommand, LambdaClient } from "@aws-sdk/client-lambda";
import { coalescedWaker, type RelayWaker } from "../../shared/cloud/relayWake.js";

export function lambdaRelayWaker(functionName: string, client = new LambdaClient({})): RelayWaker {
  const payload = new TextEncoder().encode(JSON.stringify({ wake: true }));
  return coalescedWaker(async () => {
    const answer = await client.send(new InvokeCommand({ FunctionName: functionName, InvocationType: "Event", Payload: payload }));
    if (answer.StatusCode !== 202) throw new Error(`Lambda answered ${answer.StatusCode} to the relay's wake-up (202 expected for an asynchronous Invoke of ${functionName})`);
  });
}
