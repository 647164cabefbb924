import { promises as fs } from 'node:fs';
import path from 'node:path';
import { childNamed } from './fair-share.js';
import type { SharedBound } from './shared-bound.js';

/**
 * The CPU time, in seconds, the sandbox whose container id is `containerId` has used since its
 * cgroup was made: `usage_usec` of cgroup v2's `cpu.stat`, or cgroup v1's `cpuacct.usage`, in
 * its own cgroup under the shared bound's parent (Docker names it by the id, Podman
 * `libpod-{id}`, systemd `docker-{id}.scope`). Undefined where there is no such bound (rootless,
 * remote, Kubernetes, a bound that could not be made) or the cgroup cannot be read.
 */
export async function readSandboxCpuSeconds(bound: SharedBound, containerId: string): Promise<number | undefined> {
  if (!bound.version || bound.unenforced !== undefined || bound.paths.length === 0) return undefined;
  // v1: the parent's folder in the cpuacct hierarchy, beside the memory one the bound wrote.
  const memory = bound.paths[0]!;
  const parent = bound.version === 2 ? memory : path.join(path.dirname(path.dirname(memory)), 'cpuacct', path.basename(memory));
  const names = await fs.readdir(parent).catch(() => [] as string[]);
  const name = childNamed(names, containerId);
  if (name === undefined) return undefined;
  try {
    if (bound.version === 2) {
      const match = /^usage_usec (\d+)$/m.exec(await fs.readFile(path.join(parent, name, 'cpu.stat'), 'utf8'));
      return match ? Number(match[1]) / 1e6 : undefined;
    }
    const nanoseconds = Number((await fs.readFile(path.join(parent, name, 'cpuacct.usage'), 'utf8')).trim());
    return Number.isFinite(nanoseconds) ? nanoseconds / 1e9 : undefined;
  } catch {
    return undefined;
  }
}
