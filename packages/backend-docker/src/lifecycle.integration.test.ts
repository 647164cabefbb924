import { access, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ImageNotFoundError } from '@berth/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { releaseDisksUnder, sandboxSettings } from '@berth/sandbox-runtime';
import { buildSandboxSpec, LABELS } from '@berth/sandbox-runtime/driver';
import { toContainerCreateOptions } from './to-container-options.js';
import { createHarness, engineExec, TEST_IMAGE, TEST_LABEL, type Harness } from './testing/integration-harness.js';

let harness: Harness;

beforeAll(async () => {
  harness = await createHarness();
});

afterAll(async () => {
  await harness?.cleanup();
});

const containersOf = async (scopeKey: string) =>
  harness.docker.listContainers({ all: true, filters: { label: [`${TEST_LABEL}=${harness.runId}`, `${LABELS.scope}=${scopeKey}`] } });

describe('one container per scope', () => {
  it('creates exactly one container when a user sends many first commands at once, from two gateways', async () => {
    const first = harness.backend();
    const second = harness.backend();
    const request = harness.request({ platform: 'telegram', userId: '2001' });
    const results = await Promise.all(Array.from({ length: 8 }, (_, index) => (index % 2 ? first : second).doExec(request, { command: `echo ${index}` })));
    expect(results.map((result) => result.stdout)).toEqual(Array.from({ length: 8 }, (_, index) => `${index}\n`));
    expect(await containersOf(request.scope.key)).toHaveLength(1);
    await first.close();
    await second.close();
  });

  it('adopts the running container after a gateway restart and lists it with its labels', async () => {
    const before = harness.backend();
    const request = harness.request({ platform: 'whatsapp', userId: '+15550001' });
    const id = await before.doAcquire(request);
    await before.close();
    const after = harness.backend();
    expect(await after.doAcquire(request)).toBe(id);
    const listed = (await after.list()).find((info) => info.scopeKey === request.scope.key);
    expect(listed).toMatchObject({
      containerId: id,
      kind: 'user',
      platform: 'whatsapp',
      state: 'running',
      workspace: request.paths.workspace,
      home: request.paths.home,
    });
    await after.close();
  });

  it('keeps the legacy task layout for task scopes', async () => {
    const backend = harness.backend();
    const request = harness.request({ taskId: 'build-42' });
    await backend.doExec(request, { command: 'echo task-file > /workspace/t.txt' });
    expect(await readFile(path.join(harness.sandboxDir, 'docker', 'build-42', 'workspace', 't.txt'), 'utf8')).toBe('task-file\n');
    expect((await containersOf('task:build-42'))[0]?.Labels[LABELS.task]).toBe('build-42');
    await backend.close();
  });

  it('adopts and renames a sandbox an earlier release named after its user, with no duplicate and no file lost', async () => {
    const request = harness.request({ platform: 'telegram', userId: '2020' });
    const legacyName = `berth-t${harness.runId}-telegram-2020-${request.scope.slug.slice(-16)}`;
    const { spec } = buildSandboxSpec({
      settings: sandboxSettings({ docker_image: TEST_IMAGE, docker_network: false }),
      image: TEST_IMAGE,
      name: legacyName,
      scope: request.scope,
      paths: request.paths,
      engine: 'docker',
      specRevision: 'an earlier release',
      extraLabels: { [TEST_LABEL]: harness.runId },
    });
    await mkdir(request.paths.workspace, { recursive: true, mode: 0o700 });
    await mkdir(request.paths.home, { recursive: true, mode: 0o700 });
    const legacy = await harness.docker.createContainer({ ...toContainerCreateOptions(spec, 'none'), Hostname: undefined });
    await legacy.start();
    expect((await engineExec(harness.docker, legacy.id, 'echo kept > /workspace/old.txt')).exitCode).toBe(0);
    const backend = harness.backend();
    const result = await backend.doExec(request, { command: 'cat /workspace/old.txt; hostname' });
    expect(result.stdout).toBe('kept\nsandbox\n');
    const containers = await containersOf(request.scope.key);
    expect(containers).toHaveLength(1);
    expect(containers[0]!.Names).toEqual([`/${backend.containerName(request)}`]);
    expect(backend.containerName(request)).not.toMatch(/telegram|2020/);
    await backend.close();
  });
});

describe('two gateways on one engine', () => {
  it("each lists, reaps and removes only its own sandboxes, even the same user's", async () => {
    const otherDir = await mkdtemp(path.join(tmpdir(), 'berth-docker-other-'));
    try {
      const rootOf = (dir: string) => path.join(dir, 'docker');
      const mine = harness.backend({ lifetime_seconds: 1, docker_freeze_seconds: 0 }, { sandboxRoot: rootOf(harness.sandboxDir), reapIntervalMs: 0 });
      const theirs = harness.backend({ sandbox_dir: otherDir }, { sandboxRoot: rootOf(otherDir), reapIntervalMs: 0 });
      const user = { platform: 'telegram', userId: '2090' };
      const myRequest = harness.request(user);
      const theirRequest = harness.request(user, {}, { sandbox_dir: otherDir });
      expect(myRequest.scope.key).toBe(theirRequest.scope.key);
      await mine.doExec(myRequest, { command: 'echo mine > /workspace/who' });
      await theirs.doExec(theirRequest, { command: 'echo theirs > /workspace/who' });
      const theirId = (await theirs.list()).find((info) => info.scopeKey === theirRequest.scope.key)!.containerId;
      const listed = async (backend: typeof mine) =>
        (await backend.list()).filter((info) => info.scopeKey === myRequest.scope.key).map((info) => info.workspace);
      expect(await listed(mine)).toEqual([myRequest.paths.workspace]);
      expect(await listed(theirs)).toEqual([theirRequest.paths.workspace]);
      // Idle past lifetime_seconds: the reaper (which adopts what it finds first) stops its own
      // (with the other tests' sandboxes of this installation), never the other one's.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(await mine.reap()).toContain(myRequest.scope.key);
      expect((await harness.docker.getContainer(theirId).inspect()).State.Running).toBe(true);
      await mine.remove(myRequest.scope.key);
      expect((await harness.docker.getContainer(theirId).inspect()).State.Running).toBe(true);
      expect((await theirs.doExec(theirRequest, { command: 'cat /workspace/who' })).stdout).toBe('theirs\n');
      await theirs.remove(theirRequest.scope.key);
    } finally {
      await releaseDisksUnder(otherDir);
      await rm(otherDir, { recursive: true, force: true });
    }
  });
});

describe('recovery', () => {
  it('recreates a container removed under a live session, files intact', async () => {
    const backend = harness.backend();
    const request = harness.request({ platform: 'telegram', userId: '2002' });
    await backend.doExec(request, { command: 'echo precious > /workspace/f.txt; echo home > /root/h.txt' });
    const oldId = await backend.doAcquire(request);
    await harness.docker.getContainer(oldId).remove({ force: true });
    const result = await backend.doExec(request, { command: 'cat /workspace/f.txt /root/h.txt' });
    expect(result).toMatchObject({ exitCode: 0, stdout: 'precious\nhome\n' });
    expect(await backend.doAcquire(request)).not.toBe(oldId);
    await backend.close();
  });

  it('restarts a container stopped from outside (as after an engine restart)', async () => {
    const backend = harness.backend();
    const request = harness.request({ platform: 'telegram', userId: '2003' });
    await backend.doExec(request, { command: 'echo kept > /workspace/k.txt' });
    const id = await backend.doAcquire(request);
    await harness.docker.getContainer(id).stop({ t: 1 });
    expect((await backend.doExec(request, { command: 'cat /workspace/k.txt' })).stdout).toBe('kept\n');
    expect(await backend.doAcquire(request)).toBe(id);
    await backend.close();
  });

  it('stops idle sandboxes on reap, and the next command starts them again', async () => {
    // The automatic reaper is off: this test decides when to reap, so no timer can beat it to it.
    const backend = harness.backend({ lifetime_seconds: 1, docker_freeze_seconds: 0 }, { reapIntervalMs: 0 });
    const request = harness.request({ platform: 'telegram', userId: '2004' });
    await backend.doExec(request, { command: 'echo x > /workspace/r.txt' });
    // Sandboxes of earlier tests may be reaped here (their recorded last use is old); this one is fresh.
    expect(await backend.reap()).not.toContain(request.scope.key);
    await new Promise((resolve) => setTimeout(resolve, 1300));
    expect(await backend.reap()).toContain(request.scope.key);
    const [container] = await containersOf(request.scope.key);
    expect(container?.State).toBe('exited');
    expect((await backend.doExec(request, { command: 'cat /workspace/r.txt' })).stdout).toBe('x\n');
    expect((await containersOf(request.scope.key))[0]?.State).toBe('running');
    await backend.close();
  });

  it('with docker_freeze_seconds, freezes an idle sandbox, thaws it for the next command (same shell, its job resumed), then stops it', async () => {
    const backend = harness.backend({ lifetime_seconds: 1, docker_freeze_seconds: 3 }, { reapIntervalMs: 0 });
    const request = harness.request({ platform: 'telegram', userId: '2005' });
    await backend.doExec(request, { command: 'cd /tmp && export KEPT=yes; (sleep 300 &) ; true' });
    await new Promise((resolve) => setTimeout(resolve, 1300));
    expect(await backend.reap()).not.toContain(request.scope.key);
    expect((await containersOf(request.scope.key))[0]?.State).toBe('paused');
    const woke = await backend.doExec(request, { command: 'echo "$KEPT $PWD"; ps -o args | grep -c "^sleep 300"', timeout: 20 });
    expect(woke).toMatchObject({ exitCode: 0, stdout: 'yes /tmp\n1\n', timedOut: false });
    expect((await containersOf(request.scope.key))[0]?.State).toBe('running');
    // Idle again: frozen again, and stopped once frozen for docker_freeze_seconds.
    await new Promise((resolve) => setTimeout(resolve, 1300));
    expect(await backend.reap()).not.toContain(request.scope.key);
    await new Promise((resolve) => setTimeout(resolve, 3200));
    expect(await backend.reap()).toContain(request.scope.key);
    expect((await containersOf(request.scope.key))[0]?.State).toBe('exited');
    await backend.close();
  });

  it('stops the least recently used sandbox beyond docker_max_running', async () => {
    const backend = harness.backend({ docker_max_running: 1 });
    const one = harness.request({ platform: 'telegram', userId: '2005' });
    const two = harness.request({ platform: 'telegram', userId: '2006' });
    await backend.doExec(one, { command: 'true' });
    await backend.doExec(two, { command: 'true' });
    expect((await containersOf(one.scope.key))[0]?.State).toBe('exited');
    expect((await containersOf(two.scope.key))[0]?.State).toBe('running');
    expect((await backend.doExec(one, { command: 'echo back' })).stdout).toBe('back\n');
    await backend.close();
  });

  it('recreates an idle container whose config changed, and leaves a busy one alone', async () => {
    const warnings: string[] = [];
    const logger = { info: () => undefined, warn: (message: string) => warnings.push(message), error: () => undefined };
    const request = harness.request({ platform: 'telegram', userId: '2007' });
    const old = harness.backend({ docker_pids_limit: 100 });
    const oldId = await old.doAcquire(request);
    // A background job keeps the container busy.
    await old.doExec(request, { command: 'sleep 300 > /dev/null 2>&1 &' });
    await old.close();
    const changed = harness.backend({ docker_pids_limit: 200 }, { logger });
    expect(await changed.doAcquire(request)).toBe(oldId);
    expect(warnings.join('\n')).toMatch(/changed, but it is busy/);
    await changed.close();
    await engineExec(harness.docker, oldId, 'kill -9 $(pidof sleep) 2>/dev/null; true');
    const again = harness.backend({ docker_pids_limit: 200 });
    const newId = await again.doAcquire(request);
    expect(newId).not.toBe(oldId);
    expect((await harness.docker.getContainer(newId).inspect()).HostConfig.PidsLimit).toBe(200);
    await again.close();
  });
  it('runs the next command, with its own status, after a command killed the spare shell waiting beside it', async () => {
    const request = harness.request({ platform: 'telegram', userId: '2015' });
    const backend = harness.backend();
    await backend.doExec(request, { command: 'cd /tmp && export KEPT=yes' });
    // A spare waits with one of the session's FIFOs as its stdin; this kills every waiting one.
    const killSpares = `for f in /proc/[0-9]*/fd/0; do case "$(readlink "$f")" in */go-*) p=\${f#/proc/}; kill -9 "\${p%%/*}" ;; esac; done`;
    // Kills the spare waiting beside this command ...
    await backend.doExec(request, { command: `${killSpares}; true` });
    expect(await backend.doExec(request, { command: 'echo "ok $KEPT $PWD"; exit 3' })).toMatchObject({ exitCode: 3, stdout: 'ok yes /tmp\n' });
    // ... and, from a job left behind, the spare waiting between two commands: a zombie, then.
    await backend.doExec(request, { command: `(sleep 0.5; ${killSpares}) > /dev/null 2>&1 &` });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await backend.doExec(request, { command: 'echo "ok $KEPT"; exit 4' })).toMatchObject({ exitCode: 4, stdout: 'ok yes\n' });
    expect(await backend.doExec(request, { command: 'echo again' })).toMatchObject({ exitCode: 0, stdout: 'again\n' });
    await backend.close();
  });

  it('counts a command made only of builtins as busy, though it runs in the spare shell that idles between commands', async () => {
    const request = harness.request({ platform: 'telegram', userId: '2014' });
    const backend = harness.backend();
    const id = await backend.doAcquire(request);
    expect(await backend.isBusy(id), 'idle, with a spare shell waiting for the next command').toBe(false);
    // The loop says it started with a builtin redirection (no fork), and the check waits for that, not for a time.
    const running = backend.doExec(request, { command: ': > /workspace/started; while [ ! -f /workspace/stop ]; do :; done; echo stopped' });
    await vi.waitFor(() => access(path.join(request.paths.workspace, 'started')), { timeout: 30_000, interval: 50 });
    expect(await backend.isBusy(id), 'a builtin loop forks nothing, so only the session knows it runs').toBe(true);
    await writeFile(path.join(request.paths.workspace, 'stop'), '');
    expect((await running).stdout).toBe('stopped\n');
    expect(await backend.isBusy(id)).toBe(false);
    // Jobs left in the background that look like the sandbox's own processes: a forked shell
    // sleeping as the launcher does, and a loop of builtins in a forked shell.
    await backend.doExec(request, { command: '(sleep 3600; echo late) > /dev/null 2>&1 &' });
    expect(await backend.isBusy(id), 'a (sleep 3600; …) & job').toBe(true);
    // The job's sleep ends (and the launcher starts its own again).
    await engineExec(harness.docker, id, 'kill $(pidof sleep) 2>/dev/null; true');
    await vi.waitFor(async () => expect(await backend.isBusy(id)).toBe(false), { timeout: 30_000, interval: 250 });
    await backend.doExec(request, { command: '(while [ ! -f /workspace/stop-loop ]; do :; done) > /dev/null 2>&1 &' });
    expect(await backend.isBusy(id), 'a background loop of builtins').toBe(true);
    await writeFile(path.join(request.paths.workspace, 'stop-loop'), '');
    await vi.waitFor(async () => expect(await backend.isBusy(id)).toBe(false), { timeout: 30_000, interval: 250 });
    await backend.close();
  });
});

describe('remove and purge', () => {
  it('purges one scope: container and files, not a neighbour, not a planted link target', async () => {
    const backend = harness.backend();
    const victim = harness.request({ platform: 'telegram', userId: '2008' });
    const neighbour = harness.request({ platform: 'telegram', userId: '2009' });
    await backend.doExec(victim, { command: 'echo mine > /workspace/a.txt' });
    await backend.doExec(neighbour, { command: 'echo theirs > /workspace/b.txt' });
    const outside = path.join(harness.sandboxDir, 'outside-target');
    await mkdir(outside);
    await writeFile(path.join(outside, 'keep.txt'), 'keep');
    await symlink(outside, path.join(victim.paths.workspace, 'link-out'));
    await backend.remove(victim.scope.key, { purge: true, paths: victim.paths });
    expect(await containersOf(victim.scope.key)).toHaveLength(0);
    await expect(readFile(path.join(victim.paths.workspace, 'a.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readFile(path.join(outside, 'keep.txt'), 'utf8')).toBe('keep');
    expect((await backend.doExec(neighbour, { command: 'cat /workspace/b.txt' })).stdout).toBe('theirs\n');
    // The purged user starts afresh on the next command.
    expect((await backend.doExec(victim, { command: 'ls -A /workspace | wc -l' })).stdout.trim()).toBe('0');
    await backend.close();
  });
});

describe('images and network', () => {
  it('throws ImageNotFoundError naming the image when it is absent and cannot be pulled, leaving nothing behind', async () => {
    const image = `localhost/berth-missing-${harness.runId}:latest`;
    const backend = harness.backend({ docker_image: image });
    const request = harness.request({ platform: 'telegram', userId: '2010' }, {}, { docker_image: image });
    const error = await backend.doExec(request, { command: 'true' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ImageNotFoundError);
    expect((error as ImageNotFoundError).image).toBe(image);
    expect((error as Error).message).toContain(`docker pull ${image}`);
    expect(await containersOf(request.scope.key)).toHaveLength(0);
    await backend.close();
  });

  it('gives each sandbox a network of its own, where no other sandbox can reach it, and docker_network: false means no network', async () => {
    const backend = harness.backend({ docker_network: true });
    const alice = harness.request({ platform: 'telegram', userId: '2011' });
    const bob = harness.request({ platform: 'telegram', userId: '2012' });
    const bobId = await backend.doAcquire(bob);
    const aliceId = await backend.doAcquire(alice);
    const networksOf = async (id: string) => (await harness.docker.getContainer(id).inspect()).NetworkSettings.Networks;
    const [bobNetworks, aliceNetworks] = [await networksOf(bobId), await networksOf(aliceId)];
    // One network each, named at random (a name says nothing of whose it is), and recorded on the container.
    const ownNetwork = async (id: string) => (await harness.docker.getContainer(id).inspect()).Config.Labels['dev.berth.network'];
    const [bobNetwork, aliceNetwork] = [await ownNetwork(bobId), await ownNetwork(aliceId)];
    expect(Object.keys(bobNetworks)).toEqual([bobNetwork]);
    expect(Object.keys(aliceNetworks)).toEqual([aliceNetwork]);
    expect(bobNetwork).toMatch(/^berth-net-[0-9a-f]{16}$/);
    expect(bobNetwork).not.toBe(aliceNetwork);
    const bobIp = Object.values(bobNetworks)[0]?.IPAddress;
    expect(bobIp).toMatch(/^10\.217\.\d+\.\d+$/);
    const subnetOf = async (name: string) => (await harness.docker.getNetwork(name).inspect()).IPAM?.Config?.[0]?.Subnet;
    expect(await subnetOf(bobNetwork!)).toMatch(/\/29$/);
    expect(await subnetOf(bobNetwork!)).not.toBe(await subnetOf(aliceNetwork!));
    await backend.doExec(bob, { command: '(nc -l -p 8080 -e echo hello-from-bob > /dev/null 2>&1 &)' });
    // The listener answers locally: the port is open ...
    expect((await backend.doExec(bob, { command: 'nc -w 2 127.0.0.1 8080 < /dev/null; true' })).stdout).toContain('hello-from-bob');
    await backend.doExec(bob, { command: '(nc -l -p 8080 -e echo hello-from-bob > /dev/null 2>&1 &)' });
    // ... but not from another sandbox.
    const probe = await backend.doExec(alice, { command: `nc -w 2 ${bobIp} 8080 < /dev/null; echo "rc=$?"` });
    expect(probe.stdout).not.toContain('hello-from-bob');
    // Removing a sandbox removes its network too.
    await backend.remove(bob.scope.key);
    await expect(harness.docker.getNetwork(bobNetwork!).inspect()).rejects.toMatchObject({ statusCode: 404 });
    const offline = harness.backend({ docker_network: false });
    const carol = harness.request({ platform: 'telegram', userId: '2013' });
    expect((await offline.doExec(carol, { command: 'ls /sys/class/net' })).stdout.trim()).toBe('lo');
    await backend.close();
    await offline.close();
  });
});
