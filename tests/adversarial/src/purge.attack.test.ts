import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomTelegramUser, startAttackGateway, within, type AttackGateway, type Sender } from './support/attack-gateway.js';

// `berth rm --purge` against the user being purged, who keeps messaging the running gateway
// while the CLI deletes their files in a process of its own: every file operation the host
// makes in a user's folder is done through descriptors opened without following links, under a
// lock every Berth process honours, with a tombstone the gateway honours (docs/sandbox-runtime.md,
// "Files the user controls").
const CLI = path.resolve(import.meta.dirname, '..', '..', '..', 'apps', 'gateway-plugin', 'dist', 'cli.js');

interface CliRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the `berth` CLI in a process of its own, with the gateway's sandbox root and image. */
function berth(gateway: AttackGateway, config: Record<string, unknown>, args: string[]): Promise<CliRun> {
  const file = path.join(gateway.sandboxDir, `cli-${randomBytes(4).toString('hex')}.yaml`);
  writeFileSync(
    file,
    `terminal:\n${Object.entries(config)
      .map(([key, value]) => `  ${key}: ${JSON.stringify(value)}`)
      .join('\n')}\n`,
  );
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      [CLI, ...args, '--config', file],
      { env: { PATH: process.env.PATH ?? '', HOME: gateway.sandboxDir }, timeout: 600_000, maxBuffer: 1 << 24 },
      (error, stdout, stderr) => resolve({ status: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

/**
 * Made inside the sandbox: 1500 folders one in another (7500 bytes of path, past PATH_MAX), by
 * nesting four chains of 375, each made and moved by paths shorter than PATH_MAX (a shell's `cd`
 * stops there).
 */
const DEEP_TREE =
  'cd /workspace && p=$(i=0; while [ $i -lt 375 ]; do printf aaaa/; i=$((i+1)); done) && mkdir -p "acc/$p" && ' +
  'echo bottom > "acc/${p}f" && for k in 1 2 3; do mkdir -p "b/$p" && mv acc "b/$p" && mv b acc || exit 1; done; echo made';

const userArgs = (sender: Sender) => ['--platform', sender.platform, '--user', String(sender.userId)];

/**
 * The traces of a deleted disk image at `image`: loop devices still backed by it (the kernel
 * marks their backing file `(deleted)`), and mounts under `image` or `folder` of such a device.
 */
function deletedDiskTraces(image: string, folder: string): { loops: string[]; mounts: string[] } {
  const deleted = readdirSync('/sys/block')
    .filter((name) => /^loop\d+$/.test(name))
    .flatMap((name) => {
      try {
        const backing = readFileSync(`/sys/block/${name}/loop/backing_file`, 'utf8').trim();
        if (!backing.startsWith(image) || !backing.endsWith('(deleted)')) return [];
        return [{ loop: `${name} ${backing}`, device: readFileSync(`/sys/block/${name}/dev`, 'utf8').trim() }];
      } catch {
        return [];
      }
    });
  const devices = new Set(deleted.map((entry) => entry.device));
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' '))
    .filter((fields) => devices.has(fields[2] ?? '') && [image, folder].some((place) => (fields[4] ?? '').startsWith(place)))
    .map((fields) => `${fields[4]} (${fields[2]})`);
  return { loops: deleted.map((entry) => entry.loop), mounts };
}

/**
 * While `purge` runs, the attacker keeps sending `command` through the gateway, as a chat user
 * keeps messaging; returns every answer (or error) they got.
 */
async function keepMessaging<T = undefined>(
  gateway: AttackGateway,
  attacker: Sender,
  command: string,
  purge: Promise<CliRun>,
  atPurgeEnd: () => T = () => undefined as T,
): Promise<{ run: CliRun; answers: Array<string | Error>; seen: T }> {
  let done = false;
  const answers: Array<string | Error> = [];
  const messaging = (async () => {
    while (!done) {
      const answer = await gateway.attempt(attacker, command, { timeout: 30 });
      answers.push(answer instanceof Error ? answer : answer.output);
      if (answer instanceof Error) await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  // What holds the moment the purge says it is done, before a message still in flight can start them afresh.
  const [run, seen] = await purge.then((result) => [result, atPurgeEnd()] as const);
  done = true;
  await within(120_000, "the attacker's last message", messaging);
  return { run, answers, seen };
}

describe.each(['docker', 'podman'] as const)('purge on %s, without per-user disks', (backend) => {
  const config = { backend, container_disk: 0, docker_network: false, timeout: 60 };
  let gateway: AttackGateway;
  const victim = randomTelegramUser();
  let precious: string;

  beforeAll(async () => {
    gateway = await startAttackGateway({ config });
    await gateway.run(victim, 'echo victim-work > /workspace/work.txt; echo victim-home > /root/.profile-note');
    // A host folder outside the sandbox root, beside it.
    precious = path.join(gateway.sandboxDir, 'precious');
    mkdirSync(precious);
    for (let index = 0; index < 20; index++) writeFileSync(path.join(precious, `keep-${index}`), 'keep');
  });

  afterAll(async () => {
    await gateway?.cleanup();
  });

  it("the user swaps their folders for links to others' while berth rm --purge walks, messaging the gateway throughout: nothing outside their folder goes", async () => {
    const attacker = randomTelegramUser();
    const victimFolder = gateway.folderOf(victim);
    const root = path.dirname(victimFolder.folder);
    const keyFile = path.join(root, '.berth-installation-key');
    const key = readFileSync(keyFile);
    // Many files, so the walk takes a while; then links, made from inside, to host paths the
    // purge would reach if it followed them: the victim's workspace and home, a folder outside
    // the root, and the root itself (with the installation key).
    const planted = await gateway.run(
      attacker,
      'mkdir -p /workspace/p && cd /workspace/p && for d in $(seq 1 200); do mkdir d$d && (cd d$d && seq 1 250 | xargs touch); done; echo planted',
      { timeout: 120 },
    );
    expect(planted.output).toBe('planted\n');
    const targets = [victimFolder.workspace, victimFolder.home, precious, root];
    const swapper = `cd /workspace/p 2>/dev/null || exit 0
end=$(( $(date +%s) + 10 )); i=0
while [ "$(date +%s)" -lt "$end" ]; do
  for d in d*; do
    [ -d "$d" ] && [ ! -L "$d" ] || continue
    i=$((i + 1))
    case $((i % 4)) in 0) t=${targets[0]} ;; 1) t=${targets[1]} ;; 2) t=${targets[2]} ;; *) t=${targets[3]} ;; esac
    mv "$d" ".x$d" 2>/dev/null && ln -s "$t" "$d" 2>/dev/null
  done
done
echo swapped`;
    const { run, answers } = await keepMessaging(
      gateway,
      attacker,
      swapper,
      berth(gateway, { docker_image: process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest', sandbox_dir: gateway.sandboxDir, ...config }, [
        'rm',
        '--purge',
        ...userArgs(attacker),
      ]),
    );
    expect(run, run.stderr).toMatchObject({ status: 0, stdout: expect.stringMatching(/^removed user:telegram:\d+: its container/) });
    // Whatever the attacker did meanwhile, nothing of anyone else's was touched.
    expect(readFileSync(path.join(victimFolder.workspace, 'work.txt'), 'utf8')).toBe('victim-work\n');
    expect(readFileSync(path.join(victimFolder.home, '.profile-note'), 'utf8')).toBe('victim-home\n');
    expect(readdirSync(precious)).toHaveLength(20);
    expect(readFileSync(keyFile)).toEqual(key);
    expect((await gateway.run(victim, 'cat /workspace/work.txt /root/.profile-note')).output).toBe('victim-work\nvictim-home\n');
    // The attacker's messages during the purge were refused, not run in a sandbox made again on
    // the half-deleted folder; none of their planted files is left.
    // (Refused with SANDBOX_PURGING while it ran, or an engine's one-line answer about the
    // sandbox removed under the message; never run on a sandbox made again meanwhile.)
    for (const answer of answers) if (answer instanceof Error) expect(answer.message).not.toMatch(/\n/);
    const attackerFolder = gateway.folderOf(attacker);
    expect(existsSync(path.join(attackerFolder.workspace, 'p'))).toBe(false);
  });

  it('a tree deeper than PATH_MAX does not make a user un-purgeable', async () => {
    const deep = randomTelegramUser();
    const made = await gateway.run(deep, DEEP_TREE, { timeout: 120 });
    expect(made.output).toBe('made\n');
    const run = await berth(
      gateway,
      { docker_image: process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest', sandbox_dir: gateway.sandboxDir, ...config },
      ['rm', '--purge', ...userArgs(deep)],
    );
    expect(run, run.stderr).toMatchObject({ status: 0 });
    expect(existsSync(gateway.folderOf(deep).folder)).toBe(false);
  });
});

describe.each(['docker', 'podman'] as const)('purge on %s, with per-user disks', (backend) => {
  const config = { backend, container_disk: 64, docker_network: false, timeout: 60 };
  let gateway: AttackGateway;

  beforeAll(async () => {
    gateway = await startAttackGateway({ config });
  });

  afterAll(async () => {
    await gateway?.cleanup();
  });

  it('says it removed the user only once their disk is unmounted and detached, however hard they keep messaging', async () => {
    const user = randomTelegramUser();
    expect((await gateway.run(user, 'echo old-secret > /workspace/secret.txt; cat /workspace/secret.txt')).output).toBe('old-secret\n');
    const folder = gateway.folderOf(user).folder;
    const disks = path.join(gateway.sandboxDir, 'disks');
    const image = path.join(disks, 'docker', path.basename(folder));
    const { run, seen } = await keepMessaging(
      gateway,
      user,
      'cat /workspace/secret.txt 2>/dev/null || echo none',
      berth(gateway, { docker_image: process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest', sandbox_dir: gateway.sandboxDir, ...config }, [
        'rm',
        '--purge',
        ...userArgs(user),
      ]),
      () => deletedDiskTraces(image, folder),
    );
    expect(run, run.stderr).toMatchObject({ status: 0 });
    // Right when it said so: no loop device holds the deleted image, and nothing is mounted on the
    // folder from one that does. (A message that waited for the purge's lock may already have
    // made the user a new, empty disk at the same path by then: that one is theirs to have.)
    expect(seen).toEqual({ loops: [], mounts: [] });
    // Nor later: no loop device holds a deleted image (the old disk) while the user goes on.
    expect(deletedDiskTraces(image, folder)).toEqual({ loops: [], mounts: [] });
    // And the user's next message finds nothing of theirs.
    expect((await gateway.run(user, 'cat /workspace/secret.txt 2>/dev/null || echo none')).output).toBe('none\n');
  });

  it('a tree deeper than PATH_MAX on the disk does not make a user un-purgeable', async () => {
    const deep = randomTelegramUser();
    const made = await gateway.run(deep, DEEP_TREE, { timeout: 120 });
    expect(made.output).toBe('made\n');
    const run = await berth(
      gateway,
      { docker_image: process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest', sandbox_dir: gateway.sandboxDir, ...config },
      ['rm', '--purge', ...userArgs(deep)],
    );
    expect(run, run.stderr).toMatchObject({ status: 0 });
    expect(existsSync(gateway.folderOf(deep).folder)).toBe(false);
  });
});
