import { statSync } from 'node:fs';
import { utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * When a sandbox was last used, kept as the modification time of a file in its scope folder
 * (beside `workspace` and `home`, outside every mount, so commands cannot touch it). A later
 * gateway process, or `berth ls`, reads it; an adopted sandbox is reaped by its real idleness.
 */
export const LAST_USED_FILE = '.berth-last-used';

/** Touches the marker of the scope folder that holds `workspace`; never throws. */
export async function touchLastUsed(workspace: string, when: Date = new Date()): Promise<void> {
  const file = path.join(path.dirname(workspace), LAST_USED_FILE);
  try {
    await utimes(file, when, when);
  } catch {
    await writeFile(file, '', { mode: 0o600 })
      .then(() => utimes(file, when, when))
      .catch(() => undefined);
  }
}

/** The last use recorded for the scope folder that holds `workspace`, in ms; `undefined` when none. */
export function readLastUsed(workspace: string | undefined): number | undefined {
  if (!workspace) return undefined;
  try {
    return statSync(path.join(path.dirname(workspace), LAST_USED_FILE)).mtimeMs;
  } catch {
    return undefined;
  }
}
