import path from 'node:path';
import { homedir } from 'node:os';
import { hermesHome } from './config.js';
import { PathEscapeError } from './errors.js';
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
 * The sandbox directory: `sandbox_dir` from the config, else `$TERMINAL_SANDBOX_DIR`, else
 * `${HERMES_HOME:-~/.hermes}/sandboxes`. A leading `~` is the user's home; relative paths are
 * taken from the current directory.
 */
export function resolveSandboxDir(configured: string | undefined, environment: NodeJS.ProcessEnv = process.env): string {
  const chosen = configured || environment.TERMINAL_SANDBOX_DIR || path.join(hermesHome(environment), 'sandboxes');
  const expanded = chosen === '~' || chosen.startsWith('~/') ? path.join(environment.HOME || homedir(), chosen.slice(1)) : chosen;
  return path.resolve(expanded);
}

/**
 * The host folders of a scope. The folder name comes from core's checked encodings; this
 * function checks once more that the result is exactly one level below the root.
 */
export function resolveSandboxPaths(scope: SandboxScope, sandboxDir: string): SandboxPaths {
  const root = path.join(path.resolve(sandboxDir), 'docker');
  const folder = path.join(root, scope.folderName);
  const relative = path.relative(root, folder);
  if (relative !== scope.folderName || relative === '' || relative === '.' || relative === '..' || relative.includes(path.sep) || relative.includes('\0')) {
    throw new PathEscapeError(`the folder of ${scope.key} would not be directly inside ${root}; refused`);
  }
  return { sandboxDir: path.resolve(sandboxDir), root, folder, workspace: path.join(folder, 'workspace'), home: path.join(folder, 'home') };
}
