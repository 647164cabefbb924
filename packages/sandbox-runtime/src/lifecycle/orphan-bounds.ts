import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { HostLogger } from '@berth/core';
import { writeValue } from './shared-bound.js';

// cgroup v1: while a Berth process watches a bound, the bound's OOM killer is off and the
// fair-share guard decides who gives way (fair-share-guard.ts). A process that dies without
// closing (SIGKILL, the host's OOM killer) leaves it off; its installation's next process takes
// over, but until then a full bound makes everything in it wait for good — and on Podman that
// includes the engine's own cleanup processes, which run in the bound's `conmon` cgroup holding
// locks every `podman` command then waits for: seen here, `podman ps` hung machine-wide after a
// test gateway was killed while its bound was full. So every Berth process with a bound of its own
// looks at the others' now and then: one that has waited in its OOM (`under_oom`) at two looks
// ORPHAN_WAIT_MS apart has nobody deciding for it (a live guard acts within seconds), and the
// kernel gets the decision back, as it had it before Berth.

/** The name `auto` gives a bound. */
const AUTO_BOUND = /^berth-[0-9a-f]{6}$/;

/** How long another bound may wait in its OOM, seen at two looks, before the kernel decides again, ms. */
export const ORPHAN_WAIT_MS = 10_000;

/** How often the other bounds are looked at, ms. */
export const ORPHAN_LOOK_MS = 5_000;

/** Options of {@link createOrphanWatch}. */
export interface OrphanWatchOptions {
  /** cgroup v1's memory hierarchy, where the bounds are. */
  readonly memoryRoot: string;
  /** This installation's own bound's name (its own guard decides for it). */
  readonly own: string;
  readonly logger?: HostLogger | undefined;
}

/** Looks at the other installations' bounds; `look` resolves to the names given back to the kernel. */
export interface OrphanWatch {
  look(now?: number): Promise<string[]>;
}

export function createOrphanWatch(options: OrphanWatchOptions): OrphanWatch {
  // Bounds seen waiting in their OOM with their killer off, and since when.
  const waiting = new Map<string, number>();
  return {
    look: async (now = Date.now()) => {
      const names = (await fs.readdir(options.memoryRoot).catch(() => [] as string[])).filter((name) => AUTO_BOUND.test(name) && name !== options.own);
      const given: string[] = [];
      for (const name of names) {
        const file = path.join(options.memoryRoot, name, 'memory.oom_control');
        const control = await fs.readFile(file, 'utf8').catch(() => '');
        if (!/^oom_kill_disable 1$/m.test(control) || !/^under_oom 1$/m.test(control)) {
          waiting.delete(name);
          continue;
        }
        const since = waiting.get(name);
        if (since === undefined) {
          waiting.set(name, now);
          continue;
        }
        if (now - since < ORPHAN_WAIT_MS) continue;
        waiting.delete(name);
        if (
          await writeValue(file, '0').then(
            () => true,
            () => false,
          )
        ) {
          given.push(name);
          options.logger?.warn(
            `berth: the shared bound /${name} of another installation was full for over ${ORPHAN_WAIT_MS / 1000} s with no Berth process deciding who gives ` +
              'way (its process died without closing); the kernel decides for it again',
          );
        }
      }
      for (const name of waiting.keys()) if (!names.includes(name)) waiting.delete(name);
      return given;
    },
  };
}
