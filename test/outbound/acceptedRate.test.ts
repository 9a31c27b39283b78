/** What a relay saw an endpoint accept lately (acceptedRate.ts): successes per second, and its 429s. */
import { describe, expect, it } from "vitest";
import { createAcceptedRates } from "../../shared/outbound/acceptedRate.js";

describe("the windows of what an endpoint accepted", () => {
  it("count successes over the span they cover, and the share of 429s among the answers", () => {
    const rates = createAcceptedRates();
    for (let t = 0; t < 500; t += 10) rates.recordSuccess("s", t);
    rates.recordLimited("s", 500);
    expect(rates.perSecond("s", 500)).toBeCloseTo((50 * 1000) / 490, 6);
    expect(rates.limitedShare("s", 500)).toBeCloseTo(1 / 51, 6);
    expect(rates.limitedCount("s", 500)).toBe(1);
    // A second later the window has moved past them all.
    expect(rates.limitedCount("s", 1600)).toBe(0);
    expect(rates.perSecond("s", 1600)).toBeNull();
  });

  it("keep each endpoint apart", () => {
    const rates = createAcceptedRates();
    rates.recordLimited("a", 0);
    rates.recordSuccess("b", 0);
    expect(rates.limitedCount("a", 0)).toBe(1);
    expect(rates.limitedCount("b", 0)).toBe(0);
    expect(rates.limitedShare("b", 0)).toBe(0);
  });
});
