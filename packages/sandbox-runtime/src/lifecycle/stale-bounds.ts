import { promises as fs } from 'node:fs';
import path from 'node:path';

// Every installation with `docker_cgroup_parent: auto` has a bound of its own, `berth-{tag}`, and
// the engine makes that parent in each cgroup v1 hierarchy (cpu, blkio, devices…). Its last
// process out removes it (bound-keeper.ts), but an installation that is gone (a sandbox root
// deleted, a process killed) leaves it behind: this machine's test runs left thousands. A
// process that makes its own bound removes the others' that are empty and old: the kernel
// refuses to remove a cgroup with a process or a child in it (EBUSY), so a bound with a
// sandbox in it stays; one of a live installation whose sandboxes are all stopped may go, and
// that installation makes it again before its next start and says so (boundDrift), and reads it
// back once that sandbox runs (a removal racing the start).

/** The name `auto` gives a bound: `berth-` and six hex digits of an installation. */
const AUTO_BOUND = /^berth-[0-9a-f]{6}$/;

/** A bound made at least this long ago, and empty now, is another installation's leftover, ms. */
export const STALE_BOUND_MS = 60 * 60 * 1000;

/** Options of {@link sweepStaleBounds}. */
export interface SweepStaleBoundsOptions {
  /** The cgroup file system's mount point. */
  readonly cgroupRoot: string;
  readonly version: 1 | 2;
  /** This installation's own bound's name (never removed here). */
  readonly own: string;
  /** @default STALE_BOUND_MS */
  readonly olderThanMs?: number;
  /** @default Date.now() */
  readonly now?: number;
}

/** How deep below a bound empty cgroups are looked for (Podman leaves `conmon` one level down). */
const CHILD_DEPTH = 3;

/**
 * Removes the cgroups below `folder` that have no member and were made before `oldest`, deepest
 * first; true when none is left. A young one stays (an engine may be making a sandbox in it).
 */
async function removeEmptyChildren(folder: string, oldest: number, depth: number): Promise<boolean> {
  const children = await fs.readdir(folder, { withFileTypes: true }).catch(() => undefined);
  if (!children) return false;
  let left = false;
  for (const child of children.filter((entry) => entry.isDirectory())) {
    const inner = path.join(folder, child.name);
    const made = await fs.lstat(inner).catch(() => undefined);
    const gone =
      made !== undefined &&
      made.mtimeMs <= oldest &&
      depth > 0 &&
      (await removeEmptyChildren(inner, oldest, depth - 1)) &&
      (await fs.rmdir(inner).then(
        () => true,
        () => false,
      ));
    if (!gone) left = true;
  }
  return !left;
}

/**
 * Removes the empty `berth-{tag}` cgroups of other installations made more than
 * {@link STALE_BOUND_MS} ago (a cgroup's time is when it was made: the kernel changes it for
 * nothing else), in every hierarchy, with the empty old cgroups below them (no member in any). Resolves to the names of the bounds it removed anywhere.
 */
export async function sweepStaleBounds(options: SweepStaleBoundsOptions): Promise<string[]> {
  const { cgroupRoot, own } = options;
  const oldest = (options.now ?? Date.now()) - (options.olderThanMs ?? STALE_BOUND_MS);
  const hierarchies =
    options.version === 2
      ? [cgroupRoot]
      : (await fs.readdir(cgroupRoot, { withFileTypes: true }).catch(() => []))
          .filter((entry) => entry.isDirectory())
          .map((entry) => path.join(cgroupRoot, entry.name));
  const removed = new Set<string>();
  for (const hierarchy of hierarchies) {
    for (const name of await fs.readdir(hierarchy).catch(() => [] as string[])) {
      if (!AUTO_BOUND.test(name) || name === own) continue;
      const folder = path.join(hierarchy, name);
      const made = await fs.lstat(folder).catch(() => undefined);
      if (!made?.isDirectory() || made.mtimeMs > oldest) continue;
      // Podman leaves an empty `conmon` cgroup in a bound, which would keep it for good.
      if (!(await removeEmptyChildren(folder, oldest, CHILD_DEPTH))) continue;
      // rmdir only: the kernel keeps a cgroup that has members or children.
      if (
        await fs.rmdir(folder).then(
          () => true,
          () => false,
        )
      )
        removed.add(name);
    }
  }
  return [...removed];
}
