import { promises as fs } from 'node:fs';
import path from 'node:path';
import { boundFolders, childNamed } from './fair-share.js';
import { writeValue, type SharedBound } from './shared-bound.js';

// What the fair-share guard does to a sandbox's processes from the host, each process first
// checked to be in the sandbox's cgroup by the kernel's own record (`/proc/{pid}/cgroup`): a
// process id read in another pid namespace (a gateway in a container of its own), or reused
// meanwhile, names some other process, and is left alone.

/** The cgroup folder name of the sandbox `id` under the bound's memory folder, if it has one. */
export async function childOf(bound: Pick<SharedBound, 'paths' | 'version'>, id: string): Promise<string | undefined> {
  const folders = boundFolders(bound);
  if (!folders) return undefined;
  return childNamed(await fs.readdir(folders.memory).catch(() => [] as string[]), id);
}

/** The ids of the processes in the memory cgroup `name` under the bound, each checked as above. */
export async function tasksOf(bound: Pick<SharedBound, 'paths' | 'version'>, name: string): Promise<number[]> {
  const folders = boundFolders(bound);
  if (!folders) return [];
  const listed = (await fs.readFile(path.join(folders.memory, name, 'cgroup.procs'), 'utf8').catch(() => '')).split('\n').filter((line) => /^\d+$/.test(line));
  const checked = await Promise.all(
    listed.map(async (pid) => {
      const record = await fs.readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => '');
      const lines = record.split('\n');
      const inside =
        bound.version === 2
          ? lines.some((line) => line.startsWith('0::') && line.endsWith(`/${name}`))
          : lines.some((line) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(line) && line.endsWith(`/${name}`));
      return inside ? Number(pid) : undefined;
    }),
  );
  return checked.filter((pid): pid is number => pid !== undefined);
}

/**
 * Kills every process of the sandbox `id` at once, so that what they hold is free before the
 * engine's stop completes: v2 by its `cgroup.kill`; v1 each checked process. What it cannot do,
 * the stop does.
 */
export async function killSandboxTasks(bound: Pick<SharedBound, 'paths' | 'version'>, id: string): Promise<void> {
  const name = await childOf(bound, id);
  const folders = boundFolders(bound);
  if (!name || !folders) return;
  if (bound.version === 2) {
    await writeValue(path.join(folders.memory, name, 'cgroup.kill'), '1').catch(() => undefined);
    return;
  }
  for (const pid of await tasksOf(bound, name)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
}
