import { SandboxError } from '@berth/core';
import type Dockerode from 'dockerode';

/** Podman's own container spec (the parts Berth sets), as `POST /libpod/containers/create` takes it. */
export interface LibpodSpec {
  name?: string;
  image: string;
  entrypoint?: string[];
  command?: string[];
  work_dir?: string;
  env: Record<string, string>;
  labels: Record<string, string>;
  stop_timeout?: number;
  mounts: Array<{ destination: string; type: 'bind' | 'tmpfs'; source: string; options: string[] }>;
  cap_drop: string[];
  cap_add: string[];
  no_new_privileges: boolean;
  resource_limits?: { pids?: { limit: number }; memory?: { limit?: number; swap?: number }; cpu?: { quota: number; period: number } };
  r_limits: Array<{ type: string; soft: number; hard: number }>;
  init: boolean;
  read_only_filesystem: boolean;
  netns: { nsmode: string };
  userns?: { nsmode: string };
  restart_policy?: string;
  oci_runtime?: string;
  cgroup_parent?: string;
  sysctl?: Record<string, string>;
}

const CPU_PERIOD = 100_000;

/** A Binds entry `source:target[:options]` as a libpod mount. */
function bindToMount(bind: string): LibpodSpec['mounts'][number] {
  const [source, destination, options] = bind.split(':');
  if (!source || !destination) throw new SandboxError('SPEC_INVALID', `bind ${bind} is not source:target[:options]`);
  const flags = (options ?? 'rw').split(',').filter(Boolean);
  return { destination, type: 'bind', source, options: ['rbind', ...flags] };
}

/**
 * Translates the Docker-shaped spec the shared layer builds into Podman's own spec. Rootless
 * Podman 4.3's compatible create drops `HostConfig.Ulimits` (the container gets the service's
 * limits, e.g. nproc 32768); its own create applies them. Fails on a setting it does not know,
 * rather than create a container with less hardening than asked.
 */
export function toLibpodSpec(spec: Dockerode.ContainerCreateOptions): LibpodSpec {
  const host = spec.HostConfig ?? {};
  const known = new Set([
    'Mounts',
    'Binds',
    'CapDrop',
    'CapAdd',
    'SecurityOpt',
    'PidsLimit',
    'Memory',
    'MemorySwap',
    'NanoCpus',
    'Ulimits',
    'Tmpfs',
    'Init',
    'ReadonlyRootfs',
    'NetworkMode',
    'RestartPolicy',
    'Runtime',
    'CgroupParent',
    'UsernsMode',
    'Sysctls',
  ]);
  const unknown = Object.keys(host).filter((key) => !known.has(key));
  if (unknown.length > 0)
    throw new SandboxError(
      'SPEC_UNSUPPORTED',
      `the Podman backend cannot translate HostConfig.${unknown[0]} to Podman's own API; this is a Berth bug, please report it`,
    );
  const securityOptions = host.SecurityOpt ?? [];
  const unsupported = securityOptions.find((option: string) => option !== 'no-new-privileges' && option !== 'no-new-privileges:true');
  if (unsupported) throw new SandboxError('SPEC_UNSUPPORTED', `the Podman backend cannot translate the security option ${unsupported} to Podman's own API`);

  const env: Record<string, string> = {};
  for (const entry of spec.Env ?? []) {
    const index = entry.indexOf('=');
    if (index > 0) env[entry.slice(0, index)] = entry.slice(index + 1);
  }
  const mounts: LibpodSpec['mounts'] = [
    ...(host.Mounts ?? []).map((mount) => {
      if (mount.Type !== 'bind') throw new SandboxError('SPEC_UNSUPPORTED', `the Podman backend cannot translate a ${mount.Type} mount at ${mount.Target}`);
      return { destination: mount.Target, type: 'bind' as const, source: mount.Source, options: ['rbind', mount.ReadOnly ? 'ro' : 'rw'] };
    }),
    ...(host.Binds ?? []).map(bindToMount),
    ...Object.entries(host.Tmpfs ?? {}).map(([destination, options]) => ({
      destination,
      type: 'tmpfs' as const,
      source: 'tmpfs',
      options: options.split(',').filter(Boolean),
    })),
  ];
  const resources: NonNullable<LibpodSpec['resource_limits']> = {};
  if (host.PidsLimit) resources.pids = { limit: host.PidsLimit };
  if (host.Memory) resources.memory = { limit: host.Memory, ...(host.MemorySwap ? { swap: host.MemorySwap } : {}) };
  if (host.NanoCpus) resources.cpu = { quota: Math.round((host.NanoCpus / 1e9) * CPU_PERIOD), period: CPU_PERIOD };
  const result: LibpodSpec = {
    image: spec.Image ?? '',
    env,
    labels: { ...(spec.Labels ?? {}) },
    mounts,
    cap_drop: [...(host.CapDrop ?? [])],
    cap_add: [...(host.CapAdd ?? [])],
    no_new_privileges: securityOptions.length > 0,
    // Podman adds the RLIMIT_ prefix itself.
    r_limits: (host.Ulimits ?? []).map((limit) => ({ type: (limit.Name ?? '').toLowerCase(), soft: limit.Soft ?? 0, hard: limit.Hard ?? 0 })),
    init: host.Init === true,
    read_only_filesystem: host.ReadonlyRootfs === true,
    netns: { nsmode: host.NetworkMode === 'none' || !host.NetworkMode ? 'none' : host.NetworkMode },
  };
  if (spec.name) result.name = spec.name;
  if (spec.Entrypoint) result.entrypoint = Array.isArray(spec.Entrypoint) ? [...spec.Entrypoint] : [spec.Entrypoint];
  if (spec.Cmd) result.command = Array.isArray(spec.Cmd) ? [...spec.Cmd] : [spec.Cmd];
  if (spec.WorkingDir) result.work_dir = spec.WorkingDir;
  if (typeof spec.StopTimeout === 'number') result.stop_timeout = spec.StopTimeout;
  if (Object.keys(resources).length > 0) result.resource_limits = resources;
  if (host.UsernsMode) result.userns = { nsmode: host.UsernsMode };
  if (host.RestartPolicy?.Name) result.restart_policy = host.RestartPolicy.Name;
  if (host.Runtime) result.oci_runtime = host.Runtime;
  if (host.CgroupParent) result.cgroup_parent = host.CgroupParent;
  if (host.Sysctls && Object.keys(host.Sysctls).length > 0) result.sysctl = { ...host.Sysctls };
  return result;
}

/** A path of Podman's own API: versioned by the client's modem when it names a version, else as Podman 4. */
function libpodPath(docker: Dockerode, path: string): string {
  return (docker.modem as { version?: string }).version ? path : `/v4.0.0${path}`;
}

/** Creates a container through `POST /libpod/containers/create`; resolves to its id. Errors carry the engine's status, like dockerode's. */
export function createThroughLibpod(docker: Dockerode, spec: Dockerode.ContainerCreateOptions): Promise<string> {
  const body = toLibpodSpec(spec);
  const path = libpodPath(docker, '/libpod/containers/create');
  return new Promise((resolve, reject) => {
    docker.modem.dial(
      { path, method: 'POST', options: body, statusCodes: { 201: true, 400: 'bad parameter', 404: 'no such image', 409: 'conflict', 500: 'server error' } },
      (error: unknown, data: unknown) => (error ? reject(error) : resolve((data as { Id: string }).Id)),
    );
  });
}

/** The OCI runtime Podman made a container under (its own inspect's `OCIRuntime`; the compatible one says `oci`). */
export function libpodRuntimeOf(docker: Dockerode, id: string): Promise<string | undefined> {
  const path = libpodPath(docker, `/libpod/containers/${id}/json`);
  return new Promise((resolve, reject) => {
    docker.modem.dial({ path, method: 'GET', statusCodes: { 200: true, 404: 'no such container', 500: 'server error' } }, (error: unknown, data: unknown) =>
      error ? reject(error) : resolve((data as { OCIRuntime?: string }).OCIRuntime),
    );
  });
}
