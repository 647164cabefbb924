import type { SandboxSpec } from '@berth/core';
import { HOME_TARGET, WORKSPACE_TARGET } from '@berth/sandbox-runtime';
import type Dockerode from 'dockerode';

const MEGABYTE = 1024 * 1024;

/**
 * A sandbox spec as a Docker-compatible create request: every capability dropped but the
 * spec's few, no-new-privileges, the pids, memory (no swap beyond it) and CPU limits, explicit
 * ulimits, a bounded `/tmp` tmpfs, the engine's init, the scope's two folders and the operator's
 * volumes as bind mounts, no restart policy, no variables. See docs/backend-docker.md for what
 * each setting protects against.
 */
export function toContainerCreateOptions(spec: SandboxSpec, networkMode: string): Dockerode.ContainerCreateOptions {
  const { limits, security } = spec;
  return {
    name: spec.name,
    Image: spec.image,
    // The whole main process as the entrypoint: the image's own command never runs.
    Entrypoint: [...spec.command],
    WorkingDir: spec.workingDir,
    Hostname: spec.hostname,
    Env: [],
    Labels: { ...spec.labels },
    StopTimeout: spec.stopGraceSeconds,
    HostConfig: {
      Mounts: [
        { Type: 'bind', Source: spec.workspace, Target: WORKSPACE_TARGET, ReadOnly: false },
        { Type: 'bind', Source: spec.home, Target: HOME_TARGET, ReadOnly: false },
        ...spec.volumes.map((volume) => ({ Type: 'bind' as const, Source: volume.source, Target: volume.target, ReadOnly: volume.readOnly })),
      ],
      CapDrop: ['ALL'],
      CapAdd: [...security.capabilities],
      SecurityOpt: security.noNewPrivileges ? ['no-new-privileges'] : [],
      PidsLimit: limits.pids,
      Memory: limits.memoryMb * MEGABYTE,
      MemorySwap: limits.memoryMb * MEGABYTE,
      NanoCpus: Math.round(limits.cpus * 1e9),
      Ulimits: [
        { Name: 'nofile', Soft: limits.nofile, Hard: limits.nofile },
        { Name: 'nproc', Soft: limits.nproc, Hard: limits.nproc },
      ],
      Tmpfs: { '/tmp': `rw,nosuid,nodev,size=${limits.tmpMb}m,mode=1777` },
      Init: true,
      ReadonlyRootfs: security.readOnlyRoot,
      NetworkMode: networkMode,
      RestartPolicy: { Name: 'no' },
      ...(security.runtime ? { Runtime: security.runtime } : {}),
    },
  };
}
