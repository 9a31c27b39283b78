/**
 * The strict Prometheus text parser of test/support/prometheusText.ts, which the /metrics test
 * trusts: it reads what the format allows and refuses, with the line, what Prometheus refuses.
 */
import { describe, expect, it } from "vitest";
import { parsePrometheusText, PrometheusParseError } from "../support/prometheusText.js";

describe("parsePrometheusText", () => {
  it("reads HELP (unescaped), TYPE, UNIT, labels with escapes, special values and timestamps; histograms checked", () => {
    const text = [
      "# a plain comment",
      "# HELP a_total Requests \\\\ and\\nmore",
      "# TYPE a_total counter",
      "# UNIT a_total {request}",
      'a_total{x="q\\"uo\\\\te\\n",y="",} 3 1700000000000',
      "a_total 1e3",
      "# TYPE h histogram",
      'h_bucket{le="1"} 1',
      'h_bucket{le="+Inf"} 2',
      "h_sum 2.5",
      "h_count 2",
      "g NaN",
      "g2 -Inf",
      "",
    ].join("\n");
    const f = parsePrometheusText(text);
    expect([...f.keys()]).toEqual(["a_total", "h", "g", "g2"]);
    expect(f.get("a_total")).toEqual({
      name: "a_total", type: "counter", help: "Requests \\ and\nmore", unit: "{request}",
      samples: [{ name: "a_total", labels: { x: 'q"uo\\te\n', y: "" }, value: 3, timestamp: 1700000000000 }, { name: "a_total", labels: {}, value: 1000 }],
    });
    expect(f.get("h")!.samples.map((s) => s.name)).toEqual(["h_bucket", "h_bucket", "h_sum", "h_count"]);
    expect(f.get("g")!.type).toBe("untyped");
    expect(Number.isNaN(f.get("g")!.samples[0]!.value)).toBe(true);
    expect(f.get("g2")!.samples[0]!.value).toBe(Number.NEGATIVE_INFINITY);
  });

  it.each([
    ["no final newline", "a 1", /end with a newline/],
    ["a bad metric name", "1a 1\n", /bad metric name/],
    ["a bad label name", 'a{1x="v"} 1\n', /bad label name/],
    ["an unterminated label value", 'a{x="v} 1\n', /unterminated/],
    ["a bad escape", 'a{x="\\t"} 1\n', /bad escape/],
    ["a label twice", 'a{x="1",x="2"} 1\n', /given twice/],
    ["a value that is not a float", "a one\n", /not a float/],
    ["text after the timestamp", "a 1 2 3\n", /trailing text/],
    ["an unknown type", "# TYPE a countr\na 1\n", /unknown type/],
    ["TYPE after samples", "a 1\n# TYPE a gauge\n", /after its samples/],
    ["TYPE twice", "# TYPE a gauge\n# TYPE a gauge\na 1\n", /given twice/],
    ["a family's samples apart", "a 1\nb 1\na{x=\"1\"} 2\n", /not together/],
    ["a series repeated", 'a{x="1"} 1\na{x="1"} 2\n', /repeated/],
    ["a bucket without le", "# TYPE h histogram\nh_bucket 1\nh_count 1\n", /without le/],
    ["buckets not cumulative", '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_count 1\n', /not cumulative/],
    ["no +Inf bucket", '# TYPE h histogram\nh_bucket{le="1"} 1\nh_count 1\n', /no \+Inf/],
    ["_count unlike +Inf", '# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_count 3\n', /differs/],
  ])("refuses %s", (_what, text, message) => {
    expect(() => parsePrometheusText(text)).toThrow(PrometheusParseError);
    expect(() => parsePrometheusText(text)).toThrow(message);
  });
});
