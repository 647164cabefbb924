import { readFile } from 'node:fs/promises';
import type Dockerode from 'dockerode';

/** What the Podman backend needs to know of the engine before it creates a container. */
export interface PodmanHost {
  /** The service runs as an ordinary user: containers get a user namespace. */
  readonly rootless: boolean;
  /** `v1` or `v2`. */
  readonly cgroupVersion: string;
  /**
   * Whether the engine applies memory, CPU and pids limits. Rootless Podman on cgroup v1 cannot
   * (no delegation): it accepts the settings and silently ignores them.
   */
  readonly resourceLimits: boolean;
  /** SELinux is enforcing, so bind mounts need a private label (`:Z`). */
  readonly selinuxEnforcing: boolean;
  /** The engine's version, e.g. `4.3.1`. */
  readonly version: string;
}

/** The parts of `GET /libpod/info` read here. */
export interface LibpodInfo {
  readonly host?: {
    readonly security?: { readonly rootless?: boolean; readonly selinuxEnabled?: boolean };
    readonly cgroupVersion?: string;
    readonly cgroupControllers?: readonly string[] | null;
  };
  readonly version?: { readonly Version?: string };
}

/** `GET /libpod/info` through the client's own connection. */
export function fetchLibpodInfo(docker: Dockerode): Promise<LibpodInfo> {
  return new Promise((resolve, reject) => {
    // Podman serves its own API only under a version prefix; a client with a pinned version adds its own.
    const path = (docker.modem as { version?: string }).version ? '/libpod/info' : '/v4.0.0/libpod/info';
    docker.modem.dial(
      { path, method: 'GET', statusCodes: { 200: true, 404: 'not a Podman API (no /libpod/info)', 500: 'server error' }, options: {} },
      (error: unknown, data: unknown) => (error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(data as LibpodInfo)),
    );
  });
}

/**
 * Reads `/sys/fs/selinux/enforce`: `true` when it says 1, `false` when 0, `undefined` when
 * SELinux is absent or the file cannot be read.
 */
export async function readSelinuxEnforce(file = '/sys/fs/selinux/enforce'): Promise<boolean | undefined> {
  try {
    return (await readFile(file, 'utf8')).trim() === '1';
  } catch {
    return undefined;
  }
}

/**
 * Decides the host facts from the engine's info and the local SELinux state. SELinux counts as
 * enforcing when the local file says so, or, where it is unreadable (a remote engine), when
 * the engine says it labels containers.
 */
export function decidePodmanHost(info: LibpodInfo, localSelinuxEnforce: boolean | undefined): PodmanHost {
  const rootless = info.host?.security?.rootless === true;
  const cgroupVersion = info.host?.cgroupVersion ?? 'v2';
  const controllers = info.host?.cgroupControllers;
  // Rootless on v2 applies only the controllers delegated to the user; on v1 none at all.
  const resourceLimits = !rootless || (cgroupVersion !== 'v1' && (!controllers || (controllers.includes('pids') && controllers.includes('memory'))));
  const selinuxEnforcing = localSelinuxEnforce ?? info.host?.security?.selinuxEnabled === true;
  return { rootless, cgroupVersion, resourceLimits, selinuxEnforcing, version: info.version?.Version ?? 'unknown' };
}

/** Asks the engine (and the local SELinux state) what the Podman backend must adapt to. */
export async function readPodmanHost(docker: Dockerode): Promise<PodmanHost> {
  const [info, enforce] = await Promise.all([fetchLibpodInfo(docker), readSelinuxEnforce()]);
  return decidePodmanHost(info, enforce);
}

/** How long one process reuses what a Podman socket said about its host. */
const HOST_REUSE_MS = 60_000;
const hosts = new Map<string, { at: number; host: Promise<PodmanHost> }>();

/**
 * {@link readPodmanHost}, reused for a minute per local socket: each `/libpod/info` costs
 * Podman about a second (it runs its package manager dozens of times), and every backend a
 * process makes on the same socket would otherwise ask again. A failure is not kept.
 */
export function readPodmanHostOf(docker: Dockerode, socketPath: string | undefined): Promise<PodmanHost> {
  if (socketPath === undefined) return readPodmanHost(docker);
  const known = hosts.get(socketPath);
  if (known && performance.now() - known.at < HOST_REUSE_MS) return known.host;
  const host = readPodmanHost(docker);
  hosts.set(socketPath, { at: performance.now(), host });
  host.catch(() => {
    if (hosts.get(socketPath)?.host === host) hosts.delete(socketPath);
  });
  return host;
}
