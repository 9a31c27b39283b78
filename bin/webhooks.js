#!/usr/bin/env node
// The `webhooks` CLI. The code is TypeScript (shared/cli/); tsx compiles it on the fly, so there
// is no build step. See `webhooks --help` and docs/operations.md.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../shared/cli/main.ts");
await main();
