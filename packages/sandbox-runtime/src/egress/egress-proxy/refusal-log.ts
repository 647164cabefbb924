import type { HostLogger } from '@berth/core';

/** How many refusal lines go to the log per minute at most; the rest are counted in one line. */
const LINES_PER_MINUTE = 30;
/** How many keys are remembered (each logged once); past it the memory starts again. */
const KEYS_REMEMBERED = 4096;

/** Logs refusals of the egress proxy: one warn line per key, and a bounded number of lines a minute. */
export interface RefusalLog {
  /** Logs `line` unless `key` (the sandbox and what it asked for) was logged already, or the minute's lines are spent. */
  warn(key: string, line: string): void;
}

/**
 * A sandbox decides what the proxy refuses (a new name per request costs it nothing), so the
 * log it causes is bounded by the host: each refused thing once, at most
 * {@link LINES_PER_MINUTE} lines a minute, and the number left out said once the minute is over.
 */
export function createRefusalLog(logger: Pick<HostLogger, 'warn'> | undefined, now: () => number = Date.now): RefusalLog {
  const logged = new Set<string>();
  let windowStart = now();
  let lines = 0;
  let suppressed = 0;
  const roll = (): void => {
    if (now() - windowStart < 60_000) return;
    if (suppressed > 0) logger?.warn(`berth: egress proxy: ${suppressed} more refusal(s) in the last minute were not logged one by one`);
    windowStart = now();
    lines = 0;
    suppressed = 0;
  };
  return {
    warn(key, line) {
      if (logged.has(key)) return;
      if (logged.size >= KEYS_REMEMBERED) logged.clear();
      logged.add(key);
      roll();
      if (lines >= LINES_PER_MINUTE) {
        suppressed += 1;
        return;
      }
      lines += 1;
      logger?.warn(line);
    },
  };
}
