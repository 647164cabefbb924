import { realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { ConfigError } from './errors.js';

// Where Berth keeps things on the gateway's host, decided here and nowhere else:
//
//   ${HERMES_HOME:-~/.hermes}/                         hermesHome()
//     sandboxes/                                       resolveSandboxDir(): {sandbox_dir}
//       docker/                                        sandboxRootOf(): the sandbox root
//         .berth-installation-key                      INSTALLATION_KEY_FILE
//         .berth-locks/{folder}.lock                   LOCKS_FOLDER
//         .berth-purge/{folder}                        PURGE_FOLDER
//         .berth-egress/ca.key, ca.pem, ca-bundle.pem  EGRESS_FOLDER (the egress proxy's CA)
//         .berth-bound-holders/{process}               BOUND_HOLDERS_FOLDER
//         {folder}/workspace, home                     resolveSandboxPaths() (sandbox-paths.ts)
//         {folder}/.berth-channels/                    CHANNELS_FOLDER
//         {folder}/.berth-last-used                    LAST_USED_FILE
//       disks/docker/{folder}.ext4                     disksFolderOf()
//
// These names are stable across releases: a gateway finds its earlier sandboxes' files by them.

/** The folder under `{sandbox_dir}` that holds every scope's folder (the sandbox root). */
export const SANDBOX_ROOT_FOLDER = 'docker';

/** The folder under `{sandbox_dir}` that holds the scopes' disk images (`container_disk`). */
export const DISKS_FOLDER = 'disks';

/**
 * The per-installation secret that keys sandbox names, in the sandbox root. No scope folder
 * starts with `.`, and only a scope's `workspace` and `home` are mounted, so no sandbox can read it.
 */
export const INSTALLATION_KEY_FILE = '.berth-installation-key';

/** The folder of the scopes' lock files in the sandbox root: `{root}/.berth-locks/{folder}.lock`. */
export const LOCKS_FOLDER = '.berth-locks';

/** The folder of purges in progress in the sandbox root; `{root}/.berth-purge/{folder}` is a scope's tombstone. */
export const PURGE_FOLDER = '.berth-purge';

/**
 * The processes that use the installation's shared bound, one empty file each named by its
 * process identity, in the sandbox root: the last one out may remove the bound.
 */
export const BOUND_HOLDERS_FOLDER = '.berth-bound-holders';

/**
 * The egress proxy's folder in the sandbox root (docs/brokered-secrets.md): the installation's
 * CA key (0600) and certificate, and the bundle sandboxes trust, the only file of it ever mounted.
 */
export const EGRESS_FOLDER = '.berth-egress';

/**
 * The warm pool's folder in the sandbox root (docs/sandbox-runtime.md, "The warm pool"): one
 * record per pooled sandbox handed to a user, `{root}/.berth-pool/{slot}.json`, saying whose it is.
 */
export const POOL_FOLDER = '.berth-pool';

/** The prefix of a pooled sandbox's folder in the sandbox root, `pool~{slot}`, until its hand-over renames it. */
export const POOL_SLOT_PREFIX = 'pool~';

/** The channel folder's name inside a scope's folder, beside `workspace` and `home`. */
export const CHANNELS_FOLDER = '.berth-channels';

/** The file in a scope's folder whose modification time is when its sandbox was last used. */
export const LAST_USED_FILE = '.berth-last-used';

/**
 * `where` with a leading `~` (alone, or before `/`) taken as the user's home: `$HOME` of
 * `environment`, else the account's, as Python's `expanduser` does; any other path as it is. The
 * one reading of `~` in a host path Berth is given (`HERMES_HOME`, `sandbox_dir`, OpenClaw's
 * `configFile` and `socket`, `kubernetes_kubeconfig`); a path inside a sandbox is another thing.
 */
export function expandHome(where: string, environment: Readonly<Record<string, string | undefined>> = process.env): string {
  return where === '~' || where.startsWith('~/') ? path.join(environment.HOME || homedir(), where.slice(1)) : where;
}

/** `$HERMES_HOME`, else `~/.hermes`; a leading `~` is the user's home, as the Python bridge reads it. */
export function hermesHome(environment: NodeJS.ProcessEnv = process.env): string {
  return environment.HERMES_HOME ? expandHome(environment.HERMES_HOME, environment) : path.join(environment.HOME || homedir(), '.hermes');
}

/** Kernel file systems: no sandbox folder can be made there (a recursive mkdir under /proc once spun for ever). */
const KERNEL_FOLDERS = ['/proc', '/sys', '/dev'] as const;

/** The deepest existing folder on the way to `where`, as the kernel sees it (links followed), and what stands in the way, if anything. */
function existingAncestor(where: string): { real: string; blocker?: string } {
  let current = where;
  for (;;) {
    try {
      const status = statSync(current);
      return status.isDirectory() ? { real: realpathSync(current) } : { real: realpathSync(path.dirname(current)), blocker: current };
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return { real: current };
      current = parent;
    }
  }
}

/**
 * The sandbox directory: `sandbox_dir` from the config, else `$TERMINAL_SANDBOX_DIR`, else
 * `${HERMES_HOME:-~/.hermes}/sandboxes`. A leading `~` is the user's home. Checked before anything
 * is made there, each problem a {@link ConfigError} naming where the path came from and the fix: a
 * relative path (it would depend on the folder Berth runs from: a sandbox once landed in a
 * checkout), one under `/proc`, `/sys` or `/dev` (kernel file systems), one where a file stands on
 * the way. Nothing is created here.
 */
export function resolveSandboxDir(configured: string | undefined, environment: NodeJS.ProcessEnv = process.env): string {
  const source = configured ? 'terminal.sandbox_dir' : environment.TERMINAL_SANDBOX_DIR ? 'TERMINAL_SANDBOX_DIR' : 'HERMES_HOME';
  const chosen = expandHome(configured || environment.TERMINAL_SANDBOX_DIR || path.join(hermesHome(environment), 'sandboxes'), environment);
  const shown = JSON.stringify(chosen.length > 200 ? `${chosen.slice(0, 200)}…` : chosen);
  if (!path.isAbsolute(chosen)) {
    throw new ConfigError(
      source,
      `${source} gives the sandbox folder ${shown}, a relative path, which would depend on the folder Berth runs from; ` +
        'write an absolute path (e.g. /var/lib/berth/sandboxes)',
    );
  }
  const resolved = path.resolve(chosen);
  const { real, blocker } = existingAncestor(resolved);
  const kernel = KERNEL_FOLDERS.find((folder) => [resolved, real].some((where) => where === folder || where.startsWith(`${folder}/`)));
  if (kernel) {
    throw new ConfigError(
      source,
      `${source} gives the sandbox folder ${shown}, under ${kernel}, a kernel file system where no folder can be kept; ` +
        'choose a folder on a disk (e.g. /var/lib/berth/sandboxes)',
    );
  }
  if (blocker) {
    throw new ConfigError(
      source,
      `${source} gives the sandbox folder ${shown}, but ${JSON.stringify(blocker)} is a file, not a folder; choose another path or move the file`,
    );
  }
  return resolved;
}

/** The sandbox root of a sandbox directory: `{sandbox_dir}/docker`, where every scope's folder is. */
export function sandboxRootOf(sandboxDir: string): string {
  return path.join(path.resolve(sandboxDir), SANDBOX_ROOT_FOLDER);
}

/** The folder of the disk images of the scopes under `root`: `{sandbox_dir}/disks/docker`. */
export function disksFolderOf(root: string): string {
  return path.join(path.dirname(root), DISKS_FOLDER, path.basename(root));
}
