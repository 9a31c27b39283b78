/** The error type every route throws for a precise answer; a leaf module, so helpers of the core import it without a cycle. */

/** An error a caller can act on: becomes `{ error: { code, message, details } }` with `status`. */
export class HttpError extends Error {
  override name = "HttpError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}
