/**
 * What a queue service's refusal means for a delivery (docs/destinations.md#errors), the
 * counterpart of the HTTP transport's status classes:
 *
 * | class | result | e.g. |
 * |---|---|---|
 * | throttled | retryable | AWS ThrottlingException / 429, Service Bus ServerBusy / QuotaExceeded, gRPC RESOURCE_EXHAUSTED, a blocked AMQP connection |
 * | service_unavailable | retryable | 5xx, InternalError, UNAVAILABLE, ServiceTimeout, AMQP 320/541 |
 * | timeout, connection_refused, connection_reset, dns_failure, tls_error, network_* | retryable | no answer (transport.ts's classes) |
 * | unroutable | retryable | AMQP mandatory publish returned: no queue bound (yet) |
 * | access_denied | permanent | AccessDenied, InvalidClientTokenId, UnauthorizedAccess, PERMISSION_DENIED, AMQP 403 |
 * | not_found | permanent | NonExistentQueue, NotFound, MessagingEntityNotFound, NOT_FOUND, AMQP 404 |
 * | invalid_message | permanent | InvalidParameterValue, MessageTooLong, MessageSizeExceeded, INVALID_ARGUMENT, AMQP 406 |
 * | rejected | permanent | another client-side (4xx) refusal |
 *
 * Pure functions on the errors' documented fields (name, code, status, $metadata), so they need no
 * SDK loaded and are tested on their own.
 */
import { classifyError } from "../transport.js";
import type { SendFailure } from "./message.js";

const retryable = (errorClass: string, detail: string, retryAfterSeconds: number | null = null): SendFailure => ({ result: "retryable", errorClass, detail, retryAfterSeconds });
const permanent = (errorClass: string, detail: string): SendFailure => ({ result: "permanent", errorClass, detail });

const detailOf = (error: unknown): string => {
  const e = error as { name?: string; code?: string | number; message?: string } | undefined;
  const label = e?.code !== undefined && e.code !== e.name ? `${e?.name ?? "Error"} (${e.code})` : e?.name ?? "Error";
  return `${label}: ${e?.message ?? String(error)}`.slice(0, 1000);
};

/** An abort of our deadline (the AbortSignal given to the send). */
const isDeadline = (error: unknown): boolean => {
  const e = error as { name?: string; code?: string } | undefined;
  return e?.name === "AbortError" || e?.name === "AttemptTimeout" || e?.name === "TimeoutError" || e?.code === "ABORT_ERR";
};

/** No answer from the service at all: the transport's network classes, all retryable. */
function networkFailure(error: unknown): SendFailure | null {
  if (isDeadline(error)) return retryable("timeout", detailOf(error));
  const e = error as { code?: unknown; cause?: { code?: unknown } } | undefined;
  const code = typeof e?.code === "string" ? e.code : typeof e?.cause?.code === "string" ? e.cause.code : "";
  if (!/^(E[A-Z]+|ERR_TLS|ERR_SSL|UND_ERR)/.test(code)) return null;
  const errorClass = classifyError(error);
  return retryable(errorClass === "destination_refused" ? "network_error" : errorClass, detailOf(error));
}

const AWS_THROTTLING = new Set([
  "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottled", "RequestThrottledException", "TooManyRequestsException",
  "RequestLimitExceeded", "SlowDown", "KMSThrottlingException", "KMSThrottling", "ProvisionedThroughputExceededException", "TransactionInProgressException",
  "AWS.SimpleQueueService.RequestThrottled", "LimitExceededException",
]);
const AWS_ACCESS = new Set([
  "AccessDenied", "AccessDeniedException", "AuthorizationError", "AuthorizationErrorException", "UnrecognizedClientException", "InvalidClientTokenId",
  "SignatureDoesNotMatch", "ExpiredToken", "ExpiredTokenException", "InvalidAccessKeyId", "MissingAuthenticationToken", "IncompleteSignature",
  "KMSAccessDeniedException", "KMSAccessDenied", "KMSDisabledException", "KMSInvalidStateException", "KMSNotFoundException", "KMSOptInRequired",
  "KmsException", "InvalidSecurity", "CredentialsProviderError", "OptInRequired", "UnauthorizedOperation",
]);
const AWS_NOT_FOUND = new Set([
  "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", "NonExistentQueue", "NotFound", "NotFoundException", "ResourceNotFoundException",
  "EndpointDisabled", "EndpointDisabledException", "QueueDeletedRecently", "AWS.SimpleQueueService.QueueDeletedRecently",
]);
const AWS_INVALID = new Set([
  "InvalidParameterValue", "InvalidParameterValueException", "InvalidParameter", "InvalidParameterException", "InvalidMessageContents",
  "MessageTooLong", "ValidationException", "ValidationError", "InvalidAttributeName", "InvalidAttributeValue", "InvalidBatchEntryId",
  "UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation", "InvalidAddress", "InvalidIdFormat", "InvalidParameterCombination",
  "InvalidArgument", "InvalidEventPatternException", "MalformedDetail", "DetailTooLarge",
]);

/** An @aws-sdk/* v3 error (SQS, SNS, EventBridge), or an EventBridge PutEvents entry's ErrorCode as `{name, message}`. */
export function classifyAwsError(error: unknown): SendFailure {
  const network = networkFailure(error);
  if (network) return network;
  const e = error as { name?: string; Code?: string; code?: string; $fault?: string; $metadata?: { httpStatusCode?: number }; $retryable?: { throttling?: boolean } } | undefined;
  const name = e?.Code ?? e?.name ?? e?.code ?? "";
  const status = e?.$metadata?.httpStatusCode;
  const detail = detailOf(error);
  if (AWS_THROTTLING.has(name) || e?.$retryable?.throttling || status === 429) return retryable("throttled", detail);
  if (AWS_ACCESS.has(name) || status === 401 || status === 403) return permanent("access_denied", detail);
  if (AWS_NOT_FOUND.has(name) || status === 404) return permanent("not_found", detail);
  if (AWS_INVALID.has(name) || status === 413) return permanent("invalid_message", detail);
  if (e?.$fault === "server" || (status !== undefined && status >= 500) || /^(InternalError|InternalFailure|ServiceUnavailable|InternalException|InternalServerError)/.test(name)) {
    return retryable("service_unavailable", detail);
  }
  if (e?.$fault === "client" || (status !== undefined && status >= 400)) return permanent("rejected", detail);
  // No status and no known name: the SDK failed before an answer (its own socket errors are classified above).
  return retryable("destination_error", detail);
}

/** An @azure/service-bus `ServiceBusError` (`code`, `retryable`) or a core-amqp MessagingError. */
export function classifyServiceBusError(error: unknown): SendFailure {
  const network = networkFailure(error);
  if (network) return network;
  const e = error as { code?: string; retryable?: boolean; name?: string } | undefined;
  const code = e?.code ?? "";
  const detail = detailOf(error);
  switch (code) {
    case "ServiceBusy": case "ServerBusyError": case "QuotaExceeded": case "QuotaExceededError":
      return retryable("throttled", detail, code.startsWith("ServiceBusy") || code.startsWith("ServerBusy") ? 10 : null);
    case "UnauthorizedAccess": case "UnauthorizedError":
      return permanent("access_denied", detail);
    case "MessagingEntityNotFound": case "MessagingEntityNotFoundError":
      return permanent("not_found", detail);
    case "MessageSizeExceeded": case "MessageTooLargeError": case "InvalidOperationError": case "ArgumentError": case "ArgumentOutOfRangeError":
      return permanent("invalid_message", detail);
    case "MessagingEntityDisabled": case "MessagingEntityDisabledError":
      // Disabled by its owner, possibly for a while: retried, then dead-lettered.
      return retryable("entity_disabled", detail);
    case "ServiceTimeout": case "ServiceUnavailableError": case "InternalServerError": case "ServiceCommunicationProblem": case "ConnectionLostError": case "OperationTimeoutError": case "GeneralError":
      return retryable("service_unavailable", detail);
  }
  if (/unauthori[sz]ed|sas|token/i.test(code)) return permanent("access_denied", detail);
  if (/NotFound/i.test(code)) return permanent("not_found", detail);
  return e?.retryable === false ? permanent("rejected", detail) : retryable("destination_error", detail);
}

/** A gRPC status error of @google-cloud/pubsub (`code` is the numeric status). */
export function classifyGrpcError(error: unknown): SendFailure {
  const e = error as { code?: unknown } | undefined;
  const detail = detailOf(error);
  switch (typeof e?.code === "number" ? e.code : -1) {
    case 8: return retryable("throttled", detail); // RESOURCE_EXHAUSTED
    case 4: return retryable("timeout", detail); // DEADLINE_EXCEEDED
    case 1: case 2: case 10: case 13: case 14: return retryable("service_unavailable", detail); // CANCELLED, UNKNOWN, ABORTED, INTERNAL, UNAVAILABLE
    case 7: case 16: return permanent("access_denied", detail); // PERMISSION_DENIED, UNAUTHENTICATED
    case 5: return permanent("not_found", detail); // NOT_FOUND
    case 3: case 11: return permanent("invalid_message", detail); // INVALID_ARGUMENT, OUT_OF_RANGE
    case 6: case 9: case 12: return permanent("rejected", detail); // ALREADY_EXISTS, FAILED_PRECONDITION, UNIMPLEMENTED
  }
  return networkFailure(error) ?? retryable("destination_error", detail);
}

/** An amqplib error: a channel or connection closed by the broker carries the AMQP reply code. */
export function classifyAmqpError(error: unknown): SendFailure {
  const network = networkFailure(error);
  if (network) return network;
  const e = error as { code?: unknown; message?: string } | undefined;
  const code = typeof e?.code === "number" ? e.code : Number(/\b(\d{3})\b/.exec(e?.message ?? "")?.[1] ?? NaN);
  const detail = detailOf(error);
  switch (code) {
    case 403: return permanent("access_denied", detail); // ACCESS_REFUSED (also a login refused)
    case 404: return permanent("not_found", detail); // NOT_FOUND: no such exchange
    case 406: case 502: case 503: case 530: case 540: return permanent("invalid_message", detail); // PRECONDITION_FAILED, SYNTAX_ERROR, COMMAND_INVALID, NOT_ALLOWED, NOT_IMPLEMENTED
    case 311: case 312: return permanent("invalid_message", detail); // CONTENT_TOO_LARGE, NO_ROUTE
    case 313: case 320: case 504: case 505: case 506: case 541: return retryable("service_unavailable", detail); // NO_CONSUMERS, CONNECTION_FORCED, CHANNEL_ERROR, UNEXPECTED_FRAME, RESOURCE_ERROR, INTERNAL_ERROR
  }
  if (/ACCESS_REFUSED|ACCESS-REFUSED|Handshake terminated by server: 403/.test(e?.message ?? "")) return permanent("access_denied", detail);
  return retryable("destination_error", detail);
}
