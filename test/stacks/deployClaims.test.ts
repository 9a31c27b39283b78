/**
 * Issue 27 item 7: where the project says it deploys to the clouds, it says in the same paragraph
 * that no stack has run in a real account (docs/deploy.md lists what is checked instead), so a
 * newcomer reading only the first paragraph is not misled.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/** The paragraphs of a Markdown file (blank-line separated), headings and code blocks left out. */
function paragraphs(file: string): string[] {
  const text = readFileSync(file, "utf8").replace(/```[^]*?```/g, "");
  return text.split(/\n\s*\n/).map((p) => p.replace(/\s+/g, " ").trim()).filter((p) => p !== "" && !p.startsWith("#"));
}

/** "No stack has yet run in a real cloud account", "No real Azure subscription has run it", … */
const NOT_RUN = /no (stack|real [\w ]+ (account|subscription|project)) has (yet )?run/i;

describe("the deploy claim comes with what has not been tried", () => {
  it("the README's first paragraph, which says the platform deploys with `npm run deploy`, says no stack has run in a real account", () => {
    const first = paragraphs("README.md")[0]!;
    expect(first).toContain("npm run deploy");
    expect(first).toMatch(NOT_RUN);
    expect(first).toContain("docs/deploy.md#what-has-been-checked-and-what-has-not");
  });

  it("each cloud's deploy guide says so before its first step", () => {
    for (const cloud of ["aws", "azure", "gcp"]) {
      const file = `docs/deploy-${cloud}.md`;
      const intro = readFileSync(file, "utf8").split(/\n## /)[0]!.replace(/\s+/g, " ");
      expect(intro, file).toMatch(NOT_RUN);
    }
  });
});
