/**
 * The transport alone, no database: `concurrency` loops each delivering back to back for a fixed
 * time. It separates what our HTTP client (signing, undici pool, excerpt reading) costs from what
 * the outbox costs (claims, completion writes).
 */
import { performance } from "node:perf_hooks";
import { generateSecret } from "../../shared/outbound/signature.js";
import { createTransport } from "../../shared/outbound/transport.js";
import { cpuMsSince, eventData, receiverWindow, type ReceiverStats, type WindowReading } from "./support.js";

export interface TransportResult { perSecond: number; sent: number; cpuMsPerEvent: number; avgLatencyMs: number; receiver: WindowReading | null }

export async function measureTransport(receiverUrl: string, concurrency: number, seconds: number, receiverStats?: ReceiverStats): Promise<TransportResult> {
  const transport = createTransport({ allowedDestinations: ["127.0.0.1"], connectionsPerOrigin: concurrency });
  const secrets = [generateSecret()];
  const body = JSON.stringify({ id: "evt_t", type: "bench.created", timestamp: new Date().toISOString(), data: eventData(7) });
  let sent = 0;
  let latency = 0;
  const rx = await receiverWindow(receiverStats);
  const cpu = process.cpuUsage();
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(Array.from({ length: concurrency }, async (_, lane) => {
    while (performance.now() < end) {
      const out = await transport.deliver({ url: `${receiverUrl}/transport`, webhookId: `evt_${lane}_${sent}:sub_1`, timestamp: Math.floor(Date.now() / 1000), body, secrets });
      if (out.result !== "delivered") throw new Error(`transport-only run failed: ${out.errorClass}`);
      sent += 1;
      latency += out.latencyMs;
    }
  }));
  const elapsed = (performance.now() - start) / 1000;
  const cpuMs = cpuMsSince(cpu);
  const receiver = await rx.end();
  await transport.close();
  return { perSecond: sent / elapsed, sent, cpuMsPerEvent: cpuMs / sent, avgLatencyMs: latency / sent, receiver };
}
