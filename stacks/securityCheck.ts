/**
 * `npm run security`: the scanner rules of securityRules.ts over the synthesized stacks. Prints
 * one line per rule and resource; exits 1 if a rule fails without a justification, or if a
 * justification has become stale.
 */
import { pathToFileURL } from "node:url";
import type { TerraformJson } from "./app.js";
import { type Cloud } from "./artifacts.js";
import { evaluate, type Finding, staleJustifications } from "./securityRules.js";
import { synthForChecks } from "./synthForChecks.js";
import { textTable } from "./table.js";

export interface SecurityReport {
  findings: Finding[];
  stale: string[];
  ok: boolean;
}

export function securityReport(stacks: Partial<Record<Cloud, TerraformJson>>): SecurityReport {
  const clouds = Object.keys(stacks) as Cloud[];
  const findings = clouds.flatMap((cloud) => evaluate(cloud, stacks[cloud]!));
  const stale = staleJustifications(findings, clouds);
  return { findings, stale, ok: stale.length === 0 && findings.every((f) => f.verdict !== "FAIL") };
}

export function renderSecurityReport(report: SecurityReport): string {
  const explained = new Set<string>();
  const rows = report.findings.map((f) => {
    // Each justification is printed once, at its rule's first justified resource.
    const reason = f.reason && explained.has(f.rule) ? "(as above)" : (f.reason ?? "");
    if (f.reason) explained.add(f.rule);
    return [f.cloud, f.rule, f.resource.split("/").slice(1).join("/"), f.verdict, reason];
  });
  const count = (v: string) => report.findings.filter((f) => f.verdict === v).length;
  const lines = [
    textTable(["cloud", "rule", "resource", "verdict", "justification"], rows, 60),
    "",
    `${count("pass")} pass, ${count("justified")} justified, ${count("FAIL")} failed`,
  ];
  if (report.stale.length > 0) lines.push(`stale justifications (the rule now passes or no longer applies): ${report.stale.join(", ")}`);
  return lines.join("\n");
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const report = securityReport(synthForChecks());
  console.log(renderSecurityReport(report));
  process.exitCode = report.ok ? 0 : 1;
}
