import { createHash } from 'node:crypto';
import type { SandboxInfo, SandboxPaths, SandboxScope } from '@berth/core';
import type { SandboxSpec } from '@berth/core/driver';
import { SANDBOX_LAYOUT } from './files/sandbox-layout.js';
import type { SandboxSettings } from './sandbox-settings.js';
import keepAlive from './shell/keep-alive.sh';
import { fillTemplate, programLine } from './shell/program-file.js';

/** Label keys Berth puts on what it creates; values never hold a variable's value. */
export const LABELS = {
  managedBy: 'dev.berth.managed-by',
  engine: 'dev.berth.engine',
  scope: 'dev.berth.scope',
  kind: 'dev.berth.kind',
  platform: 'dev.berth.platform',
  user: 'dev.berth.user',
  task: 'dev.berth.task',
  /** The host profile of the scope, on a profile's sandboxes only (core's profile.ts). */
  profile: 'dev.berth.profile',
  workspace: 'dev.berth.workspace',
  home: 'dev.berth.home',
  configHash: 'dev.berth.config-hash',
  /** The sandbox's own network, when the engine gives it one (the driver sets it). */
  network: 'dev.berth.network',
  /** On a sandbox network: the interface name its bridge was given (the egress policy knows an installation's sandboxes by it). */
  bridge: 'dev.berth.bridge',
  /** On a network: the process that made it (`processIdentity`), so one a killed gateway left is known for an orphan at once. */
  maker: 'dev.berth.maker',
} as const;

/** The value of the `managed-by` label. */
export const MANAGED_BY = 'berth';

/** Where the scope's folders appear inside the sandbox. */
export const WORKSPACE_TARGET = SANDBOX_LAYOUT.workspace;
/** The sandbox user's home. */
export const HOME_TARGET = SANDBOX_LAYOUT.home;
/** Every sandbox's hostname: it says nothing about whose sandbox it is. */
export const SANDBOX_HOSTNAME = 'sandbox';

/** Where a sandbox's channel folder appears, read-only: the FIFOs its launcher starts shells on. */
export const CHANNELS_TARGET = '/run/berth';

/**
 * What the sandbox runs as its main process: a shell that waits and leaves at once on TERM, so
 * a stop takes milliseconds, not the engine's kill timeout. Where the channel folder is mounted
 * and holds the `launch` FIFO (drivers with host folders), a child of it is the launcher: for
 * each line read there (a channel's name, hex digits only) it starts `/bin/sh` on that channel's
 * three FIFOs, in `/workspace`, in a session of its own where the image has `setsid` (so the
 * kill shell can take what a command leaves to init by its process group), after saying the
 * name on stdout; started from a subshell that leaves at once, so init, not the launcher (which
 * never waits), reaps it when it ends. A launcher that cannot open the FIFO (a user namespace
 * that maps the gateway's user to nobody, say) ends rather than spin. Elsewhere (or when the
 * launcher is gone) shells come through engine execs.
 * The script is shell/keep-alive.sh, one line (a process list shows it). It starts with
 * `trap "exit 0" TERM INT HUP;`, by which `isIdleProcess` (is-sandbox-busy.ts) knows the launcher
 * and its forks; its `sleep` is idle too.
 */
export const KEEP_ALIVE_COMMAND = ['/bin/sh', '-c', fillTemplate(programLine(keepAlive), { CHANNELS: CHANNELS_TARGET })] as const;

/** The ownership labels of a scope's sandbox: who it belongs to (for `berth ls`) and where its files are. */
export function scopeLabels(options: {
  scope: SandboxScope;
  paths: SandboxPaths;
  engine: string;
  extra?: Readonly<Record<string, string>>;
}): Record<string, string> {
  const { scope, paths } = options;
  return {
    ...options.extra,
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.engine]: options.engine,
    [LABELS.scope]: scope.key,
    [LABELS.kind]: scope.kind,
    ...(scope.kind === 'user' ? { [LABELS.platform]: scope.primary.platform, [LABELS.user]: scope.primary.id } : { [LABELS.task]: scope.taskId }),
    ...(scope.profile !== undefined ? { [LABELS.profile]: scope.profile } : {}),
    [LABELS.workspace]: paths.workspace,
    [LABELS.home]: paths.home,
  };
}

/** Who a sandbox belongs to, read back from its labels. */
export function ownerOf(labels: Readonly<Record<string, string>>): Pick<SandboxInfo, 'kind' | 'platform' | 'userId' | 'taskId' | 'profile'> {
  const profile = labels[LABELS.profile];
  const inProfile = profile !== undefined ? { profile } : {};
  return labels[LABELS.kind] === 'task'
    ? { kind: 'task', taskId: labels[LABELS.task] ?? '', ...inProfile }
    : { kind: 'user', platform: labels[LABELS.platform] ?? '', userId: labels[LABELS.user] ?? '', ...inProfile };
}

/** A `docker_volumes` entry, `host:container[:ro|rw]`. */
export function parseVolume(volume: string): { source: string; target: string; readOnly: boolean } {
  const [source, target, mode] = volume.split(':');
  return { source: source!, target: target!, readOnly: mode === 'ro' };
}

/** A short, stable digest of a value: keys sorted, so equal settings always give equal digests. */
export function hashSpec(value: unknown): string {
  const canonical = (item: unknown): unknown => {
    if (Array.isArray(item)) return item.map(canonical);
    if (item && typeof item === 'object')
      return Object.fromEntries(
        Object.keys(item)
          .sort()
          .map((key) => [key, canonical((item as Record<string, unknown>)[key])]),
      );
    return item;
  };
  return createHash('sha256')
    .update(JSON.stringify(canonical(value)))
    .digest('hex')
    .slice(0, 16);
}

/** What {@link buildSandboxSpec} needs. */
export interface BuildSandboxSpecOptions {
  readonly settings: SandboxSettings;
  readonly image: string;
  readonly name: string;
  readonly scope: SandboxScope;
  readonly paths: SandboxPaths;
  /** The driver's engine name, recorded in a label. */
  readonly engine: string;
  /** The driver's `specRevision`: how it maps a spec to its engine. */
  readonly specRevision: string;
  /** Labels added to Berth's own (a test run's marker, say). */
  readonly extraLabels?: Readonly<Record<string, string>>;
  /** The scope's channel folder, for a driver with host folders (see `SandboxSpec.channels`). */
  readonly channels?: string;
  /** The parent cgroup all sandboxes share (shared-bound.ts), when the runtime set one. */
  readonly cgroupParent?: string;
  /** Read-only mounts of the runtime's own after the operator's (the egress proxy's CA bundle). */
  readonly runtimeMounts?: ReadonlyArray<{ readonly source: string; readonly target: string; readonly readOnly: boolean }>;
}

/**
 * The sandbox a scope gets: hardened by default from the settings (docs/backend-docker.md says
 * what each setting protects against), the scope's two folders and `docker_volumes` and nothing
 * else, no variables, ownership labels, and a digest of all of it (with the driver's revision)
 * in a label, so a sandbox whose settings changed is noticed and recreated.
 */
export function buildSandboxSpec(options: BuildSandboxSpecOptions): { spec: SandboxSpec; configHash: string } {
  const { settings } = options;
  const labels = scopeLabels({
    scope: options.scope,
    paths: options.paths,
    engine: options.engine,
    ...(options.extraLabels ? { extra: options.extraLabels } : {}),
  });
  const spec: SandboxSpec = {
    name: options.name,
    image: options.image,
    hostname: SANDBOX_HOSTNAME,
    labels,
    workspace: options.paths.workspace,
    home: options.paths.home,
    volumes: [...settings.docker_volumes.map(parseVolume), ...(options.runtimeMounts ?? [])],
    ...(options.channels ? { channels: options.channels } : {}),
    command: [...KEEP_ALIVE_COMMAND],
    workingDir: WORKSPACE_TARGET,
    limits: {
      cpus: settings.container_cpu,
      memoryMb: settings.container_memory,
      pids: settings.docker_pids_limit,
      nofile: settings.docker_nofile,
      nproc: settings.docker_nproc,
      tmpMb: settings.docker_tmp_size,
      diskMb: settings.container_disk,
      ...(options.cgroupParent ? { cgroupParent: options.cgroupParent } : {}),
    },
    security: {
      capabilities: [...settings.docker_cap_add],
      noNewPrivileges: settings.docker_no_new_privileges,
      readOnlyRoot: settings.docker_read_only,
      ...(settings.docker_runtime ? { runtime: settings.docker_runtime } : {}),
    },
    network: settings.docker_network,
    stopGraceSeconds: 3,
  };
  const configHash = hashSpec({ spec, revision: options.specRevision });
  return { spec: { ...spec, labels: { ...labels, [LABELS.configHash]: configHash } }, configHash };
}
