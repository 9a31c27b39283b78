/**
 * eventTypeOf (message.ts): the envelope's type read from its head without parsing the body
 * (RabbitMQ's `type` property, EventBridge's default detail-type), the same answer a full parse
 * gives, and a full parse for any other body.
 */
import { describe, expect, it } from "vitest";
import { eventTypeOf } from "../../../shared/outbound/destinations/message.js";

describe("eventTypeOf", () => {
  it("reads the relay's envelope's type, escapes included, as JSON.parse does", () => {
    const bodies = [
      `{"id":"evt_1","type":"order.paid","timestamp":"2026-01-01T00:00:00.000Z","data":{"type":"not this one"}}`,
      `{"id":${JSON.stringify('evt "quoted" \\ back')},"type":"order.paid","data":{}}`,
      `{"id":"evt_2","type":${JSON.stringify('odd "type" \\ é \u2028')},"data":{}}`,
    ];
    for (const body of bodies) expect(eventTypeOf(body)).toBe((JSON.parse(body) as { type: string }).type);
  });

  it("parses any other body: a transformation's own, without a type, or not JSON", () => {
    expect(eventTypeOf(`{"kind":"x","type":"custom.type"}`)).toBe("custom.type");
    expect(eventTypeOf(`{"id":7,"type":"numeric.id"}`)).toBe("numeric.id");
    expect(eventTypeOf(`{"id":"a","data":{}}`)).toBeNull();
    expect(eventTypeOf(`{"id":"a","type":5}`)).toBeNull();
    expect(eventTypeOf("plain text")).toBeNull();
    expect(eventTypeOf(`{"id":"unterminated`)).toBeNull();
  });
});
