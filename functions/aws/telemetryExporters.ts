/**
 * The AWS functions' exporters (./telemetry.ts says when each is used). Loaded by a dynamic
 * import only when telemetry is configured, as are the packages they use.
 *
 * SigV4: `@smithy/signature-v4`, the AWS SDK's own signer (already in every AWS bundle's tree),
 * over the OTLP request the standard exporters would send (`@opentelemetry/otlp-transformer`'s
 * serializers), with the Lambda role's credentials from the environment (AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN: what the Lambda runtime sets).
 *
 * EMF (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html):
 * one JSON line per data point, in the namespace `service.namespace` (the stack sets the
 * deployment's name prefix; default `multicloud-webhooks`), the metric under its pinned name
 * (shared/telemetry/names.ts), its attributes as the dimensions. Counters and histograms are
 * exported as deltas (what CloudWatch adds up per period); a histogram as EMF's values and counts
 * (a bucket's upper bound, the largest value for the last) with its min, max, sum and count.
 */
import { createHash, createHmac } from "node:crypto";
import type { PushMetricExporter, ResourceMetrics } from "@opentelemetry/sdk-metrics";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-node";
import { cjsInterop, type TelemetryHost } from "../../shared/telemetry/sdk.js";
import type { OtlpProtocol } from "../../shared/telemetry/settings.js";

type Env = Record<string, string | undefined>;
/** @opentelemetry/core's ExportResult, without loading that package for two fields. */
type ExportResult = { code: 0 | 1; error?: Error };

/** The AWS services with an OTLP endpoint, and the SigV4 service name each signs for. */
const SIGNED_HOST = /^(xray|monitoring|logs)\.([a-z0-9-]+)\.amazonaws\.com$/;

/** `url`'s SigV4 service and region when it is one of AWS's OTLP endpoints, else undefined. */
export function awsOtlpEndpoint(url: string | undefined): { service: string; region: string } | undefined {
  if (!url) return undefined;
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return undefined;
  }
  const m = SIGNED_HOST.exec(host);
  return m ? { service: m[1]!, region: m[2]! } : undefined;
}

/** SHA-256 and HMAC-SHA256 as @smithy/signature-v4 asks for them (its `Checksum`), from node:crypto. */
type SourceData = string | ArrayBuffer | ArrayBufferView;
const bytes = (data: SourceData): string | Uint8Array =>
  typeof data === "string" ? data : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);

class Sha256 {
  private hash;
  private readonly secret?: string | Uint8Array;
  constructor(secret?: SourceData) {
    this.secret = secret === undefined ? undefined : bytes(secret);
    this.hash = this.secret === undefined ? createHash("sha256") : createHmac("sha256", this.secret);
  }
  update(data: SourceData): void {
    this.hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    this.hash = this.secret === undefined ? createHash("sha256") : createHmac("sha256", this.secret);
  }
}

function credentialsFrom(env: Env) {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) throw new Error("No AWS credentials in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) to sign telemetry with; the Lambda runtime sets them.");
  return { accessKeyId, secretAccessKey, sessionToken: env.AWS_SESSION_TOKEN || undefined };
}

/** POSTs one OTLP request to `url`, signed with SigV4 for `target`. Throws on anything but 2xx. */
export async function postSigned(env: Env, url: string, target: { service: string; region: string }, body: Uint8Array, contentType: string, fetchImpl: typeof fetch = fetch): Promise<void> {
  const { SignatureV4 } = cjsInterop(await import("@smithy/signature-v4"));
  const u = new URL(url);
  const signer = new SignatureV4({ service: target.service, region: target.region, credentials: credentialsFrom(env), sha256: Sha256 });
  const signed = await signer.sign({
    method: "POST",
    protocol: u.protocol,
    hostname: u.hostname,
    port: u.port ? Number(u.port) : undefined,
    path: u.pathname,
    query: Object.fromEntries(u.searchParams),
    headers: { host: u.host, "content-type": contentType },
    body,
  });
  const res = await fetchImpl(u, { method: "POST", headers: signed.headers as Record<string, string>, body: body as unknown as RequestInit["body"], signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new Error(`${u.host} answered ${res.status} to the OTLP export: ${(await res.text()).slice(0, 300)}`);
  await res.arrayBuffer();
}

const contentTypeOf = (protocol: OtlpProtocol) => (protocol === "http/json" ? "application/json" : "application/x-protobuf");

/** OTLP spans, signed with SigV4 (X-Ray's OTLP endpoint). */
export class SignedOtlpSpanExporter implements SpanExporter {
  private readonly pending = new Set<Promise<void>>();
  constructor(private readonly env: Env, private readonly url: string, private readonly target: { service: string; region: string }, private readonly protocol: OtlpProtocol) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    const sent = (async () => {
      const { JsonTraceSerializer, ProtobufTraceSerializer } = cjsInterop(await import("@opentelemetry/otlp-transformer"));
      const body = (this.protocol === "http/json" ? JsonTraceSerializer : ProtobufTraceSerializer).serializeRequest(spans);
      if (!body) throw new Error("the spans could not be serialized");
      await postSigned(this.env, this.url, this.target, body, contentTypeOf(this.protocol));
    })();
    this.pending.add(sent);
    sent.then(() => done({ code: 0 }), (error: Error) => done({ code: 1, error })).finally(() => this.pending.delete(sent));
  }
  async forceFlush(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }
  async shutdown(): Promise<void> {
    await this.forceFlush();
  }
}

/** OTLP metrics, signed with SigV4 (CloudWatch's OTLP metrics endpoint). */
export class SignedOtlpMetricExporter implements PushMetricExporter {
  private readonly pending = new Set<Promise<void>>();
  constructor(private readonly env: Env, private readonly url: string, private readonly target: { service: string; region: string }, private readonly protocol: OtlpProtocol) {}

  export(metrics: ResourceMetrics, done: (result: ExportResult) => void): void {
    const sent = (async () => {
      const { JsonMetricsSerializer, ProtobufMetricsSerializer } = cjsInterop(await import("@opentelemetry/otlp-transformer"));
      const body = (this.protocol === "http/json" ? JsonMetricsSerializer : ProtobufMetricsSerializer).serializeRequest(metrics);
      if (!body) throw new Error("the metrics could not be serialized");
      await postSigned(this.env, this.url, this.target, body, contentTypeOf(this.protocol));
    })();
    this.pending.add(sent);
    sent.then(() => done({ code: 0 }), (error: Error) => done({ code: 1, error })).finally(() => this.pending.delete(sent));
  }
  async forceFlush(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }
  async shutdown(): Promise<void> {
    await this.forceFlush();
  }
}

/** CloudWatch's unit for a UCUM unit of ours (names.ts): `{attempt}` and the like are counts. */
export function cloudWatchUnit(unit: string): string {
  if (unit === "ms") return "Milliseconds";
  if (unit === "s") return "Seconds";
  if (unit === "By") return "Bytes";
  return unit.startsWith("{") || unit === "1" || unit === "" ? "Count" : "None";
}

/** Default EMF namespace when the resource has no `service.namespace`. */
export const DEFAULT_EMF_NAMESPACE = "multicloud-webhooks";

/** SDK enums the exporter needs, passed in so this module loads no SDK package by itself. */
interface MetricsEnums {
  DataPointType: typeof import("@opentelemetry/sdk-metrics").DataPointType;
  AggregationTemporality: typeof import("@opentelemetry/sdk-metrics").AggregationTemporality;
}

/** Metrics as CloudWatch embedded metric format lines (`write`: stdout, which Lambda sends to CloudWatch Logs). */
export class EmfMetricExporter implements PushMetricExporter {
  constructor(private readonly enums: MetricsEnums, private readonly write: (line: string) => void = (line) => { process.stdout.write(`${line}\n`); }) {}

  export(resourceMetrics: ResourceMetrics, done: (result: ExportResult) => void): void {
    try {
      for (const line of this.lines(resourceMetrics)) this.write(line);
      done({ code: 0 });
    } catch (error) {
      done({ code: 1, error: error as Error });
    }
  }

  /** The EMF documents, one per data point with something to say. */
  lines(resourceMetrics: ResourceMetrics): string[] {
    const { DataPointType } = this.enums;
    const ns = resourceMetrics.resource.attributes["service.namespace"];
    const namespace = typeof ns === "string" && ns ? ns : DEFAULT_EMF_NAMESPACE;
    const out: string[] = [];
    for (const scope of resourceMetrics.scopeMetrics) {
      for (const metric of scope.metrics) {
        const name = metric.descriptor.name;
        const unit = cloudWatchUnit(metric.descriptor.unit);
        for (const point of metric.dataPoints) {
          const dimensions = Object.entries(point.attributes)
            .filter(([, v]) => typeof v === "string" || typeof v === "number" || typeof v === "boolean")
            .map(([k, v]) => [k, String(v)] as const)
            .slice(0, 30); // EMF's most dimensions per set
          let value: unknown;
          if (metric.dataPointType === DataPointType.HISTOGRAM) {
            const h = point.value as { buckets: { boundaries: number[]; counts: number[] }; sum?: number; count: number; min?: number; max?: number };
            if (h.count === 0) continue;
            const values: number[] = [];
            const counts: number[] = [];
            h.buckets.counts.forEach((count, i) => {
              if (count === 0) return;
              const upper = h.buckets.boundaries[i];
              values.push(upper === undefined ? (h.max ?? 0) : Math.min(upper, h.max ?? upper));
              counts.push(count);
            });
            value = { Values: values, Counts: counts, Min: h.min ?? 0, Max: h.max ?? 0, Count: h.count, Sum: h.sum ?? 0 };
          } else if (metric.dataPointType === DataPointType.SUM || metric.dataPointType === DataPointType.GAUGE) {
            value = point.value as number;
          } else {
            continue; // exponential histograms: none of ours
          }
          out.push(JSON.stringify({
            _aws: {
              Timestamp: Math.round(point.endTime[0] * 1000 + point.endTime[1] / 1e6),
              CloudWatchMetrics: [{ Namespace: namespace, Dimensions: [dimensions.map(([k]) => k)], Metrics: [{ Name: name, Unit: unit }] }],
            },
            ...Object.fromEntries(dimensions),
            [name]: value,
          }));
        }
      }
    }
    return out;
  }

  selectAggregationTemporality(): number {
    return this.enums.AggregationTemporality.DELTA;
  }
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}

/** The SDK's additions on AWS: the signed OTLP exporters for AWS endpoints, EMF, the Lambda resource. */
export async function awsTelemetryHost(env: Env): Promise<TelemetryHost> {
  const { randomUUID } = await import("node:crypto");
  return {
    resource: {
      "cloud.provider": "aws",
      "cloud.platform": "aws_lambda",
      ...(env.AWS_REGION ? { "cloud.region": env.AWS_REGION } : {}),
      ...(env.AWS_LAMBDA_FUNCTION_NAME ? { "faas.name": env.AWS_LAMBDA_FUNCTION_NAME } : {}),
      "service.instance.id": randomUUID(),
    },
    async spanExporter(name, settings, url) {
      const target = name === "otlp" ? awsOtlpEndpoint(url) : undefined;
      return target ? new SignedOtlpSpanExporter(env, url!, target, settings.tracesProtocol) : undefined;
    },
    async metricExporter(name, settings, url) {
      if (name === "awsemf") {
        const { AggregationTemporality, DataPointType } = cjsInterop(await import("@opentelemetry/sdk-metrics"));
        return new EmfMetricExporter({ AggregationTemporality, DataPointType });
      }
      const target = name === "otlp" ? awsOtlpEndpoint(url) : undefined;
      return target ? new SignedOtlpMetricExporter(env, url!, target, settings.metricsProtocol) : undefined;
    },
  };
}
