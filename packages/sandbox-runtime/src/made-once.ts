/** A value made once on first use and kept, made again on the next use after a failure. */
export interface MadeOnce<T> {
  /** The value, made now if it was not (or its making failed). */
  readonly get: () => Promise<T>;
  /** The value if its making has begun, else `undefined` (nothing is made by asking). */
  readonly made: () => Promise<T> | undefined;
}

/** Makes `make()`'s value once, on the first `get()`; a failure is not kept. */
export function madeOnce<T>(make: () => Promise<T>): MadeOnce<T> {
  let made: Promise<T> | undefined;
  return {
    get: () =>
      (made ??= make().catch((error: unknown) => {
        made = undefined;
        throw error;
      })),
    made: () => made,
  };
}
