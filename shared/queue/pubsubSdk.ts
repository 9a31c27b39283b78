/**
 * `@google-cloud/pubsub`'s `PubSub`, re-exported by name for pubsubPublisher.ts to load lazily.
 * The package is CommonJS: a dynamic `import()` of it straight from a bundle chunk gives only its
 * `default` export, while a static named import gets esbuild's CommonJS interop.
 */
export { PubSub } from "@google-cloud/pubsub";
