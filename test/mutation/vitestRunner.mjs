// @ts-check
/**
 * Stryker's vitest runner (9.6), with one correction: a mutant that makes a test file fail to
 * load (a module-level table entry removed, so `addSubnet(undefined)` throws on import) leaves
 * vitest with a failed file and no test results, which the runner reports as "survived, 0 tests".
 * Such a mutant is noticed by the suite (the file fails), so it is reported here as killed, with
 * the file's error as the reason. Everything else is the original runner, unchanged.
 */
import { commonTokens, declareFactoryPlugin, PluginKind, tokens } from "@stryker-mutator/api/plugin";
import { MutantRunStatus } from "@stryker-mutator/api/test-runner";
import { strykerPlugins as vitestPlugins } from "@stryker-mutator/vitest-runner";

const original = vitestPlugins.find((plugin) => plugin.kind === PluginKind.TestRunner && plugin.name === "vitest");
if (!original || !("factory" in original)) throw new Error("@stryker-mutator/vitest-runner no longer declares its 'vitest' factory plugin: update test/mutation/vitestRunner.mjs");

/** The vitest files that failed outside any test (collection or import), with their first error. */
function fileLevelFailures(runner) {
  const state = runner.ctx?.state;
  if (!state) throw new Error("The vitest runner no longer keeps its Vitest instance in `ctx`: update test/mutation/vitestRunner.mjs");
  return state.getFiles().filter((file) => file.result?.state === "fail").map((file) => ({
    file: file.filepath,
    message: file.result?.errors?.[0]?.message ?? "the test file failed outside any test",
  }));
}

class LoadFailureKillsRunner {
  /** @param {any} inner the original VitestTestRunner */
  constructor(inner) { this.inner = inner; }
  capabilities() { return this.inner.capabilities(); }
  init() { return this.inner.init(); }
  dryRun(options) { return this.inner.dryRun(options); }
  dispose() { return this.inner.dispose(); }
  async mutantRun(options) {
    const result = await this.inner.mutantRun(options);
    if (result.status !== MutantRunStatus.Survived) return result;
    const [failed] = fileLevelFailures(this.inner);
    if (!failed) return result;
    return { status: MutantRunStatus.Killed, killedBy: [failed.file], failureMessage: `test file failed to load: ${failed.message}`, nrOfTests: result.nrOfTests };
  }
}

createRunner.inject = tokens(commonTokens.injector);
/** @param {any} injector */
function createRunner(injector) {
  return new LoadFailureKillsRunner(injector.injectFunction(original.factory));
}

export const strykerPlugins = [declareFactoryPlugin(PluginKind.TestRunner, "vitest-load-failures-kill", createRunner)];
