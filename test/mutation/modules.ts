/**
 * The modules under mutation testing and the tests that cover each: a mistake in any of them is a
 * security or data-loss defect. Each module is mutated on its own and judged only by its tests,
 * so a score says what those tests notice, not what the whole suite stumbles on by chance.
 */
export interface MutationModule {
  /** The file Stryker mutates. */
  file: string;
  /** The test files that cover it (the only ones run for its mutants). */
  tests: string[];
  /** In the small set CI runs (fast, and the checks an attacker aims at first). */
  ci?: boolean;
}

/** Lowest mutation score a module may have, in percent: killed ÷ (killed + survived + no coverage). */
export const MIN_SCORE = 90;

const verifyTests = ["test/inbound/verify.parsing.test.ts", "test/inbound/verify.senders.test.ts"];

export const MODULES: MutationModule[] = [
  { file: "shared/outbound/destinationPolicy.ts", tests: ["test/outbound/destinationPolicy.test.ts"] },
  { file: "shared/outbound/signature.ts", tests: ["test/outbound/signature.test.ts"], ci: true },
  { file: "shared/inbound/verify/hmac.ts", tests: [...verifyTests, "test/inbound/verify.generic.test.ts"], ci: true },
  { file: "shared/inbound/verify/timestamp.ts", tests: verifyTests, ci: true },
  { file: "shared/inbound/verify/headers.ts", tests: verifyTests },
  { file: "shared/inbound/verify/github.ts", tests: ["test/inbound/verify.senders.test.ts"], ci: true },
  { file: "shared/inbound/verify/stripe.ts", tests: ["test/inbound/verify.senders.test.ts"] },
  { file: "shared/inbound/verify/standardWebhooks.ts", tests: ["test/inbound/verify.senders.test.ts", "test/inbound/verify.v1a.test.ts"] },
  { file: "shared/inbound/verify/genericHmac.ts", tests: ["test/inbound/verify.generic.test.ts"] },
  { file: "shared/inbound/verify/body.ts", tests: [...verifyTests, "test/inbound/verify.generic.test.ts"] },
  { file: "shared/inbound/verify/partners.ts", tests: ["test/inbound/verify.partners.test.ts", "test/inbound/verify.partners.forward.test.ts"] },
  { file: "shared/outbound/retryPolicy.ts", tests: ["test/outbound/retryPolicy.test.ts"] },
  { file: "shared/outbound/decide.ts", tests: ["test/outbound/decide.test.ts"], ci: true },
  { file: "shared/outbound/health.ts", tests: ["test/outbound/health.summarise.test.ts"] },
  { file: "shared/server/auth.ts", tests: ["test/server/bearer.test.ts"], ci: true },
  { file: "shared/inbound/entities.ts", tests: ["test/inbound/entities.test.ts"] },
  { file: "shared/telemetry/telemetry.ts", tests: ["test/telemetry/telemetry.test.ts"] },
  { file: "shared/inbound/stateMachine.ts", tests: ["test/inbound/reconciler.test.ts", "test/inbound/stateMachine.test.ts"] },
  { file: "shared/crypto/envelope.ts", tests: ["test/crypto/envelope.test.ts", "test/crypto/envelope.edges.test.ts"] },
  { file: "shared/crypto/keyring.ts", tests: ["test/crypto/envelope.test.ts", "test/crypto/envelope.edges.test.ts"] },
  { file: "shared/crypto/ed25519.ts", tests: ["test/crypto/ed25519.test.ts", "test/inbound/verify.v1a.test.ts"] },
  { file: "shared/tenancy/apiKeys.ts", tests: ["test/tenancy/apiKeys.test.ts"] },
  { file: "shared/tenancy/authenticate.ts", tests: ["test/tenancy/apiKeys.test.ts"], ci: true },
  { file: "shared/tenancy/access.ts", tests: ["test/tenancy/access.test.ts"] },
];
