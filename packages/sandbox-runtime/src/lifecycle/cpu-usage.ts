import { promises as fs } from 'node:fs';
import path from 'node:path';
import { CHILD_NAME } from './fair-share.js';
import type { SharedBound } from './shared-bound.js';

// A sandbox's CPU time since its cgroup was made: `usage_usec` of cgroup v2's `cpu.stat`, or
// cgroup v1's `cpuacct.usage`, in its own cgroup under the shared bound's parent (Docker names it
// by the id, Podman `libpod-{id}`, systemd `docker-{id}.scope`: fair-share.ts's CHILD_NAME).
// Undefined where there is no such bound (rootless, remote, Kubernetes, a bound that could not be
// made) or the cgroup cannot be read.

/** The folder holding the sandboxes' CPU counters: v1's cpuacct hierarchy beside the memory one the bound wrote. */
function cpuFolder(bound: SharedBound): string | undefined {
  if (!bound.version || bound.unenforced !== undefined || bound.paths.length === 0) return undefined;
  const memory = bound.paths[0]!;
  return bound.version === 2 ? memory : path.join(path.dirname(path.dirname(memory)), 'cpuacct', path.basename(memory));
}

async function readSeconds(folder: string, version: 1 | 2): Promise<number | undefined> {
  try {
    if (version === 2) {
      const match = /^usage_usec (\d+)$/m.exec(await fs.readFile(path.join(folder, 'cpu.stat'), 'utf8'));
      return match ? Number(match[1]) / 1e6 : undefined;
    }
    const nanoseconds = Number((await fs.readFile(path.join(folder, 'cpuacct.usage'), 'utf8')).trim());
    return Number.isFinite(nanoseconds) ? nanoseconds / 1e9 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The CPU seconds of every sandbox under the bound whose container id is in `containerIds`, by
 * id, from one listing of the parent (a metrics scrape reads them all at once).
 */
export async function readSandboxesCpuSeconds(bound: SharedBound, containerIds: ReadonlySet<string>): Promise<Map<string, number>> {
  const folder = cpuFolder(bound);
  const found = new Map<string, number>();
  if (folder === undefined || containerIds.size === 0) return found;
  const names = await fs.readdir(folder).catch(() => [] as string[]);
  await Promise.all(
    names.map(async (name) => {
      const id = CHILD_NAME.exec(name)?.[1];
      if (id === undefined || !containerIds.has(id)) return;
      const seconds = await readSeconds(path.join(folder, name), bound.version!);
      if (seconds !== undefined) found.set(id, seconds);
    }),
  );
  return found;
}

/** The CPU seconds of the sandbox whose container id is `containerId`. */
export async function readSandboxCpuSeconds(bound: SharedBound, containerId: string): Promise<number | undefined> {
  return (await readSandboxesCpuSeconds(bound, new Set([containerId]))).get(containerId);
}
