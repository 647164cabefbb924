import { createHash } from 'node:crypto';
import type { SandboxPaths, SandboxScope, TerminalConfig } from '@berth/core';
import type Dockerode from 'dockerode';

/** Label keys Berth puts on what it creates; values never hold a variable's value. */
export const LABELS = {
  managedBy: 'dev.berth.managed-by',
  engine: 'dev.berth.engine',
  scope: 'dev.berth.scope',
  kind: 'dev.berth.kind',
  platform: 'dev.berth.platform',
  user: 'dev.berth.user',
  task: 'dev.berth.task',
  workspace: 'dev.berth.workspace',
  home: 'dev.berth.home',
  configHash: 'dev.berth.config-hash',
} as const;

/** The value of the `managed-by` label. */
export const MANAGED_BY = 'berth';

/** Where the scope's folders appear inside the sandbox. */
export const WORKSPACE_TARGET = '/workspace';
/** The sandbox user's home. */
export const HOME_TARGET = '/root';

/** Every sandbox's hostname. */
export const SANDBOX_HOSTNAME = 'sandbox';

/**
 * What the container runs as its main process: a shell that waits and leaves at once on
 * TERM, so `stop` takes milliseconds, not the engine's kill timeout. Commands come in through
 * execs, never through this process.
 */
export const KEEP_ALIVE_COMMAND = ['trap "exit 0" TERM INT HUP; while :; do sleep 3600 & wait $!; done'];

/** The ownership labels of a scope's container. */
export function scopeLabels(options: { scope: SandboxScope; paths: SandboxPaths; engine: string; extra?: Readonly<Record<string, string>> }): Record<string, string> {
  const { scope, paths } = options;
  return {
    ...options.extra,
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.engine]: options.engine,
    [LABELS.scope]: scope.key,
    [LABELS.kind]: scope.kind,
    ...(scope.kind === 'user' ? { [LABELS.platform]: scope.primary.platform, [LABELS.user]: scope.primary.id } : { [LABELS.task]: scope.taskId }),
    [LABELS.workspace]: paths.workspace,
    [LABELS.home]: paths.home,
  };
}

/** A `docker_volumes` entry, `host:container[:ro|rw]`, as an engine bind mount. */
export function parseVolume(volume: string): { Type: 'bind'; Source: string; Target: string; ReadOnly: boolean } {
  const [source, target, mode] = volume.split(':');
  return { Type: 'bind', Source: source!, Target: target!, ReadOnly: mode === 'ro' };
}

/** What {@link buildContainerSpec} needs. */
export interface ContainerSpecOptions {
  readonly config: TerminalConfig;
  readonly image: string;
  readonly name: string;
  readonly scope: SandboxScope;
  readonly paths: SandboxPaths;
  /** `docker` or `podman`: recorded in a label. */
  readonly engine: string;
  /** The network to join, or `none`. */
  readonly networkMode: string;
  /** Labels added to Berth's own (a test run's marker, say). */
  readonly extraLabels?: Readonly<Record<string, string>>;
  /** An engine's last word on the host configuration (Podman's user namespace, say). */
  readonly adjustHostConfig?: (hostConfig: Dockerode.HostConfig) => Dockerode.HostConfig;
}

/**
 * The container a scope gets: hardened by default from the config (see docs/backend-docker.md
 * for what each setting protects against), the scope's two folders and `docker_volumes`
 * mounted and nothing else, no variables in its stored configuration, ownership labels and a
 * hash of all of this so a changed config can be noticed on the running container.
 */
export function buildContainerSpec(options: ContainerSpecOptions): { spec: Dockerode.ContainerCreateOptions; configHash: string } {
  const { config } = options;
  const megabyte = 1024 * 1024;
  let hostConfig: Dockerode.HostConfig = {
    Mounts: [
      { Type: 'bind', Source: options.paths.workspace, Target: WORKSPACE_TARGET, ReadOnly: false },
      { Type: 'bind', Source: options.paths.home, Target: HOME_TARGET, ReadOnly: false },
      ...config.docker_volumes.map(parseVolume),
    ],
    CapDrop: ['ALL'],
    CapAdd: [...config.docker_cap_add],
    SecurityOpt: config.docker_no_new_privileges ? ['no-new-privileges'] : [],
    PidsLimit: config.docker_pids_limit,
    Memory: config.container_memory * megabyte,
    MemorySwap: config.container_memory * megabyte,
    NanoCpus: Math.round(config.container_cpu * 1e9),
    Ulimits: [
      { Name: 'nofile', Soft: config.docker_nofile, Hard: config.docker_nofile },
      { Name: 'nproc', Soft: config.docker_nproc, Hard: config.docker_nproc },
    ],
    Tmpfs: { '/tmp': `rw,nosuid,nodev,size=${config.docker_tmp_size}m,mode=1777` },
    Init: true,
    ReadonlyRootfs: config.docker_read_only,
    NetworkMode: options.networkMode,
    RestartPolicy: { Name: 'no' },
    ...(config.docker_runtime ? { Runtime: config.docker_runtime } : {}),
  };
  if (options.adjustHostConfig) hostConfig = options.adjustHostConfig(hostConfig);
  const labels = scopeLabels({ scope: options.scope, paths: options.paths, engine: options.engine, ...(options.extraLabels ? { extra: options.extraLabels } : {}) });
  const spec: Dockerode.ContainerCreateOptions = {
    name: options.name,
    Image: options.image,
    Entrypoint: ['/bin/sh', '-c'],
    Cmd: KEEP_ALIVE_COMMAND,
    WorkingDir: WORKSPACE_TARGET,
    // The same for every sandbox: a hostname says nothing about whose sandbox it is.
    Hostname: SANDBOX_HOSTNAME,
    Env: [],
    Labels: labels,
    StopTimeout: 3,
    HostConfig: hostConfig,
  };
  const configHash = hashSpec(spec);
  return { spec: { ...spec, Labels: { ...labels, [LABELS.configHash]: configHash } }, configHash };
}

/** A short, stable digest of a spec: keys sorted, so equal settings always give equal hashes. */
export function hashSpec(spec: unknown): string {
  const canonical = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(canonical);
    if (value && typeof value === 'object') return Object.fromEntries(Object.keys(value).sort().map((key) => [key, canonical((value as Record<string, unknown>)[key])]));
    return value;
  };
  return createHash('sha256').update(JSON.stringify(canonical(spec))).digest('hex').slice(0, 16);
}
