import path from 'node:path';
import { PathEscapeError } from './errors.js';
import { sandboxRootOf } from './host-layout.js';
import type { SandboxScope } from './scope.js';

/** Where a scope's files live on the host. */
export interface SandboxPaths {
  /** `{sandbox_dir}`. */
  readonly sandboxDir: string;
  /** `{sandbox_dir}/docker`: nothing Berth creates for a scope is outside it. */
  readonly root: string;
  /** `{sandbox_dir}/docker/{folder}`. */
  readonly folder: string;
  /** Mounted at `/workspace`. */
  readonly workspace: string;
  /** Mounted at `/root`. */
  readonly home: string;
}

/**
 * The host folders of a scope. The folder name comes from core's checked encodings; this
 * function checks once more that the result is exactly one level below the root.
 */
export function resolveSandboxPaths(scope: SandboxScope, sandboxDir: string): SandboxPaths {
  const root = sandboxRootOf(sandboxDir);
  const folder = path.join(root, scope.folderName);
  const relative = path.relative(root, folder);
  if (relative !== scope.folderName || relative === '' || relative === '.' || relative === '..' || relative.includes(path.sep) || relative.includes('\0')) {
    throw new PathEscapeError(`the folder of ${scope.key} would not be directly inside ${root}; refused`);
  }
  return { sandboxDir: path.resolve(sandboxDir), root, folder, workspace: path.join(folder, 'workspace'), home: path.join(folder, 'home') };
}
