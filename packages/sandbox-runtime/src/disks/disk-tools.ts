import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';

// The host's tools a per-user disk needs (util-linux, e2fsprogs), found and run, and whether this
// process can enforce `container_disk` with them at all.

const TOOLS = ['mkfs.ext4', 'mount', 'umount', 'losetup', 'resize2fs', 'e2fsck'] as const;
export type Tool = (typeof TOOLS)[number];
const SEARCH = ['/usr/sbin', '/sbin', '/usr/bin', '/bin'];
export const MB = 1024 * 1024;

export function findTool(tool: Tool): string | undefined {
  const folders = [...SEARCH, ...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean)];
  return folders.map((folder) => path.join(folder, tool)).find((candidate) => existsSync(candidate));
}

/** The tool's path, or its bare name (left to the `PATH` lookup) when it is not found. */
export const tool = (name: Tool): string => findTool(name) ?? name;

export function run(file: string, args: readonly string[], okCodes: readonly number[] = [0]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 120_000 }, (error, stdout, stderr) => {
      if (error && !(typeof error.code === 'number' && okCodes.includes(error.code))) {
        const reason = (stderr || error.message).trim().split('\n').pop();
        reject(Object.assign(new Error(`${path.basename(file)} ${args.join(' ')}: ${reason}`), { stderr }));
      } else {
        resolve(stdout);
      }
    });
  });
}

/** Why `container_disk` cannot be enforced by this process, or `undefined`. */
export function diskUnenforcedReason(limitMb: number, hostFolders: boolean): string | undefined {
  // 0 is the operator's choice (berth doctor names it as a risk); without host folders the driver sizes its storage.
  if (limitMb === 0 || !hostFolders) return undefined;
  const hint = "a user can fill the host's disk through /workspace and /root";
  if (process.platform !== 'linux') return `terminal.container_disk is not enforced: per-user disks need Linux; ${hint}`;
  if (process.getuid?.() !== 0)
    return `terminal.container_disk is not enforced: mounting a per-user disk needs root, and the gateway runs as uid ${process.getuid?.()}; ${hint}`;
  const missing = TOOLS.filter((tool) => !findTool(tool));
  if (missing.length > 0) return `terminal.container_disk is not enforced: ${missing.join(', ')} not found (install e2fsprogs and mount); ${hint}`;
  if (!existsSync('/dev/loop-control')) return `terminal.container_disk is not enforced: this host has no loop devices (/dev/loop-control); ${hint}`;
  return undefined;
}

/** An empty file system of `container_disk` (`limitMb`) in a new image file at `file`. */
export async function makeFileSystem(file: string, limitMb: number): Promise<void> {
  const handle = await open(file, 'w', 0o600);
  await handle.truncate(limitMb * MB);
  await handle.close();
  // -m 0: no blocks reserved for root (the sandbox user is root); lazy init: seconds become milliseconds.
  await run(tool('mkfs.ext4'), ['-q', '-F', '-m', '0', '-E', 'lazy_itable_init=1,lazy_journal_init=1,nodiscard', '-L', 'berth', file]);
}
