/** Memoises an async factory for the life of a function instance; a failure is not memoised. */
export function once<T>(make: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => {
    value ??= make().catch((error: unknown) => {
      value = undefined; // a failed cold start may succeed on the next invocation
      throw error;
    });
    return value;
  };
}
