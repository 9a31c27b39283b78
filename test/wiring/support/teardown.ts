/**
 * What a wiring test file starts, stopped after all its tests: the function processes first (they
 * hold database connections and emulator clients), then everything registered in `closers`, the
 * last registered first (a database client before the server it talks to). A closer that fails is
 * ignored: the rest still run.
 */
import { afterAll } from "vitest";
import type { FunctionProcess } from "./functionProcess.js";

export function wiringTeardown(): { processes: FunctionProcess[]; closers: (() => Promise<unknown>)[] } {
  const processes: FunctionProcess[] = [];
  const closers: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const fp of processes) await fp.stop();
    for (const close of closers.reverse()) await close().catch(() => {});
  });
  return { processes, closers };
}
