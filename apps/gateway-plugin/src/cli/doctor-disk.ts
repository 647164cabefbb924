import { statfsSync } from 'node:fs';
import path from 'node:path';
import type { TerminalConfig } from '@berth/core';
import type { DoctorCheck } from './doctor-report.js';

/** The per-user disks against the free space under the sandbox root (they are sparse: space is taken as it is written). */
export function diskCheck(config: TerminalConfig, root: string): DoctorCheck {
  if (config.container_disk === 0)
    return { name: 'disk', status: 'warning', detail: 'terminal.container_disk is 0: no per-user disks (see the isolation check)' };
  let freeMb: number | undefined;
  for (let folder = path.resolve(root); freeMb === undefined; folder = path.dirname(folder)) {
    try {
      const stats = statfsSync(folder);
      freeMb = Math.floor((stats.bavail * stats.bsize) / 1024 / 1024);
    } catch {
      if (folder === path.dirname(folder)) break;
    }
  }
  const most = config.docker_max_sandboxes;
  const sum = most > 0 ? most * config.container_disk : undefined;
  const detail =
    `each sandbox has a disk of ${config.container_disk} MB (container_disk)` +
    (sum === undefined ? '' : `; ${most} of them (docker_max_sandboxes) could hold ${sum} MB`) +
    (freeMb === undefined ? '' : `, with ${freeMb} MB free under ${root}`);
  if (sum === undefined || freeMb === undefined || sum <= freeMb) return { name: 'disk', status: 'ok', detail };
  return {
    name: 'disk',
    status: 'warning',
    detail: `${detail}: full disks together would fill the host first`,
    fix: 'lower terminal.container_disk or docker_max_sandboxes, or give the sandbox root more space',
  };
}
