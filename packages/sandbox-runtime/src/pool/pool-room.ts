import { PRESSURE_HIGH } from '../lifecycle/capacity.js';
import { readBoundPressure } from '../lifecycle/shared-bound.js';
import type { RuntimeContext } from '../runtime-context.js';

/**
 * How full the shared bound may be for the pool to make one more: well below where the capacity
 * policy starts stopping idle sandboxes (`PRESSURE_HIGH`), so that a pooled sandbox, which serves
 * nobody yet, never makes a user's sandbox stop.
 */
export const POOL_PRESSURE = PRESSURE_HIGH * 0.7;

/**
 * Whether the pool may make one more sandbox: it counts in every cap a running sandbox counts in.
 * `docker_max_sandboxes` (this installation's sandboxes and the ready pooled ones); with
 * `docker_max_running: auto` and the shared bound in force, the bound's use below
 * {@link POOL_PRESSURE}; else the running cap, the pooled ones counted as running.
 */
export function createPoolRoom(
  context: RuntimeContext,
  counts: { installed: () => Promise<number>; ready: () => number; runningCap: () => Promise<number> },
): () => Promise<boolean> {
  const { settings } = context;
  return async () => {
    const most = settings.docker_max_sandboxes;
    if (most > 0 && (await counts.installed()) + counts.ready() >= most) return false;
    if (settings.docker_max_running === 'auto') {
      const pressure = await readBoundPressure(await context.sharedBound());
      if (pressure) return pressure.memoryBytes < pressure.memoryLimit * POOL_PRESSURE && pressure.pids < pressure.pidsLimit * POOL_PRESSURE;
    }
    const cap = await counts.runningCap();
    const running = [...context.entries.values()].filter((entry) => entry.running).length + counts.ready();
    return cap === 0 || running < cap;
  };
}
