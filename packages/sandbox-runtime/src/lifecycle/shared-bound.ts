import { constants as fsConstants, promises as fs } from 'node:fs';
import path from 'node:path';
import type { DriverDescription } from '@berth/core/driver';
import { localHostSize } from './capacity.js';
import type { SandboxSettings } from '../sandbox-settings.js';
import { childNamed } from './fair-share.js';

// One bound for all of an installation's sandboxes together: a parent cgroup whose memory and
// pids limits keep the host and the gateway safe however many sandboxes run and whatever their
// users do, while each sandbox keeps its own limits inside it. Memory limits are ceilings, not
// reservations: this bound is what lets many sandboxes run at once without summing them.

/** Share of the engine host's memory all sandboxes together may use with `docker_total_memory: auto`. */
export const TOTAL_MEMORY_SHARE = 0.9;
/** Share of `pid_max` all sandboxes together may use with `docker_total_pids: auto`. */
export const TOTAL_PIDS_SHARE = 0.5;

/** The bound the runtime put its sandboxes under, or why it could not. */
export interface SharedBound {
  /** The engine's `--cgroup-parent` for every sandbox; absent: the engine's default. */
  readonly parent?: string;
  readonly memoryMb: number;
  readonly pids: number;
  /** Where the limits were written: cgroup v1's memory and pids folders, or v2's one folder. */
  readonly paths: readonly string[];
  /** The cgroup version of {@link paths}. */
  readonly version?: 1 | 2;
  /** Set when the limits do not hold: one line saying why and what to do. */
  readonly unenforced?: string;
}

/** Options of {@link prepareSharedBound}. */
export interface PrepareSharedBoundOptions {
  readonly settings: Pick<SandboxSettings, 'docker_cgroup_parent' | 'docker_total_memory' | 'docker_total_pids'>;
  /** What the driver said of its engine (its cgroups, when they are this host's; its host's size). */
  readonly description: Pick<DriverDescription, 'engine' | 'cgroups' | 'host'>;
  /**
   * Six hex digits of this installation (`installationTag`): the default parent's name.
   * `undefined` (a dry run only): the installation has no key yet, so no sandbox and no name.
   */
  readonly installationTag: string | undefined;
  /** The cgroup file system's mount point. @default /sys/fs/cgroup */
  readonly cgroupRoot?: string;
  /**
   * Writes nothing: says what would be done and whether this process could do it (`berth doctor`
   * describes a gateway's bound without making one).
   */
  readonly dryRun?: boolean;
}

/**
 * The parent cgroup's name the settings mean: `berth-{tag}` for `auto` (`berth-{tag}` as written
 * while the installation has no tag yet), `''` for none.
 */
export function sharedBoundName(settings: Pick<SandboxSettings, 'docker_cgroup_parent'>, installationTag: string | undefined): string {
  return settings.docker_cgroup_parent === 'auto' ? `berth-${installationTag ?? '{tag}'}` : settings.docker_cgroup_parent;
}

/** The memory and pids all sandboxes together may use, from the settings and the host's size. */
export function sharedBoundSize(
  settings: Pick<SandboxSettings, 'docker_total_memory' | 'docker_total_pids'>,
  host: { readonly memoryMb?: number | undefined } = {},
): { memoryMb: number; pids: number } {
  const local = localHostSize();
  return {
    memoryMb: settings.docker_total_memory === 'auto' ? Math.floor((host.memoryMb ?? local.memoryMb) * TOTAL_MEMORY_SHARE) : settings.docker_total_memory,
    pids: settings.docker_total_pids === 'auto' ? Math.floor(local.pidMax * TOTAL_PIDS_SHARE) : settings.docker_total_pids,
  };
}

/** Writes a cgroup file: one write of the whole value, no creation, no truncation. */
export async function writeValue(file: string, value: string): Promise<void> {
  const handle = await fs.open(file, 'r+');
  try {
    await handle.write(value);
  } finally {
    await handle.close();
  }
}

async function makeFolder(folder: string): Promise<void> {
  await fs.mkdir(folder).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
}

/**
 * Puts the installation's sandboxes under one parent cgroup with the shared limits, written
 * where the engine's cgroup manager will place them (cgroupfs: `/{name}` in the memory and pids
 * hierarchies, or the unified one), before any sandbox is made there. Never throws: what it could
 * not do is `unenforced`, a line the runtime logs and `berth doctor` shows.
 */
export async function prepareSharedBound(options: PrepareSharedBoundOptions): Promise<SharedBound> {
  const { settings, description } = options;
  if (options.installationTag === undefined && !options.dryRun) throw new Error('prepareSharedBound needs the installation tag to make a bound');
  const name = sharedBoundName(settings, options.installationTag);
  const size = sharedBoundSize(settings, description.host ?? {});
  if (name === '') {
    return {
      ...size,
      paths: [],
      unenforced: 'terminal.docker_cgroup_parent is "": sandboxes share no bound, so together they may use all of the host\'s memory and pids; set it to auto',
    };
  }
  const cgroups = description.cgroups;
  if (description.engine === 'kubernetes') {
    return {
      ...size,
      paths: [],
      unenforced:
        "on Kubernetes a ResourceQuota on the sandboxes' namespace bounds them all together (docs/backend-kubernetes.md); Berth sets no parent cgroup there",
    };
  }
  if (!cgroups) {
    return {
      ...size,
      paths: [],
      unenforced:
        `the ${description.engine} engine's cgroups are not this host's to bound (a rootless or remote engine): sandboxes share no bound beyond ` +
        `their own limits`,
    };
  }
  if (cgroups.manager === 'systemd') {
    // The engine makes the slice; its limits are systemd's to set.
    const slice = `${name}.slice`;
    return {
      parent: slice,
      ...size,
      paths: [],
      unenforced:
        `the ${description.engine} engine uses systemd's cgroups: set the shared bound with ` +
        `"systemctl set-property ${slice} MemoryMax=${size.memoryMb}M TasksMax=${size.pids}"` +
        (options.installationTag === undefined && settings.docker_cgroup_parent === 'auto'
          ? ' ({tag} is named once the first sandbox is made; berth doctor says it then)'
          : ''),
    };
  }
  const root = options.cgroupRoot ?? '/sys/fs/cgroup';
  const bytes = String(size.memoryMb * 1024 * 1024);
  const written: string[] = [];
  let version: 1 | 2 | undefined;
  try {
    if (options.dryRun) {
      // Where the limits would go must be writable by this process.
      for (const folder of cgroups.version === 2 ? [root] : [path.join(root, 'memory'), path.join(root, 'pids')]) await fs.access(folder, fsConstants.W_OK);
      return { parent: `/${name}`, ...size, paths: [] };
    }
    if (cgroups.version === 2) {
      const folder = path.join(root, name);
      // The memory and pids controllers must be on for the root's children to limit them.
      await writeValue(path.join(root, 'cgroup.subtree_control'), '+memory +pids').catch(() => undefined);
      await makeFolder(folder);
      written.push(folder);
      // The pids limit first: a memory limit below what is in use fails alone (EBUSY).
      await writeValue(path.join(folder, 'pids.max'), String(size.pids));
      await writeValue(path.join(folder, 'memory.max'), bytes);
      version = 2;
    } else {
      const pids = path.join(root, 'pids', name);
      await makeFolder(pids);
      await writeValue(path.join(pids, 'pids.max'), String(size.pids));
      const memory = path.join(root, 'memory', name);
      await makeFolder(memory);
      written.push(memory, pids);
      // With swap accounting the memory-and-swap limit must stay at or above the memory limit.
      const swap = path.join(memory, 'memory.memsw.limit_in_bytes');
      const hasSwap = await fs.access(swap).then(
        () => true,
        () => false,
      );
      if (hasSwap) await writeValue(swap, bytes).catch(() => undefined);
      await writeValue(path.join(memory, 'memory.limit_in_bytes'), bytes);
      if (hasSwap) await writeValue(swap, bytes);
      version = 1;
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code ?? (error as Error).message;
    return {
      parent: `/${name}`,
      ...size,
      paths: written,
      unenforced:
        code === 'EBUSY'
          ? `could not lower the shared bound /${name} to ${size.memoryMb} MB: its sandboxes use more than that now, and the kernel could not ` +
            `reclaim it; remove the largest of them (berth ls shows them; berth rm keeps their files) or set terminal.docker_total_memory above their use, ` +
            `and start again (its pids limit, ${size.pids}, is written; the old memory limit holds)`
          : `could not write the shared bound's limits under ${root} (${reason}): run the gateway as root, or make the cgroup /${name} with its ` +
            `limits yourself`,
    };
  }
  return { parent: `/${name}`, ...size, paths: written, ...(version ? { version } : {}) };
}

/** How full the bound is: memory in use (page cache that could be dropped not counted) and pids, against its limits. */
export interface BoundPressure {
  readonly memoryBytes: number;
  readonly memoryLimit: number;
  readonly pids: number;
  readonly pidsLimit: number;
}

/** What one sandbox holds of the bound, read from its own cgroup under the parent. */
export interface SandboxUsage {
  readonly memoryBytes: number;
  readonly pids: number;
}

async function readNumber(file: string): Promise<number> {
  const text = (await fs.readFile(file, 'utf8')).trim();
  return text === 'max' ? Number.POSITIVE_INFINITY : Number(text);
}

async function statValue(file: string, key: string): Promise<number> {
  const match = new RegExp(`^${key} (\\d+)$`, 'm').exec(await fs.readFile(file, 'utf8'));
  return match ? Number(match[1]) : 0;
}

async function usageOf(version: 1 | 2, memoryFolder: string, pidsFolder: string): Promise<SandboxUsage> {
  const memoryBytes =
    version === 2
      ? (await readNumber(path.join(memoryFolder, 'memory.current'))) - (await statValue(path.join(memoryFolder, 'memory.stat'), 'inactive_file'))
      : (await readNumber(path.join(memoryFolder, 'memory.usage_in_bytes'))) - (await statValue(path.join(memoryFolder, 'memory.stat'), 'total_inactive_file'));
  return { memoryBytes: Math.max(0, memoryBytes), pids: await readNumber(path.join(pidsFolder, 'pids.current')) };
}

/** Reads how full a bound {@link prepareSharedBound} made is; undefined when it made none or cannot be read. */
export async function readBoundPressure(bound: SharedBound): Promise<BoundPressure | undefined> {
  if (!bound.version || bound.unenforced !== undefined) return undefined;
  const memory = bound.paths[0]!;
  const pids = bound.paths[bound.version === 2 ? 0 : 1]!;
  try {
    const usage = await usageOf(bound.version, memory, pids);
    return {
      memoryBytes: usage.memoryBytes,
      memoryLimit: await readNumber(path.join(memory, bound.version === 2 ? 'memory.max' : 'memory.limit_in_bytes')),
      pids: usage.pids,
      pidsLimit: await readNumber(path.join(pids, 'pids.max')),
    };
  } catch {
    return undefined;
  }
}

/**
 * What the sandbox whose container id is `containerId` holds of the bound: its own cgroup under
 * the parent (Docker names it by the id, Podman `libpod-{id}`). Undefined when it has none.
 */
export async function readSandboxUsage(bound: SharedBound, containerId: string): Promise<SandboxUsage | undefined> {
  if (!bound.version || bound.unenforced !== undefined) return undefined;
  const child = async (folder: string): Promise<string | undefined> => {
    const names = await fs.readdir(folder).catch(() => [] as string[]);
    const name = childNamed(names, containerId);
    return name === undefined ? undefined : path.join(folder, name);
  };
  const memory = await child(bound.paths[0]!);
  const pids = await child(bound.paths[bound.version === 2 ? 0 : 1]!);
  if (!memory || !pids) return undefined;
  return usageOf(bound.version, memory, pids).catch(() => undefined);
}

/**
 * Removes the bound's cgroups once no sandbox is in them (a cgroup with members is kept): on
 * cgroup v1 in every hierarchy, since the engine makes the parent in each (cpu, blkio, devices…),
 * not only in the memory and pids ones whose limits Berth writes.
 */
export async function releaseSharedBound(bound: SharedBound): Promise<void> {
  const folders = [...bound.paths];
  if (bound.version === 1 && bound.parent && bound.paths[0]) {
    const root = path.dirname(path.dirname(bound.paths[0]));
    const name = bound.parent.replace(/^\//, '');
    const hierarchies = await fs.readdir(root, { withFileTypes: true }).catch(() => []);
    for (const hierarchy of hierarchies) {
      const folder = path.join(root, hierarchy.name, name);
      if (hierarchy.isDirectory() && !folders.includes(folder)) folders.push(folder);
    }
  }
  for (const folder of folders) await fs.rmdir(folder).catch(() => undefined);
}
