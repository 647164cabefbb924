import type { BackendDescription, TerminalConfig } from '@berth/core';
import type { DoctorCheck } from './doctor-report.js';

/**
 * The runtime sandboxes run under: which one, whether it puts a kernel of its own between users
 * (gVisor) and what Berth does differently there, and a warning when its release is older than
 * the one the tests ran. A configured runtime the engine lacks is the isolation check's problem.
 */
export function runtimeChecks(config: TerminalConfig, description: BackendDescription, backendName: string): DoctorCheck[] {
  if (backendName === 'kubernetes') {
    return [
      {
        name: 'runtime',
        status: 'ok',
        detail: config.docker_runtime
          ? `each sandbox's pod asks for RuntimeClass ${config.docker_runtime} (docker_runtime); ` +
            "a node without its handler refuses the pod, and the refusal is the first command's error"
          : "pods run under the cluster's default runtime, sharing their node's kernel; " +
            "docker_runtime names a RuntimeClass (gVisor's, say) to change that (docs/gvisor.md)",
      },
    ];
  }
  const runtime = description.runtime;
  if (!runtime) return [];
  const offered = description.runtimes ? `; the engine offers ${description.runtimes.join(', ') || 'none'}` : '';
  if (runtime.configured && description.runtimes && !description.runtimes.includes(runtime.name)) return [];
  const whose = runtime.configured ? 'docker_runtime' : "the engine's default";
  const version = runtime.version ? `, ${runtime.version}` : '';
  const checks: DoctorCheck[] = [];
  if (runtime.gvisor) {
    checks.push({
      name: 'runtime',
      status: 'ok',
      detail: `sandboxes run under ${runtime.name} (${whose}: gVisor${version}), a kernel of its own for each sandbox${offered}`,
    });
    for (const fallback of runtime.fallbacks) checks.push({ name: 'runtime', status: 'ok', detail: `under gVisor, ${fallback}` });
  } else if (runtime.version) {
    checks.push({
      name: 'runtime',
      status: 'ok',
      detail:
        `sandboxes run under ${runtime.name} (${whose}${version}), sharing this host's kernel with each ` +
        `other${offered} (docs/gvisor.md: docker_runtime: runsc puts a kernel of its own between users)`,
    });
  } else {
    checks.push({
      name: 'runtime',
      status: 'ok',
      detail:
        `sandboxes run under ${runtime.name} (${whose}); ` +
        `its binary is not on this host, so Berth cannot tell its release, nor whether it is gVisor${offered}`,
    });
  }
  if (runtime.olderThanTested)
    checks.push({
      name: 'runtime',
      status: 'warning',
      detail: `${runtime.name} is release ${runtime.release}, older than the one Berth's tests ran (${runtime.olderThanTested})`,
      fix: `upgrade ${runtime.name} on the engine's host (docs/gvisor.md)`,
    });
  return checks;
}
