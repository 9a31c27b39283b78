/** The operations of `/openapi.json` that the tenancy walks (test/tenancy/*.test.ts) send. */

type Json = Record<string, any>;
export interface Operation { method: string; path: string; op: Json }

/** Operations of the document that need a token, and those of them that declare no access. */
export function authenticatedOperations(document: Json): { operations: Operation[]; undeclared: string[] } {
  const operations: Operation[] = Object.entries(document.paths as Json).flatMap(([path, ops]) =>
    Object.entries(ops as Json).map(([method, op]) => ({ method: method.toUpperCase(), path, op: op as Json })))
    .filter((o) => (o.op.security as unknown[]).length > 0);
  return { operations, undeclared: operations.filter((o) => !o.op["x-access"]).map((o) => o.op.operationId as string) };
}
