/**
 * A background job that runs a task, waits, and runs it again, until stopped. Runs never overlap
 * (the wait starts when a run ends) and `stop` waits for the run in progress. The task handles its
 * own errors: a throw is reported to `onError` and the next run happens as planned.
 */
export interface PeriodicJob {
  readonly name: string;
  stop(): Promise<void>;
}

export function runPeriodically(
  name: string,
  task: (shouldStop: () => boolean) => Promise<void>,
  options: { intervalMs: number; firstDelayMs?: number; onError: (error: unknown) => void },
): PeriodicJob {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const shouldStop = () => stopped;

  const run = () => {
    if (stopped) return;
    // A task that throws before its first await, or an onError that throws, must not escape either.
    running = Promise.resolve()
      .then(() => task(shouldStop))
      .catch((error) => { try { options.onError(error); } catch { /* nothing more to report to */ } })
      .finally(() => {
        if (!stopped) timer = setTimeout(run, options.intervalMs);
      });
  };
  if (options.firstDelayMs) timer = setTimeout(run, options.firstDelayMs);
  else run();

  return {
    name,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
