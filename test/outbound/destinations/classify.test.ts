/**
 * Issue 31, item 2: each service's refusals classified as retryable or permanent (classify.ts), on
 * the error shapes the SDKs throw (the contract suite shows the ones the stand-ins can produce:
 * not_found, throttled on SQS, unroutable, no answer; these are the others).
 */
import { describe, expect, it } from "vitest";
import { classifyAmqpError, classifyAwsError, classifyGrpcError, classifyServiceBusError } from "../../../shared/outbound/destinations/classify.js";

const aws = (name: string, status?: number, fault?: "client" | "server") => Object.assign(new Error(`${name} happened`), { name, $fault: fault, $metadata: { httpStatusCode: status } });
const pick = ({ result, errorClass }: { result: string; errorClass: string }) => [result, errorClass];

describe("destination error classification", () => {
  it("AWS (SQS, SNS, EventBridge): throttling retried; access, missing and invalid dead-lettered; 5xx and the network retried", () => {
    expect(pick(classifyAwsError(aws("ThrottlingException", 400, "client")))).toEqual(["retryable", "throttled"]);
    expect(pick(classifyAwsError(aws("RequestThrottled", 403, "client")))).toEqual(["retryable", "throttled"]);
    expect(pick(classifyAwsError(aws("AccessDenied", 403, "client")))).toEqual(["permanent", "access_denied"]);
    expect(pick(classifyAwsError(aws("InvalidClientTokenId", 403, "client")))).toEqual(["permanent", "access_denied"]);
    expect(pick(classifyAwsError(aws("KMSAccessDeniedException", 400, "client")))).toEqual(["permanent", "access_denied"]);
    expect(pick(classifyAwsError(aws("AWS.SimpleQueueService.NonExistentQueue", 400, "client")))).toEqual(["permanent", "not_found"]);
    expect(pick(classifyAwsError(aws("NotFound", 404, "client")))).toEqual(["permanent", "not_found"]);
    expect(pick(classifyAwsError(aws("InvalidParameterValue", 400, "client")))).toEqual(["permanent", "invalid_message"]);
    expect(pick(classifyAwsError(aws("MessageTooLong", 400, "client")))).toEqual(["permanent", "invalid_message"]);
    expect(pick(classifyAwsError(aws("SomethingNew", 400, "client")))).toEqual(["permanent", "rejected"]);
    expect(pick(classifyAwsError(aws("InternalError", 500, "server")))).toEqual(["retryable", "service_unavailable"]);
    expect(pick(classifyAwsError(aws("ServiceUnavailable", 503)))).toEqual(["retryable", "service_unavailable"]);
    expect(pick(classifyAwsError(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" })))).toEqual(["retryable", "connection_refused"]);
    expect(pick(classifyAwsError(Object.assign(new Error("aborted"), { name: "AbortError" })))).toEqual(["retryable", "timeout"]);
    // A PutEvents entry's ErrorCode, as eventbridge.ts passes it.
    expect(pick(classifyAwsError({ name: "ThrottlingException", message: "Rate exceeded" }))).toEqual(["retryable", "throttled"]);
    expect(pick(classifyAwsError({ name: "InternalFailure", message: "try again" }))).toEqual(["retryable", "service_unavailable"]);
    expect(pick(classifyAwsError({ name: "AccessDeniedException", message: "not allowed" }))).toEqual(["permanent", "access_denied"]);
  });

  it("Service Bus: busy and quota retried (busy after 10 s); unauthorized, missing, too large dead-lettered", () => {
    const sb = (code: string, retryable = false) => Object.assign(new Error(code), { name: "ServiceBusError", code, retryable });
    expect(classifyServiceBusError(sb("ServiceBusy", true))).toMatchObject({ result: "retryable", errorClass: "throttled", retryAfterSeconds: 10 });
    expect(pick(classifyServiceBusError(sb("QuotaExceeded")))).toEqual(["retryable", "throttled"]);
    expect(pick(classifyServiceBusError(sb("UnauthorizedAccess")))).toEqual(["permanent", "access_denied"]);
    expect(pick(classifyServiceBusError(sb("MessagingEntityNotFound")))).toEqual(["permanent", "not_found"]);
    expect(pick(classifyServiceBusError(sb("MessageSizeExceeded")))).toEqual(["permanent", "invalid_message"]);
    expect(pick(classifyServiceBusError(sb("ServiceTimeout", true)))).toEqual(["retryable", "service_unavailable"]);
    expect(pick(classifyServiceBusError(sb("MessagingEntityDisabled")))).toEqual(["retryable", "entity_disabled"]);
    expect(pick(classifyServiceBusError(sb("SomethingNew", false)))).toEqual(["permanent", "rejected"]);
    expect(pick(classifyServiceBusError(sb("SomethingNew", true)))).toEqual(["retryable", "destination_error"]);
  });

  it("Pub/Sub (gRPC status): RESOURCE_EXHAUSTED and UNAVAILABLE retried; PERMISSION_DENIED, NOT_FOUND, INVALID_ARGUMENT dead-lettered", () => {
    const grpc = (code: number) => Object.assign(new Error(`status ${code}`), { code });
    expect(pick(classifyGrpcError(grpc(8)))).toEqual(["retryable", "throttled"]);
    expect(pick(classifyGrpcError(grpc(14)))).toEqual(["retryable", "service_unavailable"]);
    expect(pick(classifyGrpcError(grpc(4)))).toEqual(["retryable", "timeout"]);
    expect(pick(classifyGrpcError(grpc(7)))).toEqual(["permanent", "access_denied"]);
    expect(pick(classifyGrpcError(grpc(16)))).toEqual(["permanent", "access_denied"]);
    expect(pick(classifyGrpcError(grpc(5)))).toEqual(["permanent", "not_found"]);
    expect(pick(classifyGrpcError(grpc(3)))).toEqual(["permanent", "invalid_message"]);
  });

  it("RabbitMQ (AMQP reply codes): 403 and 404 dead-lettered, a forced close or internal error retried, the network retried", () => {
    const amqp = (code: number, text: string) => Object.assign(new Error(`Channel closed by server: ${code} (${text})`), { code });
    expect(pick(classifyAmqpError(amqp(403, "ACCESS-REFUSED")))).toEqual(["permanent", "access_denied"]);
    expect(pick(classifyAmqpError(amqp(404, "NOT-FOUND")))).toEqual(["permanent", "not_found"]);
    expect(pick(classifyAmqpError(amqp(406, "PRECONDITION-FAILED")))).toEqual(["permanent", "invalid_message"]);
    expect(pick(classifyAmqpError(amqp(320, "CONNECTION-FORCED")))).toEqual(["retryable", "service_unavailable"]);
    expect(pick(classifyAmqpError(amqp(541, "INTERNAL-ERROR")))).toEqual(["retryable", "service_unavailable"]);
    expect(pick(classifyAmqpError(new Error("Handshake terminated by server: 403 (ACCESS-REFUSED) with message \"ACCESS_REFUSED - Login was refused\"")))).toEqual(["permanent", "access_denied"]);
    expect(pick(classifyAmqpError(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })))).toEqual(["retryable", "connection_refused"]);
  });
});
