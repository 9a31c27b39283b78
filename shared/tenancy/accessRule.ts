/**
 * What a management operation needs, declared beside it (in its OperationDoc) and enforced in one
 * place (./access.ts). A leaf module (imports nothing), so the route description can name it.
 *
 * | principal | `read` operations | `write` operations |
 * |---|---|---|
 * | ADMIN_TOKEN, operator key with `write` | all | all |
 * | operator key with `read` | all | 403 `read_only` |
 * | application key with `write` | `application` ones, its own resources | `application` ones, its own resources |
 * | application key with `read` | `application` ones, its own resources | 403 `read_only` |
 *
 * An application key is answered 403 `forbidden` on an `operator` operation, and 404 on another
 * application's resource, as if it did not exist (its existence is not leaked).
 */

/**
 * Kinds of resource an operation's path can name, each owned by one application. `deadLetter` is a
 * delivery named as the dead-letter routes name it, so that another application's answers the same
 * 404 as an id that does not exist.
 */
export type ResourceKind = "application" | "subscription" | "event" | "delivery" | "deadLetter";

export interface AccessRule {
  /** `read` shows something; `write` changes something (refused to read-only keys, audited). */
  action: "read" | "write";
  /**
   * `operator`: operators only (ADMIN_TOKEN and operator keys). `application`: application keys
   * too, confined to their application: its resources, and lists filtered to it.
   */
  audience: "operator" | "application";
  /** The resource the path names, whose application must be the key's. */
  resource?: ResourceKind;
  /** The path parameter holding its id. Default: `id`. */
  param?: string;
  /**
   * `false`: a `write` left out of the audit log, for the calls a client repeats every few seconds
   * whose effect is recorded elsewhere (a listener's pulls, heartbeats and answers: their attempts
   * are in the attempt log; its attach and detach are audited). Default: audited.
   */
  audited?: false;
}

/**
 * What a route that declares nothing would get, were it allowed to start (withAccessControl refuses
 * it by default): operators with write access only (deny by default).
 */
export const UNDECLARED_ACCESS: AccessRule = { action: "write", audience: "operator" };
