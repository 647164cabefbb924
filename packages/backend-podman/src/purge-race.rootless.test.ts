/*
 * The purge race on rootless Podman, as the ordinary user who runs the gateway (started by
 * scripts/run-rootless-suite.sh): while `berth rm --purge` (a backend of its own, as the CLI's
 * process has) deletes a user's files, the user keeps messaging the gateway and swaps their
 * folders for links to the gateway user's own files. A gateway that is not root gives itself
 * rights on the folders it empties: through descriptors, never through a path a link can
 * redirect, so no folder of the gateway user outside the sandbox changes mode or loses a file.
 */
import { mkdir, mkdtemp, readdir, rm, stat, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig, type SandboxRequest } from '@berth/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPodmanBackend, type PodmanBackend } from './index.js';

const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const runId = Math.random().toString(16).slice(2, 10);
let sandboxDir = '';
const backends: PodmanBackend[] = [];

const configOf = () =>
  parseTerminalConfig({ docker_image: image, sandbox_dir: sandboxDir, docker_network: false, lifetime_seconds: 0, container_memory: 256, timeout: 60 });
function setUp(): PodmanBackend {
  const backend = createPodmanBackend({ settings: configOf(), namePrefix: `berth-rp${runId}-` });
  backends.push(backend);
  return backend;
}
const requestOf = (userId: string): SandboxRequest =>
  createSandboxResolver({ config: configOf(), registry: createPlatformRegistry(), environment: {} }).resolve({ session: { platform: 'telegram', userId } });

beforeAll(async () => {
  expect(process.getuid!(), 'the rootless tests run as an ordinary user (scripts/run-rootless-suite.sh), not as root').not.toBe(0);
  sandboxDir = await mkdtemp(path.join(tmpdir(), `berth-rootless-purge-${runId}-`));
});

afterAll(async () => {
  for (const backend of backends) await backend.close();
  if (sandboxDir) {
    await chmod(path.join(sandboxDir, 'precious'), 0o700).catch(() => undefined);
    await rm(sandboxDir, { recursive: true, force: true });
  }
});

describe('the purge race on rootless Podman', () => {
  it("swapping folders for links to the gateway user's own files while the purge unlocks and deletes changes none of them", async () => {
    const gateway = setUp();
    const purger = setUp();
    const victim = requestOf('61001');
    const attacker = requestOf('61002');
    await gateway.doExec(victim, { command: 'echo victim > /workspace/work.txt' });
    // A folder of the gateway user's, outside the sandbox root, read-only to its owner.
    const precious = path.join(sandboxDir, 'precious');
    await mkdir(precious);
    for (let index = 0; index < 20; index++) await writeFile(path.join(precious, `keep-${index}`), 'keep');
    await chmod(precious, 0o500);
    const planted = await gateway.doExec(attacker, {
      command:
        'mkdir -p /workspace/p && cd /workspace/p && for d in $(seq 1 150); do mkdir d$d && ' +
        '(cd d$d && seq 1 200 | xargs touch) && chmod 500 d$d; done; echo planted',
      timeout: 120,
    });
    expect(planted.stdout).toBe('planted\n');
    const targets = [precious, victim.paths.workspace];
    const swapper = `cd /workspace/p 2>/dev/null || exit 0
end=$(( $(date +%s) + 10 )); i=0
while [ "$(date +%s)" -lt "$end" ]; do
  for d in d*; do
    [ -d "$d" ] && [ ! -L "$d" ] || continue
    i=$((i + 1))
    if [ $((i % 2)) = 0 ]; then t=${targets[0]}; else t=${targets[1]}; fi
    mv "$d" ".x$d" 2>/dev/null && ln -s "$t" "$d" 2>/dev/null
  done
done`;
    let done = false;
    const refusals: string[] = [];
    const messaging = (async () => {
      while (!done) {
        await gateway.doExec(attacker, { command: swapper, timeout: 30 }).catch((error: Error) => refusals.push(error.message));
      }
    })();
    await purger.remove(attacker.scope.key, { purge: true, paths: attacker.paths });
    done = true;
    await messaging;
    expect((await stat(precious)).mode & 0o777).toBe(0o500);
    expect((await readdir(precious)).length).toBe(20);
    expect((await gateway.doExec(victim, { command: 'cat /workspace/work.txt' })).stdout).toBe('victim\n');
    // Refused while the purge ran (SANDBOX_PURGING), or the engine's one-line answer about a sandbox removed under the message.
    for (const message of refusals) expect(message).not.toMatch(/\n/);
    // Purge it again (the last message may have made a fresh sandbox), then nothing of theirs is left.
    await purger.remove(attacker.scope.key, { purge: true, paths: attacker.paths });
    await expect(stat(attacker.paths.folder)).rejects.toMatchObject({ code: 'ENOENT' });
    await gateway.remove(victim.scope.key, { purge: true, paths: victim.paths });
  });
});
