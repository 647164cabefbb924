import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** How long a runtime's binary may take to say its version. */
const RUNTIME_VERSION_TIMEOUT_MS = 3_000;

/**
 * The first line of each runtime's `--version` (asked of a local engine's runtimes only: a remote
 * one's paths are not this host's). A binary that is missing or does not answer is left out. The binaries are the engine's configuration (root's),
 * and only asked for their version.
 */
export async function readRuntimeVersions(runtimes: Record<string, { path?: string }>): Promise<Record<string, string>> {
  const versions: Record<string, string> = {};
  // Each binary asked once: Docker names runc three times (runc, io.containerd.runc.v2, …).
  const asked = new Map<string, Promise<string | undefined>>();
  const versionOf = (binary: string): Promise<string | undefined> => {
    let answer = asked.get(binary);
    if (!answer) {
      answer = execFileAsync(binary, ['--version'], { timeout: RUNTIME_VERSION_TIMEOUT_MS, maxBuffer: 64 * 1024 }).then(
        ({ stdout }) => stdout.split('\n', 1)[0]!.trim() || undefined,
        // No version to tell: doctor says so.
        () => undefined,
      );
      asked.set(binary, answer);
    }
    return answer;
  };
  await Promise.all(
    Object.entries(runtimes).map(async ([name, runtime]) => {
      const binary = runtime.path && binaryPath(runtime.path);
      const line = binary ? await versionOf(binary) : undefined;
      if (line) versions[name] = line;
    }),
  );
  return versions;
}

/** An absolute path that exists, or a bare name found on PATH (Docker names `runc` so). */
function binaryPath(name: string): string | undefined {
  if (name.startsWith('/')) return existsSync(name) ? name : undefined;
  if (name.includes('/')) return undefined;
  return (process.env.PATH ?? '')
    .split(':')
    .filter((folder) => folder.startsWith('/'))
    .map((folder) => path.join(folder, name))
    .find((candidate) => existsSync(candidate));
}
