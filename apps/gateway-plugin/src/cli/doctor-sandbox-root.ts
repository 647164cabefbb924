import { constants, statSync } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';

/** Whether the sandbox root exists and can be written (or made) by this user; reads only. */
export async function sandboxRootState(root: string): Promise<{ exists: boolean; writable: boolean; problem?: string }> {
  let existing = root;
  // The root is made on first use: what matters is that the nearest existing folder lets us.
  for (;;) {
    try {
      const stat = statSync(existing);
      if (!stat.isDirectory()) return { exists: existing === root, writable: false, problem: `${existing} is not a folder` };
      break;
    } catch {
      const parent = path.dirname(existing);
      if (parent === existing) break;
      existing = parent;
    }
  }
  try {
    await access(existing, constants.W_OK | constants.X_OK);
    return { exists: existing === root, writable: true };
  } catch {
    return { exists: existing === root, writable: false, problem: `${existing} is not writable by this user` };
  }
}
