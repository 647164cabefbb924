import { existsSync } from 'node:fs';
import type { DriverDescription } from '@berth/core/driver';
import type { DockerApiConnection } from './create-docker-api-driver.js';
import { readRuntimeVersions } from './read-runtime-versions.js';

/** How long an engine's description is reused before it is asked again. */
const DESCRIBE_REUSE_MS = 60_000;

/** What an engine says of itself over the Docker-compatible API: version, runtimes, size, cgroups. */
export async function describeEngine(
  engine: string,
  { reads, endpoint, discovery, warnings, networkPool }: Pick<DockerApiConnection, 'reads' | 'endpoint' | 'discovery' | 'warnings' | 'networkPool'>,
  options: { readonly runtimeVersions?: boolean } = {},
): Promise<DriverDescription> {
  const [version, info] = await Promise.all([
    reads.version(),
    reads.info() as Promise<{
      Runtimes?: Record<string, { path?: string }>;
      DefaultRuntime?: string;
      MemTotal?: number;
      NCPU?: number;
      CgroupDriver?: string;
      CgroupVersion?: string;
    }>,
  ]);
  // An engine lists the runtimes it is configured with; one whose binary is missing cannot run.
  const runtimes = Object.entries(info.Runtimes ?? {})
    .filter(([, runtime]) => !runtime.path?.startsWith('/') || existsSync(runtime.path))
    .map(([name]) => name);
  // A unix socket is an engine on this host: its runtimes' binaries are this host's too.
  const local = endpoint.startsWith('/') || endpoint.startsWith('unix:') || reads.local;
  const runtimeVersions = local && options.runtimeVersions !== false ? await readRuntimeVersions(info.Runtimes ?? {}) : {};
  const host = info.MemTotal && info.NCPU ? { host: { memoryMb: Math.floor(info.MemTotal / 1024 / 1024), cpus: info.NCPU } } : {};
  return {
    engine,
    endpoint,
    discovery,
    version: version.Version,
    apiVersion: version.ApiVersion,
    warnings: [...(warnings ?? [])],
    runtimes,
    ...(info.DefaultRuntime ? { defaultRuntime: info.DefaultRuntime } : {}),
    ...(Object.keys(runtimeVersions).length > 0 ? { runtimeVersions } : {}),
    ...host,
    ...(networkPool ? { networkPool } : {}),
    // The same test as the pool's: a local, rootful engine's cgroups are this host's.
    ...(networkPool && (info.CgroupDriver === 'cgroupfs' || info.CgroupDriver === 'systemd')
      ? { cgroups: { manager: info.CgroupDriver, version: info.CgroupVersion === '2' || info.CgroupVersion === 'v2' ? (2 as const) : (1 as const) } }
      : {}),
  };
}

/**
 * The engine's description, asked at most once a minute: the runtime's egress policy, its capacity
 * policy and a status each want it as a gateway starts, and Podman answers each /info and /version
 * in about a second, running its package manager dozens of times. A brief description (no runtime
 * versions, a process each) is the full one when that is fresh or on its way, so `berth doctor`
 * asks the engine once. A failure is not kept; each caller gets lists of its own.
 */
export function reusedDescriptions(
  describeNow: (options: { readonly runtimeVersions: boolean }) => Promise<DriverDescription>,
): (options?: { readonly runtimeVersions?: boolean }) => Promise<DriverDescription> {
  type Kept = { at: number; answer: Promise<DriverDescription> };
  const kept: { full?: Kept; brief?: Kept } = {};
  const fresh = (entry: Kept | undefined): entry is Kept => entry !== undefined && performance.now() - entry.at < DESCRIBE_REUSE_MS;
  const ask = (kind: 'full' | 'brief'): Promise<DriverDescription> => {
    const answer = describeNow({ runtimeVersions: kind === 'full' });
    const entry = { at: performance.now(), answer };
    kept[kind] = entry;
    answer.catch(() => {
      if (kept[kind] === entry) delete kept[kind];
    });
    return answer;
  };
  return (options) => {
    const full = options?.runtimeVersions !== false;
    const reused = fresh(kept.full) ? kept.full : !full && fresh(kept.brief) ? kept.brief : undefined;
    const answer = reused?.answer ?? ask(full ? 'full' : 'brief');
    return answer.then((description) => ({
      ...description,
      warnings: [...description.warnings],
      ...(description.runtimes ? { runtimes: [...description.runtimes] } : {}),
      ...(description.runtimeVersions ? { runtimeVersions: { ...description.runtimeVersions } } : {}),
    }));
  };
}
