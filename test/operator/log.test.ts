/** The logger's second line of defence: keys that carry secrets or payloads are redacted. */
import { Writable } from "node:stream";
import { expect, it } from "vitest";
import { createLogger } from "../../shared/telemetry/log.js";
import { safeAttributes } from "../../shared/telemetry/telemetry.js";

it("redacts payloads, secrets, signatures, tokens and header maps, top level and one level down", async () => {
  let out = "";
  const destination = new Writable({ write(chunk, _e, done) { out += chunk.toString(); done(); } });
  const logger = createLogger({ level: "info", destination });
  logger.info({
    payload: "P1", body: "P2", secret: "S1", secrets: ["S2"], signature: "G1", token: "T1", rawBody: "P3",
    headers: { "webhook-signature": "G2", authorization: "Bearer T2" },
    request: { body: "P4", headers: { "stripe-signature": "G3" }, signingSecret: "S3" },
    deliveryId: "kept-1", reason: "kept-2",
  }, "hello");
  logger.flush();
  await new Promise((r) => setTimeout(r, 50));
  for (const leaked of ["P1", "P2", "P3", "P4", "S1", "S2", "S3", "G1", "G2", "G3", "T1", "T2"]) expect(out).not.toContain(`"${leaked}"`);
  expect(out).not.toContain("Bearer");
  expect(out).toContain("kept-1");
  expect(out).toContain("kept-2");
  expect(out).toContain("[redacted]");
});

it("safeAttributes drops secret-looking keys and long strings, keeps ids and numbers", () => {
  expect(safeAttributes({ "webhooks.delivery.id": "evt:sub", "webhook.signature": "v1,x", "http.request.body": "{}", secretKey: "s", count: 3, ok: true, long: "x".repeat(201), missing: undefined }))
    .toEqual({ "webhooks.delivery.id": "evt:sub", count: 3, ok: true });
});
