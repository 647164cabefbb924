import { existsSync } from 'node:fs';
import path from 'node:path';
import type { SandboxPaths } from '@berth/core';
import { disksFolderOf } from '@berth/core/driver';

/** Whether the scope has anything on the host: its folder, or its disk image. */
export function scopeHasFiles(paths: Pick<SandboxPaths, 'root' | 'folder'>): boolean {
  return existsSync(paths.folder) || existsSync(path.join(disksFolderOf(paths.root), `${path.basename(paths.folder)}.ext4`));
}
