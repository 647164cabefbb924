import type { BackendDescription, TerminalConfig } from '@berth/core';
import { capacityReport, describeRunningCap, type HostSize } from '@berth/sandbox-runtime';
import type { DoctorCheck } from './doctor-report.js';

/** The running sandboxes' limits added up against the host: memory, CPUs, pids against pid_max. */
export function capacityCheck(config: TerminalConfig, host: HostSize, sharedBound?: BackendDescription['sharedBound']): DoctorCheck {
  if (config.docker_max_running === 'auto' && sharedBound?.enforced)
    return { name: 'capacity', status: 'ok', detail: describeRunningCap(config, host, sharedBound) };
  const report = capacityReport(config, host);
  const cap = config.docker_max_running === 'auto' ? `${report.maxRunning} at once (docker_max_running: auto)` : `${report.maxRunning} at once`;
  const sums =
    `their limits add up to ${report.memoryMb.sum} of ${report.memoryMb.host} MB of memory, ${report.cpus.sum} of ${report.cpus.host} CPUs and ` +
    `${report.pids.sum} of ${report.pids.host} pids (pid_max); at most ${config.docker_max_sandboxes || 'any number of'} sandboxes ` +
    'exist (docker_max_sandboxes)';
  if (report.maxRunning === 0) {
    return {
      name: 'capacity',
      status: 'warning',
      detail: `docker_max_running is 0: any number of sandboxes run at once, each with ${config.container_memory} MB and ${config.docker_pids_limit} pids`,
      fix: 'set terminal.docker_max_running to auto',
    };
  }
  if (report.memoryMb.sum > report.memoryMb.host || report.pids.sum > report.pids.host) {
    return {
      name: 'capacity',
      status: 'problem',
      detail: `up to ${cap}: ${sums}, more than the host has`,
      fix: 'lower terminal.docker_max_running (or set it to auto), container_memory or docker_pids_limit',
    };
  }
  return { name: 'capacity', status: 'ok', detail: `up to ${cap}: ${sums}` };
}
