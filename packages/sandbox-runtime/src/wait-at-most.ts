/**
 * Waits for `promise`, but no longer than `ms`: resolves when either comes first (rejects when
 * `promise` rejects first). The timer neither keeps the process alive nor outlives the wait.
 */
export async function waitAtMost(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms).unref()))]);
  } finally {
    clearTimeout(timer);
  }
}
