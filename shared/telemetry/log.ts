import { pino, type Logger } from "pino";

/**
 * Structured JSON logs. Paths that could carry secrets or payloads are redacted at the source;
 * the rule remains: never pass a payload, a secret or a signature to a log call.
 */
export function createLogger(options: { level?: string; name?: string; destination?: NodeJS.WritableStream } = {}): Logger {
  return pino(
    {
      name: options.name ?? "webhooks",
      level: options.level ?? process.env.LOG_LEVEL ?? "info",
      redact: {
        paths: [
          "secret", "secrets", "*.secret", "*.secrets", "signature", "*.signature", "payload", "*.payload", "body", "*.body",
          "headers.authorization", "authorization",
          // Whole header maps carry signatures (`webhook-signature`, `stripe-signature`, …) and tokens.
          "headers", "*.headers", "token", "*.token", "rawBody", "*.rawBody", "signingSecret", "*.signingSecret",
        ],
        censor: "[redacted]",
      },
    },
    (options.destination as pino.DestinationStream | undefined) ?? pino.destination({ sync: false }),
  );
}

export type { Logger };
