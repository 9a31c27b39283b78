/**
 * CPU-budget arithmetic of the outbound benchmark. Relay, PostgreSQL, receiver and load generator
 * all share this machine's cores, so no contender can deliver faster than cores × 1e6 µs of CPU per
 * second divided by the CPU everyone spends per event. These are upper bounds: they assume every
 * core 100 % busy with this work and nothing else (no scheduling gaps, no waits, no other tenants,
 * no PostgreSQL background processes, which are not counted), so real rates stay below them.
 */

/** Medians of one contender: its rate and the CPU µs per event of each process involved. */
export interface Cost { perSecond: number; processUs: number; dbUs: number; receiverUs: number }

export const totalUs = (c: Cost) => c.processUs + c.dbUs + c.receiverUs;

/** Events/s the contender would reach if its CPU per event were the only limit. */
export const cpuBound = (cores: number, c: Cost) => (cores * 1e6) / totalUs(c);

const n = (x: number) => Math.round(x).toLocaleString("en-US");
const signed = (x: number) => (x < 0 ? `−${n(-x)}` : n(x));

/**
 * What delivering `rate` events/s would leave for the outbox (relay bookkeeping + PostgreSQL),
 * against what ours spends. The HTTP cost is taken from the transport-alone row (our HTTP client
 * and the receiver, no database): whatever ours spends beyond it is the outbox's cost.
 */
export function targetNeeds(label: string, rate: number, cores: number, http: Cost, ours: Cost): string[] {
  const budget = (cores * 1e6) / rate;
  const httpUs = http.processUs + http.receiverUs;
  const left = budget - httpUs;
  const outbox = totalUs(ours) - httpUs;
  const parts = `relay process beyond the transport ${signed(ours.processUs - http.processUs)}, PostgreSQL ${n(ours.dbUs)}, receiver beyond the transport row's ${signed(ours.receiverUs - http.receiverUs)}`;
  const verdict = left <= 0
    ? "nothing is left: unreachable even if the outbox cost no CPU at all"
    : outbox <= left
      ? "within the budget: CPU alone does not forbid it"
      : `over by ${n(outbox - left)} µs (${(outbox / left).toFixed(1)}×): unreachable at ours' current CPU per event`;
  return [
    `${label} = ${n(rate)} events/s:`,
    `  CPU budget ${n(budget)} µs/event (${cores} cores × 1e6 / ${n(rate)}), minus the HTTP cost alone ${n(httpUs)} µs/event (our transport ${n(http.processUs)} + receiver ${n(http.receiverUs)}, no database)`,
    `  → needs ≤ ${signed(left)} µs/event for the outbox; ours uses ${signed(outbox)} (${parts})`,
    `  → ${verdict}`,
  ];
}
