/**
 * A cloud function's first connection, before the deploy's migrate step has ever run: the
 * application role does not exist yet, and the refusal must say what to run (the migrate step
 * makes the role), not only PostgreSQL's "role … does not exist".
 */
import { describe, expect, it } from "vitest";
import { openCloudDatabase } from "../../shared/cloud/database.js";
import { ADMIN_URL, postgresAvailable } from "../support/databases.js";

const serverUp = await postgresAvailable();
if (!serverUp) console.warn("\n!!! PostgreSQL is not answering at 127.0.0.1:5432: the cloud database tests are SKIPPED.\n");

describe.skipIf(!serverUp)("openCloudDatabase before the first migrate step", () => {
  it("names the missing application role and the migrate step", async () => {
    // A role no run has made: the login fails exactly as on a server that never saw a migrate step.
    const url = new URL(ADMIN_URL);
    url.username = `webhooks_app_never_${Date.now().toString(36)}`;
    url.password = "irrelevant-password";
    await expect(openCloudDatabase({ url: url.href, tls: "disable", poolMax: 1 })).rejects.toThrow(
      new RegExp(`^The application role "${url.username}" does not exist on the database server yet\\. Run the deploy's migrate step`),
    );
  });
});
