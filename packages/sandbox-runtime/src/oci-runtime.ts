import { ConfigError, type RuntimeDescription } from '@berth/core';
import type { DriverDescription } from '@berth/core/driver';

/**
 * The OCI runtime sandboxes run under, as far as Berth can tell from the engine's description:
 * which one, its release, whether it puts a kernel of its own between users (gVisor), and what
 * Berth does differently under it. One place decides; the shells, `describe()` and `berth doctor`
 * read it (docs/gvisor.md).
 */

/**
 * The release of each runtime the tests ran, as `scripts/engines.sh` installs them (Debian
 * bookworm's packages). An engine with an older one gets a warning from `berth doctor`; the
 * engines' integration test fails when the machine's own is older, so the table cannot fall
 * behind what CI runs.
 */
export const TESTED_RUNTIME_RELEASES: Readonly<Record<string, string>> = { runc: '1.1.5', crun: '1.8.1', runsc: '20221219' };

/** What Berth does differently under gVisor, each keeping every guarantee: the reason it must. */
export const GVISOR_FALLBACKS: readonly string[] = [
  "shells start through the engine's exec, not the launcher's named pipes: gVisor does not write a pipe on a read-only bind mount (the channel " +
    "folder is one), so each sandbox's first shell takes an exec (tens of milliseconds) where it took a write to a pipe",
  'whether a sandbox is busy (idle stop, a restart for a new configuration) is read from inside it, as on Kubernetes: the engine lists only ' +
    "gVisor's own processes; a listing that fails still counts as busy",
  "docker_pids_limit counts gVisor's processes on the host: some 40 of its own and, on its ptrace platform, about ten for each process in the " +
    'sandbox; a sandbox that reaches it stops (its jobs end, the next command starts it again) where runc refuses the fork. The host stays bounded ' +
    'and other users are unaffected; raise the limit about ten-fold for as many processes as under runc',
];

/** The release in a runtime's version line: gVisor's date (`release-20221219.0`, `0.0~20221219.0`), else `x.y.z`. */
export function runtimeRelease(version: string): string | undefined {
  if (/^runsc\b/.test(version)) return /(\d{8})/.exec(version)?.[1];
  return /(\d+\.\d+\.\d+)/.exec(version)?.[1];
}

/** Whether release `a` is older than release `b` (both dates, or both `x.y.z`). */
export function isOlderRelease(a: string, b: string): boolean {
  const parts = (release: string): number[] => release.split('.').map(Number);
  const [left, right] = [parts(a), parts(b)];
  for (let index = 0; index < Math.max(left.length, right.length); index++) {
    const difference = (left[index] ?? 0) - (right[index] ?? 0);
    if (difference !== 0) return difference < 0;
  }
  return false;
}

/** The facts about the runtime `configured` (or the engine's default) on the engine described. */
export function runtimeFacts(description: Pick<DriverDescription, 'defaultRuntime' | 'runtimeVersions'>, configured: string | undefined): RuntimeDescription {
  const name = configured ?? description.defaultRuntime ?? 'runc';
  const version = description.runtimeVersions?.[name];
  const gvisor = version !== undefined && /^runsc\b/.test(version);
  const release = version === undefined ? undefined : runtimeRelease(version);
  const kind = gvisor ? 'runsc' : version === undefined ? undefined : /^(\w+)/.exec(version)?.[1];
  const tested = kind === undefined ? undefined : TESTED_RUNTIME_RELEASES[kind];
  return {
    name,
    configured: configured !== undefined,
    ...(version === undefined ? {} : { version }),
    ...(release === undefined ? {} : { release }),
    gvisor,
    ...(release !== undefined && tested !== undefined && isOlderRelease(release, tested) ? { olderThanTested: tested } : {}),
    fallbacks: gvisor ? GVISOR_FALLBACKS : [],
  };
}

/**
 * Refuses a `docker_runtime` the engine does not have, before anything of a sandbox is made:
 * one line naming the key, the value, the runtimes the engine has and the fix, instead of the
 * engine's refusal at create. An engine that lists no runtimes (a cluster: its RuntimeClass) is
 * not judged here.
 */
export function assertRuntimeOffered(configured: string | undefined, description: Pick<DriverDescription, 'engine' | 'runtimes' | 'defaultRuntime'>): void {
  const offered = description.runtimes;
  if (configured === undefined || offered === undefined || offered.length === 0 || offered.includes(configured)) return;
  throw new ConfigError(
    'terminal.docker_runtime',
    `terminal.docker_runtime is ${configured}, a runtime the ${description.engine} engine does not have (it has ` +
      `${[...offered].sort().join(', ')}); set docker_runtime to one of those, or remove it to use the engine's ` +
      `default${description.defaultRuntime ? ` (${description.defaultRuntime})` : ''}`,
  );
}
