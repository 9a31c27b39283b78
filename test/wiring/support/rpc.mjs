// The driver side of a wiring test's function process (see functionProcess.ts): plain
// JavaScript, loaded by Node 22 next to the function's bundle. `serve(handler)` answers each
// `invoke(kind, payload)` of the test with `await handler(kind, payload)` over the IPC channel,
// so the function's own stdout (its logs) stays its own.

/** @param {(kind: string, payload: any) => Promise<unknown>} handler */
export function serve(handler) {
  if (!process.send) throw new Error("rpc.mjs: run this driver through startFunctionProcess (it needs an IPC channel).");
  process.on("message", async (message) => {
    const { id, kind, payload } = message;
    try {
      const result = await handler(kind, payload);
      process.send({ id, ok: true, result: result === undefined ? null : result });
    } catch (error) {
      const e = /** @type {Error} */ (error);
      process.send({ id, ok: false, error: { name: e?.name ?? "Error", message: e?.message ?? String(error), stack: e?.stack } });
    }
  });
  process.send({ ready: true, version: process.version });
}
