import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { SharedBound } from './shared-bound.js';

// Each running sandbox's share of the one bound all of an installation's sandboxes live under:
// the bound over the sandboxes in it, never less than the operator's floor. A sandbox may use more
// than its share while there is room; when the bound runs short, the one furthest over its share
// gives way (fair-share-guard.ts), and the stopping policy counts no sandbox for more than its
// share (stopping-policies.ts), so one user's pinned memory is never a reason to stop another's.

/** The least a running sandbox's pids share is (its own limit, when that is less). */
export const SHARE_FLOOR_PIDS = 64;

/** What one sandbox under the bound holds, all of it: its processes' memory, its tmpfs and page cache. */
export interface SandboxHolding {
  /** The engine's container id, read from the cgroup's name. */
  readonly id: string;
  readonly memoryBytes: number;
  readonly pids: number;
}

/** The share each sandbox under the bound is entitled to, and the bound's limits. */
export interface Shares {
  readonly memoryBytes: number;
  readonly pids: number;
  readonly memoryLimit: number;
  readonly pidsLimit: number;
}

/**
 * A child cgroup's container id: Docker's `{id}`, Podman's `libpod-{id}`, systemd's
 * `docker-{id}.scope`. Other children (Podman's `conmon`) are the engine's own, no sandbox; what
 * they hold is in the bound's use all the same. (Whoever stops a sandbox by its id still asks the
 * engine first whether it is a sandbox of Berth's.)
 */
export const CHILD_NAME = /^(?:libpod-|docker-|crio-)?([0-9a-f]{64})(?:\.scope)?$/;

/** The one of a bound's child cgroup `names` that is the container `id`'s, if any. */
export const childNamed = (names: readonly string[], id: string): string | undefined => names.find((name) => CHILD_NAME.exec(name)?.[1] === id);

async function readCount(file: string): Promise<number> {
  const text = (await fs.readFile(file, 'utf8')).trim();
  if (text === 'max') return Number.POSITIVE_INFINITY;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${file} holds no count`);
  return value;
}

/** The memory and pids folders of the bound (v1: two hierarchies; v2: one). */
export function boundFolders(bound: Pick<SharedBound, 'paths' | 'version'>): { memory: string; pids: string } | undefined {
  if (!bound.version || bound.paths.length === 0) return undefined;
  return { memory: bound.paths[0]!, pids: bound.paths[bound.version === 2 ? 0 : 1]! };
}

/** The memory file of a cgroup that counts all it holds (page cache and tmpfs included). */
export function memoryFile(version: 1 | 2): string {
  return version === 2 ? 'memory.current' : 'memory.usage_in_bytes';
}

/**
 * Every sandbox under the bound with all it holds, read from the kernel's files (whatever the
 * engine or the sandbox says). A child that is no container (the engine's own) or that goes away
 * while read is left out; what it holds is still in the bound's own use.
 */
export async function readHoldings(bound: Pick<SharedBound, 'paths' | 'version'>): Promise<SandboxHolding[]> {
  const folders = boundFolders(bound);
  if (!folders) return [];
  const names = await fs.readdir(folders.memory, { withFileTypes: true }).catch(() => []);
  const read = await Promise.all(
    names.map(async (name): Promise<SandboxHolding | undefined> => {
      const id = name.isDirectory() ? CHILD_NAME.exec(name.name)?.[1] : undefined;
      if (!id) return undefined;
      try {
        const memoryBytes = await readCount(path.join(folders.memory, name.name, memoryFile(bound.version!)));
        const pids = await readCount(path.join(folders.pids, name.name, 'pids.current')).catch(() => 0);
        return { id, memoryBytes, pids };
      } catch {
        return undefined;
      }
    }),
  );
  return read.filter((holding): holding is SandboxHolding => holding !== undefined);
}

/**
 * Each sandbox's share: the bound's limits over the sandboxes under it (at least one), never
 * less than the floors (`floorMemoryBytes`, `floorPids`), never more than the bound.
 */
export function sharesOf(
  limits: { readonly memoryLimit: number; readonly pidsLimit: number },
  sandboxes: number,
  floors: { readonly memoryBytes: number; readonly pids: number },
): Shares {
  const count = Math.max(1, sandboxes);
  return {
    memoryBytes: Math.min(limits.memoryLimit, Math.max(floors.memoryBytes, Math.floor(limits.memoryLimit / count))),
    pids: Math.min(limits.pidsLimit, Math.max(floors.pids, Math.floor(limits.pidsLimit / count))),
    memoryLimit: limits.memoryLimit,
    pidsLimit: limits.pidsLimit,
  };
}

/**
 * What the sandboxes hold beyond their shares, added up: the part of the bound's use that is
 * theirs to give back, not a reason to stop anyone else. The bound's use less this is how full it
 * is for everyone else (page cache its removed sandboxes left counts as use).
 */
export function beyondShares(holdings: readonly SandboxHolding[], shares: Shares): { memoryBytes: number; pids: number } {
  let memoryBytes = 0;
  let pids = 0;
  for (const holding of holdings) {
    memoryBytes += Math.max(0, holding.memoryBytes - shares.memoryBytes);
    pids += Math.max(0, holding.pids - shares.pids);
  }
  return { memoryBytes, pids };
}

/**
 * The sandbox that gives way when the bound runs short of `resource`: the one furthest over its
 * share of it. Every sandbox's share is the same, so that is the one holding the most (on a tie,
 * the first by id, so two processes of an installation choose alike). Undefined with no sandbox.
 */
export function chooseHog(holdings: readonly SandboxHolding[], resource: 'memory' | 'pids'): SandboxHolding | undefined {
  const held = (holding: SandboxHolding): number => (resource === 'memory' ? holding.memoryBytes : holding.pids);
  let chosen: SandboxHolding | undefined;
  for (const holding of holdings) {
    if (!chosen || held(holding) > held(chosen) || (held(holding) === held(chosen) && holding.id < chosen.id)) chosen = holding;
  }
  return chosen;
}

/**
 * Each sandbox's share of the bound whose parent cgroup is `parent` and what each holds, read from
 * the host's cgroup files (`berth doctor`); undefined when the bound is not on this host.
 */
export async function readBoundShares(
  bound: { readonly parent: string; readonly memoryMb: number; readonly pids: number },
  floors: { readonly memoryBytes: number; readonly pids: number },
  cgroupRoot = '/sys/fs/cgroup',
): Promise<{ shares: Shares; holdings: SandboxHolding[] } | undefined> {
  const name = bound.parent.replace(/^\//, '');
  const v1 = path.join(cgroupRoot, 'memory', name);
  const version = await fs.access(v1).then(
    () => 1 as const,
    () => 2 as const,
  );
  const paths = version === 1 ? [v1, path.join(cgroupRoot, 'pids', name)] : [path.join(cgroupRoot, name)];
  if (
    !(await fs.access(paths[0]!).then(
      () => true,
      () => false,
    ))
  )
    return undefined;
  const holdings = await readHoldings({ paths, version });
  return { shares: sharesOf({ memoryLimit: bound.memoryMb * 2 ** 20, pidsLimit: bound.pids }, holdings.length, floors), holdings };
}
