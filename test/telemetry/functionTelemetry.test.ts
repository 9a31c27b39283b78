/**
 * The cloud functions' telemetry (functions/telemetry.ts and each cloud's exporters), apart from
 * the bundles: which exporter names each cloud takes, AWS's EMF lines (format, units, deltas,
 * histograms), the SigV4 signature on OTLP to an AWS endpoint (checked here with an independent
 * computation of the signature), and which endpoints each cloud signs or authenticates.
 * The bundles themselves: test/functions/bundles.test.ts (nothing loaded at import) and
 * test/wiring/aws.test.ts (one trace across the bundles).
 */
import { createHash, createHmac } from "node:crypto";
import { createServer, type IncomingHttpHeaders } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { metrics } from "@opentelemetry/api";
import { AggregationTemporality, DataPointType, MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { telemetrySettings, TelemetryConfigError } from "../../shared/telemetry/settings.js";
import { recordDeliveryAttempt } from "../../shared/telemetry/telemetry.js";
import { AWS_TELEMETRY } from "../../functions/aws/telemetry.js";
import { AZURE_TELEMETRY } from "../../functions/azure/telemetry.js";
import { GCP_TELEMETRY } from "../../functions/gcp/telemetry.js";
import { awsOtlpEndpoint, cloudWatchUnit, DEFAULT_EMF_NAMESPACE, EmfMetricExporter, postSigned } from "../../functions/aws/telemetryExporters.js";
import { googleHeaders, isGoogleTelemetryApi } from "../../functions/gcp/telemetryExporters.js";
import { functionTelemetry } from "../../functions/telemetry.js";
import { vi } from "vitest";

describe("exporter names per cloud", () => {
  it("AWS takes awsemf, Azure azure_monitor, beside otlp and console; no function offers prometheus (nothing scrapes a function)", () => {
    expect(telemetrySettings({ OTEL_METRICS_EXPORTER: "awsemf" }, AWS_TELEMETRY.extras)?.metrics).toEqual(["awsemf"]);
    expect(telemetrySettings({ OTEL_TRACES_EXPORTER: "azure_monitor", OTEL_METRICS_EXPORTER: "azure_monitor" }, AZURE_TELEMETRY.extras)).toMatchObject({ traces: ["azure_monitor"], metrics: ["azure_monitor"] });
    expect(() => telemetrySettings({ OTEL_METRICS_EXPORTER: "awsemf" }, AZURE_TELEMETRY.extras)).toThrow(/awsemf is not an exporter here; use otlp, console, none, azure_monitor/);
    expect(() => telemetrySettings({ OTEL_METRICS_EXPORTER: "prometheus" }, GCP_TELEMETRY.extras)).toThrow(TelemetryConfigError);
    expect(() => telemetrySettings({ OTEL_METRICS_EXPORTER: "awsemf" })).toThrow(/awsemf is not an exporter here/);
    // Nothing set: nothing on, in every cloud.
    for (const cloud of [AWS_TELEMETRY, AZURE_TELEMETRY, GCP_TELEMETRY]) expect(telemetrySettings({}, cloud.extras)).toBeUndefined();
  });

  it("AWS signs only its own OTLP endpoints (X-Ray, CloudWatch metrics and logs); GCP authenticates only to the Telemetry API", () => {
    expect(awsOtlpEndpoint("https://xray.eu-west-1.amazonaws.com/v1/traces")).toEqual({ service: "xray", region: "eu-west-1" });
    expect(awsOtlpEndpoint("https://monitoring.us-east-1.amazonaws.com/v1/metrics")).toEqual({ service: "monitoring", region: "us-east-1" });
    expect(awsOtlpEndpoint("https://collector.example.com/v1/traces")).toBeUndefined();
    expect(awsOtlpEndpoint("https://xray.eu-west-1.amazonaws.com.example.com/v1/traces")).toBeUndefined();
    expect(awsOtlpEndpoint("not a url")).toBeUndefined();
    expect(isGoogleTelemetryApi("https://telemetry.googleapis.com/v1/traces")).toBe(true);
    expect(isGoogleTelemetryApi("https://telemetry.googleapis.com.example.com/v1/traces")).toBe(false);
    expect(isGoogleTelemetryApi(undefined)).toBe(false);
  });
});

describe("AWS: metrics as CloudWatch EMF", () => {
  const lines: string[] = [];
  let provider: MeterProvider;
  beforeAll(() => {
    const exporter = new EmfMetricExporter({ AggregationTemporality, DataPointType }, (line) => lines.push(line));
    provider = new MeterProvider({ resource: resourceFromAttributes({ "service.namespace": "acme" }), readers: [new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })] });
    metrics.setGlobalMeterProvider(provider);
  });
  afterAll(async () => {
    await provider.shutdown();
    metrics.disable();
  });

  const docs = () => lines.splice(0).map((l) => JSON.parse(l) as Record<string, unknown> & { _aws: { Timestamp: number; CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[] } });

  it("one document per data point: the resource's service.namespace, the pinned name, its unit, its attributes as the dimensions", async () => {
    recordDeliveryAttempt({ outcome: "success", latencyMs: 40 });
    recordDeliveryAttempt({ outcome: "success", latencyMs: 260 });
    await provider.forceFlush();
    const out = docs();
    const attempts = out.find((d) => "webhooks.delivery.attempts" in d)!;
    expect(attempts).toMatchObject({ outcome: "success", "webhooks.delivery.attempts": 2 });
    expect(attempts._aws.CloudWatchMetrics).toEqual([{ Namespace: "acme", Dimensions: [["outcome"]], Metrics: [{ Name: "webhooks.delivery.attempts", Unit: "Count" }] }]);
    expect(Math.abs(attempts._aws.Timestamp - Date.now())).toBeLessThan(60_000);
    const latency = out.find((d) => "webhooks.delivery.latency" in d)!;
    expect(latency._aws.CloudWatchMetrics[0]!.Metrics[0]!.Unit).toBe("Milliseconds");
    // A histogram: EMF's values (each bucket's bound, capped at the largest value) and counts, with min, max, sum, count.
    expect(latency["webhooks.delivery.latency"]).toEqual({ Values: [50, 260], Counts: [1, 1], Min: 40, Max: 260, Count: 2, Sum: 300 });
  });

  it("deltas: the next export counts only what came since (CloudWatch adds up the period's lines)", async () => {
    recordDeliveryAttempt({ outcome: "success", latencyMs: 5 });
    await provider.forceFlush();
    expect(docs().find((d) => "webhooks.delivery.attempts" in d)?.["webhooks.delivery.attempts"]).toBe(1);
  });

  it("units and the default namespace", () => {
    expect([cloudWatchUnit("ms"), cloudWatchUnit("s"), cloudWatchUnit("{entry}"), cloudWatchUnit("By"), cloudWatchUnit("m")]).toEqual(["Milliseconds", "Seconds", "Count", "Bytes", "None"]);
    expect(DEFAULT_EMF_NAMESPACE).toBe("multicloud-webhooks");
  });
});

/** SigV4 (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html), computed here apart from the signer. */
function expectedSignature(method: string, path: string, headers: IncomingHttpHeaders, body: Buffer, secret: string): { signature: string; credential: string } {
  const auth = String(headers.authorization);
  const m = /^AWS4-HMAC-SHA256 Credential=([^,]+), SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) throw new Error(`not a SigV4 Authorization header: ${auth}`);
  const [, credential, signedHeaders] = m;
  const [, date, region, service] = credential!.split("/");
  const canonicalHeaders = signedHeaders!.split(";").map((h) => `${h}:${String(headers[h]).trim()}\n`).join("");
  const hex = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");
  const canonical = [method, path, "", canonicalHeaders, signedHeaders, hex(body)].join("\n");
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ["AWS4-HMAC-SHA256", String(headers["x-amz-date"]), scope, hex(canonical)].join("\n");
  const hmac = (key: string | Buffer, data: string) => createHmac("sha256", key).update(data).digest();
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date!), region!), service!), "aws4_request");
  return { signature: createHmac("sha256", key).update(toSign).digest("hex"), credential: credential! };
}

describe("AWS: OTLP to an AWS endpoint is signed with SigV4", () => {
  it("the Lambda role's credentials from the environment sign the request for the endpoint's service and region; the session token goes along", async () => {
    const seen: { headers: IncomingHttpHeaders; body: Buffer; url: string }[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => { seen.push({ headers: req.headers, body: Buffer.concat(chunks), url: req.url ?? "" }); res.writeHead(200).end(); });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1/traces`;
      const env = { AWS_ACCESS_KEY_ID: "AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", AWS_SESSION_TOKEN: "session-token" };
      const body = new Uint8Array(Buffer.from("otlp bytes"));
      await postSigned(env, url, { service: "xray", region: "eu-west-1" }, body, "application/x-protobuf");
      const [request] = seen;
      expect(request!.body.toString()).toBe("otlp bytes");
      expect(request!.headers["x-amz-security-token"]).toBe("session-token");
      const { signature, credential } = expectedSignature("POST", request!.url, request!.headers, request!.body, env.AWS_SECRET_ACCESS_KEY);
      expect(credential).toMatch(/^AKIDEXAMPLE\/\d{8}\/eu-west-1\/xray\/aws4_request$/);
      expect(String(request!.headers.authorization)).toContain(`Signature=${signature}`);
      // A refusal is an error the SDK logs (and the next flush retries), not silence.
      await expect(postSigned({}, url, { service: "xray", region: "eu-west-1" }, body, "application/x-protobuf")).rejects.toThrow(/No AWS credentials/);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe("telemetry that cannot start does not stop the function", () => {
  it("Azure's exporter without a connection string: logged once, and the function runs without telemetry", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      expect(await functionTelemetry(AZURE_TELEMETRY, { OTEL_TRACES_EXPORTER: "azure_monitor" })).toBeUndefined();
      expect(logged.mock.calls.map((c) => String(c[0]))).toEqual([expect.stringMatching(/telemetry is off: azure_monitor needs APPLICATIONINSIGHTS_CONNECTION_STRING/)]);
    } finally {
      logged.mockRestore();
    }
  });

  it("GCP without Google credentials: the export fails, and the next ones fail at once with the same error instead of asking again", async () => {
    const headers = googleHeaders("hooks-test-project");
    const first = await headers().then(() => undefined, (error: Error) => error);
    // Outside Google Cloud with no credentials here; on a machine with them, nothing to show.
    if (!first) return;
    expect(first.message).toMatch(/the Telemetry API needs a Google token of the function's service account/);
    expect(await headers().then(() => undefined, (error: Error) => error)).toBe(first);
  }, 30_000);
});
