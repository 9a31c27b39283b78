/**
 * The Functions Framework answers some requests itself, before a function runs: its Express app
 * parses bodies sent as `application/json` and answers one that is not JSON with 400 through
 * Express's final handler, which prints the error's stack trace into the page unless NODE_ENV is
 * `production`. A deployed function is production; callers never get a stack trace.
 *
 * Called at the top of each entry module: the framework loads the entry before it makes its
 * Express app, which reads NODE_ENV then.
 */
export function runAsProduction(env: NodeJS.ProcessEnv = process.env): void {
  env.NODE_ENV = "production";
}
