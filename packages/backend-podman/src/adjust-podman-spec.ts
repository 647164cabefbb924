import { CHANNELS_TARGET, HOME_TARGET, WORKSPACE_TARGET } from '@berth/sandbox-runtime/driver';
import { SandboxError } from '@berth/core';
import type Dockerode from 'dockerode';
import type { PodmanHost } from './read-podman-host.js';

/** The network mode Podman sandboxes get when `docker_network` is true: one private user-mode stack each. */
export const PODMAN_SANDBOX_NETWORK = 'slirp4netns';

/** Capabilities a rootless sandbox never gets, whatever `docker_cap_add` says: they would let files leave the operator's ownership. */
export const ROOTLESS_WITHHELD_CAPABILITIES: readonly string[] = ['CHOWN', 'SETUID', 'SETGID'];

/** Options of {@link adjustPodmanHostConfig}. */
export interface AdjustPodmanHostConfigOptions {
  readonly host: PodmanHost;
  /** `terminal.docker_pids_limit`: the process cap when the engine cannot apply a pids limit. */
  readonly pidsLimit: number;
}

/**
 * Podman's last word on the shared host configuration:
 * - no `Init`: Podman's init (catatonit) is often not installed, and the keep-alive shell,
 *   which waits on any child, already reaps orphans;
 * - rootless: `UsernsMode: keep-id`, so commands run as the gateway's own user and every file
 *   they write in `/workspace` and `/root` belongs to that user on the host; CHOWN, SETUID and
 *   SETGID are withheld so nothing can move a file to another id;
 * - rootless on cgroup v1 (no memory, CPU or pids limits): the `nproc` ulimit is lowered to the
 *   pids limit, which then bounds the processes of the sandbox's user namespace instead;
 * - SELinux enforcing: the workspace and home are bind-mounted with a private label (`:Z`).
 */
export function adjustPodmanHostConfig(hostConfig: Dockerode.HostConfig, options: AdjustPodmanHostConfigOptions): Dockerode.HostConfig {
  const { host } = options;
  const adjusted: Dockerode.HostConfig = { ...hostConfig, Init: false };
  if (host.rootless) {
    adjusted.UsernsMode = 'keep-id';
    // Podman hands a non-root user its capabilities as ambient ones. With these three a command
    // could chown a file, or become another id, to a subordinate id on the host that the
    // operator cannot delete without root.
    adjusted.CapAdd = (hostConfig.CapAdd ?? []).filter((name: string) => !ROOTLESS_WITHHELD_CAPABILITIES.includes(name.replace(/^CAP_/, '')));
  }
  if (!host.resourceLimits) {
    adjusted.Ulimits = (hostConfig.Ulimits ?? []).map((limit) =>
      limit.Name === 'nproc'
        ? {
            Name: 'nproc',
            Soft: Math.min(limit.Soft ?? options.pidsLimit, options.pidsLimit),
            Hard: Math.min(limit.Hard ?? options.pidsLimit, options.pidsLimit),
          }
        : limit,
    );
    // Podman ignores these here; dropping them keeps the stored spec honest about what applies.
    delete adjusted.PidsLimit;
    delete adjusted.Memory;
    delete adjusted.MemorySwap;
    delete adjusted.NanoCpus;
  }
  if (host.selinuxEnforcing) {
    const relabelled = new Set([WORKSPACE_TARGET, HOME_TARGET, CHANNELS_TARGET]);
    const binds = [...(hostConfig.Binds ?? [])];
    const mounts: Dockerode.MountSettings[] = [];
    for (const mount of hostConfig.Mounts ?? []) {
      if (mount.Type !== 'bind' || !relabelled.has(mount.Target)) {
        mounts.push(mount);
        continue;
      }
      // The Mounts form has no relabel option; the Binds form does, and it is split on `:`.
      if (mount.Source.includes(':') || mount.Source.includes(',')) {
        throw new SandboxError(
          'SANDBOX_PATH_UNSUPPORTED',
          `the sandbox folder ${mount.Source} contains ":" or ",", which SELinux relabelling cannot mount; choose a terminal.sandbox_dir without them`,
        );
      }
      binds.push(`${mount.Source}:${mount.Target}:${mount.ReadOnly ? 'ro' : 'rw'},Z`);
    }
    adjusted.Mounts = mounts;
    adjusted.Binds = binds;
  }
  return adjusted;
}

/**
 * Podman's last word on the whole container spec. Rootless with keep-id, the sandbox user is
 * the gateway's user, whose account Podman gives the working folder as home; `HOME` points it
 * back at the persistent `/root`, as on Docker.
 */
export function transformPodmanCreate(spec: Dockerode.ContainerCreateOptions, host: PodmanHost): Dockerode.ContainerCreateOptions {
  if (!host.rootless) return spec;
  const env = (spec.Env ?? []).filter((entry) => !entry.startsWith('HOME='));
  return { ...spec, Env: [...env, `HOME=${HOME_TARGET}`] };
}

/**
 * Podman's last word on a create request: the host configuration adjusted as above (the pids
 * limit it falls back to is the request's own), and the rootless `HOME`.
 */
export function adjustPodmanCreate(request: Dockerode.ContainerCreateOptions, host: PodmanHost): Dockerode.ContainerCreateOptions {
  const hostConfig = adjustPodmanHostConfig(request.HostConfig ?? {}, { host, pidsLimit: request.HostConfig?.PidsLimit ?? 512 });
  return transformPodmanCreate({ ...request, HostConfig: hostConfig }, host);
}
