/**
 * Debian's Chromium for browser tests, driven by playwright-core. Absent: the browser tests skip
 * with a loud message, except under CI=true, where that is a failure (`.ci/run` installs it).
 */
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import type { Database } from "../../shared/db/port.js";
import { usePlatformAndReceiver, type TestPlatform, type TestReceiver } from "./harness.js";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export const chromiumAvailable = existsSync(CHROMIUM);
if (!chromiumAvailable) {
  const msg = `Chromium is not installed at ${CHROMIUM}: the admin page browser test is SKIPPED. Install it with \`apt-get install -y chromium\`.`;
  if (process.env.CI) throw new Error(`${msg} CI must run it.`);
  console.warn(`\n!!! ${msg}\n`);
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-background-networking", "--disable-gpu", "--disable-component-update", "--no-first-run"],
  });
}

/**
 * Each suite's platform and receiver (harness.ts) with a Chromium beside them; the function it
 * returns opens a page that collects the page's script errors (each test expects none).
 */
export function usePlatformInChromium(db: () => Database, use: (platform: TestPlatform, receiver: TestReceiver) => void) {
  let browser: Browser;
  usePlatformAndReceiver(db, use);
  beforeAll(async () => { browser = await launchChromium(); }, 60_000);
  afterAll(async () => { await browser?.close(); });
  return async () => {
    const page = await browser.newPage();
    const pageErrors: string[] = [];
    page.on("pageerror", (e) => pageErrors.push(e.message));
    return { page, pageErrors };
  };
}
