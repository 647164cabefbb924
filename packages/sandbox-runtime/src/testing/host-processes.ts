import { readdirSync, readFileSync } from 'node:fs';

/** The ids of the host's processes whose command line holds `text` (tests that run real host shells). */
export function hostProcessesWith(text: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text);
      } catch {
        return false;
      }
    })
    .map(Number);
}
