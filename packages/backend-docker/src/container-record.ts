import type { DriverSandbox } from '@berth/core/driver';
import { LABELS } from '@berth/sandbox-runtime/driver';
import type Dockerode from 'dockerode';

// What a Docker-compatible engine's container records say, read the one way the driver reads them.

/** A container's state as the runtime knows states. */
export function stateOf(state: { Running?: boolean; Paused?: boolean; Status?: string } | string | undefined): DriverSandbox['state'] {
  const status = typeof state === 'string' ? state : state?.Paused ? 'paused' : state?.Running ? 'running' : (state?.Status ?? '');
  switch (status) {
    case 'running':
      return 'running';
    case 'paused':
      return 'paused';
    case 'exited':
    case 'created':
    case 'dead':
    case 'stopped':
    case 'configured':
      return 'stopped';
    default:
      return 'other';
  }
}

/** A container's name without the engine's leading slash. */
export const withoutSlash = (name: string | undefined): string => (name ?? '').replace(/^\//, '');

/**
 * A sandbox's own network: the one its label names, or, for a sandbox of an earlier release, the
 * network named as the container (a container on it says so in `NetworkMode` on Docker).
 */
export function ownNetworkOf(info: Dockerode.ContainerInspectInfo): string | undefined {
  const labelled = info.Config?.Labels?.[LABELS.network];
  if (labelled) return labelled;
  const name = withoutSlash(info.Name);
  return info.HostConfig?.NetworkMode === name ? name : undefined;
}
