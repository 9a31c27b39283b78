/**
 * OtlpTestPeer: a local OTLP/HTTP receiver standing in for an OpenTelemetry Collector (none runs
 * here). It takes `POST /v1/traces` and `POST /v1/metrics` in either OTLP/HTTP encoding,
 * `application/json` or `application/x-protobuf`, decodes them and keeps what a test asserts on:
 * each span (trace id, span id, parent, name, kind, string/int/bool attributes, resource
 * `service.name`) and each metric's name and unit.
 *
 * What it does not model: gzip bodies (the SDK sends none unless OTEL_EXPORTER_OTLP_COMPRESSION
 * asks), partial-success answers, retries it would ask for, logs, metric data points' values in
 * protobuf (names and units only), and any field of the OTLP messages not named above.
 */
import { createServer, type Server } from "node:http";

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  serviceName?: string;
  scope?: string;
}

export interface ReceivedMetric {
  name: string;
  unit: string;
  serviceName?: string;
}

export interface OtlpTestPeer {
  /** Base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans: ReceivedSpan[];
  metrics: ReceivedMetric[];
  /** Content types of the requests received, in order. */
  contentTypes: string[];
  close(): Promise<void>;
}

// ---- protobuf wire format: just enough to walk the OTLP messages ----

type Field = { no: number; wire: number; value: bigint | Buffer };

function varint(buf: Buffer, at: number): [bigint, number] {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    const byte = buf[at];
    if (byte === undefined) throw new Error("protobuf: truncated varint");
    at += 1;
    result |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [result, at];
    shift += 7n;
  }
}

function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  while (at < buf.length) {
    const [key, next] = varint(buf, at);
    at = next;
    const no = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) { const [v, n] = varint(buf, at); out.push({ no, wire, value: v }); at = n; }
    else if (wire === 1) { out.push({ no, wire, value: buf.subarray(at, at + 8) }); at += 8; }
    else if (wire === 5) { out.push({ no, wire, value: buf.subarray(at, at + 4) }); at += 4; }
    else if (wire === 2) {
      const [len, n] = varint(buf, at);
      out.push({ no, wire, value: buf.subarray(n, n + Number(len)) });
      at = n + Number(len);
    } else throw new Error(`protobuf: wire type ${wire} not expected in OTLP`);
  }
  return out;
}

const bytesOf = (fs: Field[], no: number): Buffer[] => fs.filter((f) => f.no === no && f.wire === 2).map((f) => f.value as Buffer);
const stringOf = (fs: Field[], no: number): string => bytesOf(fs, no)[0]?.toString("utf8") ?? "";
const intOf = (fs: Field[], no: number): number => Number((fs.find((f) => f.no === no && f.wire === 0)?.value as bigint | undefined) ?? 0n);

/** KeyValue { key = 1; AnyValue value = 2 { string 1, bool 2, int 3, double 4 } }. */
function protoAttributes(list: Buffer[]): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const kv of list) {
    const f = fields(kv);
    const key = stringOf(f, 1);
    const any = fields(bytesOf(f, 2)[0] ?? Buffer.alloc(0));
    const s = bytesOf(any, 1)[0];
    const flag = any.find((x) => x.no === 2 && x.wire === 0);
    const int = any.find((x) => x.no === 3 && x.wire === 0);
    const dbl = any.find((x) => x.no === 4 && x.wire === 1);
    if (s) out[key] = s.toString("utf8");
    else if (flag) out[key] = flag.value === 1n;
    else if (int) out[key] = Number(BigInt.asIntN(64, int.value as bigint));
    else if (dbl) out[key] = (dbl.value as Buffer).readDoubleLE(0);
  }
  return out;
}

/** ExportTraceServiceRequest { ResourceSpans 1 { Resource 1 { attrs 1 }, ScopeSpans 2 { Scope 1 { name 1 }, Span 2 } } }. */
function protoSpans(body: Buffer): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of bytesOf(fields(body), 1)) {
    const rsf = fields(rs);
    const resource = protoAttributes(bytesOf(fields(bytesOf(rsf, 1)[0] ?? Buffer.alloc(0)), 1));
    for (const ss of bytesOf(rsf, 2)) {
      const ssf = fields(ss);
      const scope = stringOf(fields(bytesOf(ssf, 1)[0] ?? Buffer.alloc(0)), 1);
      for (const span of bytesOf(ssf, 2)) {
        const f = fields(span);
        out.push({
          traceId: (bytesOf(f, 1)[0] ?? Buffer.alloc(0)).toString("hex"),
          spanId: (bytesOf(f, 2)[0] ?? Buffer.alloc(0)).toString("hex"),
          parentSpanId: (bytesOf(f, 4)[0] ?? Buffer.alloc(0)).toString("hex"),
          name: stringOf(f, 5),
          kind: intOf(f, 6),
          attributes: protoAttributes(bytesOf(f, 9)),
          serviceName: resource["service.name"] as string | undefined,
          scope,
        });
      }
    }
  }
  return out;
}

/** ExportMetricsServiceRequest { ResourceMetrics 1 { Resource 1, ScopeMetrics 2 { Metric 2 { name 1, unit 3 } } } }. */
function protoMetrics(body: Buffer): ReceivedMetric[] {
  const out: ReceivedMetric[] = [];
  for (const rm of bytesOf(fields(body), 1)) {
    const rmf = fields(rm);
    const resource = protoAttributes(bytesOf(fields(bytesOf(rmf, 1)[0] ?? Buffer.alloc(0)), 1));
    for (const sm of bytesOf(rmf, 2)) {
      for (const m of bytesOf(fields(sm), 2)) {
        const f = fields(m);
        out.push({ name: stringOf(f, 1), unit: stringOf(f, 3), serviceName: resource["service.name"] as string | undefined });
      }
    }
  }
  return out;
}

// ---- OTLP/JSON ----

type JsonKv = { key: string; value: { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number } };

function jsonAttributes(list: JsonKv[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    if (value.stringValue !== undefined) out[key] = value.stringValue;
    else if (value.boolValue !== undefined) out[key] = value.boolValue;
    else if (value.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value.doubleValue !== undefined) out[key] = value.doubleValue;
  }
  return out;
}

/** OTLP/JSON ids are hex strings (the specification's exception to proto3 JSON's base64). */
function jsonSpans(body: any): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap((rs: any) => {
    const serviceName = jsonAttributes(rs.resource?.attributes)["service.name"] as string | undefined;
    return (rs.scopeSpans ?? []).flatMap((ss: any) => (ss.spans ?? []).map((s: any): ReceivedSpan => ({
      traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? "", name: s.name, kind: Number(s.kind ?? 0),
      attributes: jsonAttributes(s.attributes), serviceName, scope: ss.scope?.name,
    })));
  });
}

function jsonMetrics(body: any): ReceivedMetric[] {
  return (body.resourceMetrics ?? []).flatMap((rm: any) => {
    const serviceName = jsonAttributes(rm.resource?.attributes)["service.name"] as string | undefined;
    return (rm.scopeMetrics ?? []).flatMap((sm: any) => (sm.metrics ?? []).map((m: any) => ({ name: m.name, unit: m.unit ?? "", serviceName })));
  });
}

export async function startOtlpTestPeer(): Promise<OtlpTestPeer> {
  const peer: OtlpTestPeer = { url: "", spans: [], metrics: [], contentTypes: [], close: async () => {} };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const type = String(req.headers["content-type"] ?? "").split(";")[0]!.trim();
      peer.contentTypes.push(type);
      try {
        if (req.method !== "POST" || (req.url !== "/v1/traces" && req.url !== "/v1/metrics")) {
          res.writeHead(404).end();
          return;
        }
        const traces = req.url === "/v1/traces";
        if (type === "application/json") {
          const json = JSON.parse(body.toString("utf8"));
          if (traces) peer.spans.push(...jsonSpans(json));
          else peer.metrics.push(...jsonMetrics(json));
          res.writeHead(200, { "content-type": "application/json" }).end("{}");
        } else if (type === "application/x-protobuf") {
          if (traces) peer.spans.push(...protoSpans(body));
          else peer.metrics.push(...protoMetrics(body));
          // An empty Export*ServiceResponse is zero bytes.
          res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
        } else {
          res.writeHead(415).end();
        }
      } catch (error) {
        res.writeHead(400, { "content-type": "text/plain" }).end(String(error));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  peer.url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  peer.close = () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); });
  return peer;
}
