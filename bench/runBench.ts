/**
 * How a bench ends: exit 0 after its table, otherwise non-zero saying why. Without it, a bench
 * whose server process died before answering (bench:ingest without ENCRYPTION_KEYS, issue 27)
 * left its main promise pending; Node found nothing more to do and exited 0, with no table.
 */
export function runBench(name: string, main: () => Promise<void>): void {
  let settled = false;
  process.once("beforeExit", () => {
    if (settled) return;
    console.error(`${name} FAILED: it stopped before its table (a contender's process ended, or something it waited for never answered; see above).`);
    process.exit(1);
  });
  main().then(
    () => {
      settled = true;
      process.exit(0);
    },
    (error: unknown) => {
      settled = true;
      console.error(`${name} FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      process.exit(1);
    },
  );
}
