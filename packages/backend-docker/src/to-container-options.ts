import type { SandboxSpec } from '@berth/core/driver';
import { CHANNELS_TARGET, HOME_TARGET, WORKSPACE_TARGET } from '@berth/sandbox-runtime/driver';
import type Dockerode from 'dockerode';

const MEGABYTE = 1024 * 1024;
/** Size of `/run` with a read-only root: pid and lock files. */
const RUN_MB = 16;

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
        // Read-only: the sandbox can open the FIFOs there, never replace or add one.
        ...(spec.channels ? [{ Type: 'bind' as const, Source: spec.channels, Target: CHANNELS_TARGET, ReadOnly: true }] : []),
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
      // With a read-only root these are the writable places besides the two folders, each bounded
      // (and charged to the sandbox's memory, as tmpfs pages are).
      Tmpfs: {
        '/tmp': `rw,nosuid,nodev,size=${limits.tmpMb}m,mode=1777`,
        ...(security.readOnlyRoot ? { '/var/tmp': `rw,nosuid,nodev,size=${limits.tmpMb}m,mode=1777`, '/run': `rw,nosuid,nodev,size=${RUN_MB}m,mode=755` } : {}),
      },
      // No IPv6 in a sandbox: the egress policy is IPv4, and nothing reaches a host over IPv6 past it.
      Sysctls: { 'net.ipv6.conf.all.disable_ipv6': '1', 'net.ipv6.conf.default.disable_ipv6': '1' },
      Init: true,
      ReadonlyRootfs: security.readOnlyRoot,
      NetworkMode: networkMode,
      RestartPolicy: { Name: 'no' },
      ...(security.runtime ? { Runtime: security.runtime } : {}),
      // The installation's one bound, shared by all its sandboxes (the runtime's shared-bound.ts).
      ...(limits.cgroupParent ? { CgroupParent: limits.cgroupParent } : {}),
    },
  };
}
