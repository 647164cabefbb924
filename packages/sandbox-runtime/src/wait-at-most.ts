/**
 * Waits for `promise`, but no longer than `ms`: resolves when either comes first, with whether
 * `promise` settled in time (rejects when `promise` rejects first). The timer neither keeps the
 * process alive nor outlives the wait.
 */
export async function waitAtMost(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms).unref()))]);
  } finally {
    clearTimeout(timer);
  }
}
