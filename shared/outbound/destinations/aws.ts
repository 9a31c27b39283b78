/**
 * Settings shared by the AWS destinations (sqs.ts, sns.ts, eventbridge.ts): the client's region,
 * endpoint and credentials, and the request handler's timeouts. No SDK is imported here.
 */
import type { OpenDestination } from "./config.js";

/** Client settings for one AWS destination: its own key when given, else the relay's role (the SDK's default chain). */
export function awsClientConfig(destination: OpenDestination & { region: string; endpoint: string | null }): Record<string, unknown> {
  const credentials = destination.credentials && "accessKeyId" in destination.credentials
    ? {
      accessKeyId: destination.credentials.accessKeyId,
      secretAccessKey: destination.secrets.secretAccessKey!,
      ...(destination.secrets.sessionToken ? { sessionToken: destination.secrets.sessionToken } : {}),
    }
    : undefined;
  return {
    region: destination.region,
    ...(destination.endpoint ? { endpoint: destination.endpoint } : {}),
    ...(credentials ? { credentials } : {}),
    // The relay retries with its own backoff, breaker and attempt log: one SDK attempt per delivery
    // attempt, so a throttled send is recorded and spaced out rather than retried blind inside it.
    maxAttempts: 1,
  };
}

/** SQS and SNS message attributes: every value a String attribute. */
export function stringAttributes(attributes: Record<string, string>): Record<string, { DataType: "String"; StringValue: string }> {
  const out: Record<string, { DataType: "String"; StringValue: string }> = {};
  for (const [name, value] of Object.entries(attributes)) out[name] = { DataType: "String", StringValue: value };
  return out;
}
