import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LOCKS_FOLDER } from '@berth/core';
import { disksFolderOf } from '@berth/core/driver';
import { findEngine } from './testing/find-engine.js';
import { containersUnder as containersOf, removeTestRoot } from './testing/remove-test-root.js';

// `berth exec` as an operator runs it and interrupts it: the built CLI in a subprocess, the real
// Docker engine, a fresh home and sandbox folder of the test's own.
const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const IMAGE = 'localhost/berth-busybox:latest';
const root = mkdtempSync(path.join(os.tmpdir(), 'berth-cli-first-'));
const home = path.join(root, 'hermes');
const sandboxes = path.join(root, 'sandboxes');
const engine = findEngine('docker');
const name = (prefix: string) => `${prefix}-${randomInt(1e9)}`;
vi.setConfig({ testTimeout: 600_000 });

interface Running {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  /** Resolves with the exit status, or the signal that ended the process. */
  ended: Promise<number | NodeJS.Signals>;
}

function start(args: string[], extra: Record<string, string> = {}): Running {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: root, HERMES_HOME: home, TERMINAL_SANDBOX_DIR: sandboxes, ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const running: Running = {
    child,
    stdout: '',
    stderr: '',
    ended: new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1))),
  };
  child.stdout!.on('data', (chunk: Buffer) => (running.stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (running.stderr += chunk.toString()));
  return running;
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 240_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const containersUnder = (folder: string) => containersOf(engine, folder);

/** What a task's first command may leave on the host: its folder, lock, disk image, mounts and loop devices. */
function leftOnHost(folderName: string): string[] {
  const left: string[] = [];
  const folder = path.join(sandboxes, 'docker', folderName);
  if (existsSync(folder)) left.push(folder);
  const lock = path.join(sandboxes, 'docker', LOCKS_FOLDER, `${folderName}.lock`);
  if (existsSync(lock)) left.push(lock);
  const diskFolder = disksFolderOf(path.join(sandboxes, 'docker'));
  for (const file of existsSync(diskFolder) ? readdirSync(diskFolder) : []) if (file.startsWith(folderName)) left.push(path.join(diskFolder, file));
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) if (line.includes(folder)) left.push(`mount: ${line}`);
  const loops = execFileSync('losetup', ['-a'], { encoding: 'utf8' }).split('\n');
  for (const line of loops) if (line.includes(`${folderName}.ext4`) && line.includes(root)) left.push(`loop: ${line}`);
  return left;
}

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing; run "pnpm --filter @berth/gateway-plugin build" first`);
  mkdirSync(home, { recursive: true });
  writeFileSync(path.join(home, 'config.yaml'), `terminal:\n  docker_image: ${IMAGE}\n  timeout: 600\n`);
});

afterAll(() => removeTestRoot(engine, root));

describe('berth exec, shown as it runs and stopped with Ctrl-C', () => {
  const task = name('live');
  const workspace = path.join(sandboxes, 'docker', task, 'workspace');

  it("shows a command's output as it comes, before the command ends", async () => {
    // The command goes on only once the test has seen its first line: output held to the end would never come.
    const run = start(['exec', '--task', task, '--', 'echo first; while [ ! -e /workspace/go ]; do sleep 0.1; done; echo second']);
    // A line's last newline may wait for what follows it (it could begin Berth's end marker).
    await until('the first line', () => run.stdout.includes('first'));
    expect(run.stdout).toMatch(/^first\n?$/);
    writeFileSync(path.join(workspace, 'go'), '');
    expect(await run.ended).toBe(0);
    expect(run.stdout).toBe('first\nsecond\n');
  });

  it('stops the running command at Ctrl-C, says so in one line, exits 130, and the sandbox stays', async () => {
    const marker = name('sleeper');
    const run = start(['exec', '--task', task, '--', `echo started; sh -c 'sleep 600; : ${marker}'; touch /workspace/after`]);
    await until('the command to start', () => run.stdout.includes('started'));
    run.child.kill('SIGINT');
    expect(await run.ended).toBe(130);
    // Before Berth's line, what the sandbox's shell says of its killed child ("Killed"), as at a timeout.
    expect(run.stderr).toMatch(/(^|\n)berth: interrupted \(SIGINT\); the command was stopped, the sandbox of task:\S+ stays\n$/);
    expect(run.stderr.match(/berth:/g)).toHaveLength(1);
    const check = start(['exec', '--task', task, '--', 'ps -o args']);
    expect(await check.ended).toBe(0);
    expect(check.stdout).not.toContain(marker);
    expect(existsSync(path.join(workspace, 'after'))).toBe(false);
  });
});

describe('berth exec --socket, stopped with Ctrl-C', () => {
  it('says so in one line, exits 130, and berth serve stops the command of the client that left', async () => {
    const socket = path.join(root, 'run', 'berth.sock');
    const server = start(['serve', '--socket', socket]);
    try {
      await until('berth serve to listen', () => server.stdout.includes('listening on'));
      const task = name('sock');
      const workspace = path.join(sandboxes, 'docker', task, 'workspace');
      const marker = name('sleeper');
      const run = start(['exec', '--socket', socket, '--task', task, '--', `touch /workspace/started; sh -c 'sleep 600; : ${marker}'; touch /workspace/after`]);
      await until('the command to start', () => existsSync(path.join(workspace, 'started')));
      run.child.kill('SIGINT');
      expect(await run.ended).toBe(130);
      expect(run.stderr).toBe('berth: interrupted (SIGINT); berth serve stops the command as this client leaves\n');
      await until(
        'the command to be stopped',
        async () => {
          const check = start(['exec', '--socket', socket, '--task', task, '--', 'ps -o args']);
          return (await check.ended) === 0 && !check.stdout.includes(marker);
        },
        60_000,
      );
      expect(existsSync(path.join(workspace, 'after'))).toBe(false);
    } finally {
      server.child.kill('SIGTERM');
      await server.ended;
    }
  });
});

describe('a first command that fails or is interrupted leaves nothing behind', () => {
  it('removes what it made when the image is missing, and says so in the one line', async () => {
    const task = name('noimage');
    const config = path.join(root, 'missing-image.yaml');
    writeFileSync(config, 'terminal:\n  docker_image: localhost/berth-no-such-image:0\n');
    const run = start(['exec', '--config', config, '--task', task, '--', 'true']);
    expect(await run.ended).toBe(125);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('localhost/berth-no-such-image:0');
    // Its folders and disk were made beside the image's check: made, then removed.
    expect(run.stderr).toMatch(/; removed what this first command made for task:\S+\n$/);
    expect(leftOnHost(task)).toEqual([]);
    expect((await containersUnder(sandboxes)).filter((container) => container.Names.some((n) => n.includes(task)))).toEqual([]);
  });

  // Moments of a first command's making: at once (before Berth listens, or just after), once its
  // folders exist, once its container exists.
  // Once its folders exist, the container is still to be made: that interrupt is surely in the making.
  const moments: Array<[string, (task: string) => () => boolean | Promise<boolean>, boolean]> = [
    ['at once', () => () => true, false],
    ['once its folders exist', (task) => () => existsSync(path.join(sandboxes, 'docker', task)), true],
    ['once its container exists', (task) => async () => (await containersUnder(path.join(sandboxes, 'docker', task))).length > 0, false],
  ];
  it.each(moments)('SIGINT %s: nothing left, or the command stopped and its sandbox kept', async (_label, moment, inTheMaking) => {
    const task = name('first');
    const run = start(['exec', '--task', task, '--', 'sleep 600']);
    await until('the moment', moment(task));
    run.child.kill('SIGINT');
    const status = await run.ended;
    if (inTheMaking) expect(run.stderr).toMatch(/before the command ran; removed what this first command made/);
    if (/the command was stopped/.test(run.stderr)) {
      // Too late to be the making: the command ran, and was stopped; its sandbox is the user's now.
      expect(status).toBe(130);
      const removed = start(['rm', '--task', task, '--purge']);
      expect(await removed.ended).toBe(0);
    } else {
      expect([130, 'SIGINT']).toContain(status);
      if (status === 130)
        expect(run.stderr).toMatch(/^berth: interrupted \(SIGINT\) before the command ran(; removed what this first command made for task:\S+)?\n$/);
    }
    expect(leftOnHost(task)).toEqual([]);
    expect(await containersUnder(path.join(sandboxes, 'docker', task))).toEqual([]);
  });
});

describe('berth ls: sandboxes that hold only files', () => {
  it('lists a task and a user (also in a profile) whose container was removed with their files kept, and a folder it cannot name; rm --purge removes them', async () => {
    const task = name('kept');
    const user = String(randomInt(100_000_000, 2_000_000_000));
    for (const target of [
      ['--task', task],
      ['--platform', 'telegram', '--user', user],
      // The same person in a host profile: a sandbox of its own, listed under its profile.
      ['--profile', 'work', '--platform', 'telegram', '--user', user],
    ]) {
      const made = start(['exec', ...target, '--', 'echo mine > /workspace/file']);
      expect(await made.ended).toBe(0);
      const removed = start(['rm', ...target]);
      expect(await removed.ended).toBe(0);
    }
    const stray = path.join(sandboxes, 'docker', 'someone@%zz');
    mkdirSync(stray);
    const listed = start(['ls', '--json']);
    expect(await listed.ended).toBe(0);
    const records = JSON.parse(listed.stdout) as Array<Record<string, unknown>>;
    const filesOnly = (scope: string | null, folder: string) => ({
      scope,
      containerId: null,
      state: 'files only',
      workspace: path.join(sandboxes, 'docker', folder, 'workspace'),
    });
    expect(records).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ ...filesOnly(`task:${task}`, task), kind: 'task', task }),
        expect.objectContaining({ ...filesOnly(`user:telegram:${user}`, `telegram@${user}`), kind: 'user', platform: 'telegram', user, profile: null }),
        expect.objectContaining({
          ...filesOnly(`profile:work:user:telegram:${user}`, `profile~work~telegram@${user}`),
          kind: 'user',
          platform: 'telegram',
          user,
          profile: 'work',
        }),
        expect.objectContaining({ ...filesOnly(null, 'someone@%zz'), kind: null }),
      ]),
    );
    const table = start(['ls']);
    expect(await table.ended).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`task ${task}\\s+-\\s+files only`));
    expect(table.stdout).toMatch(/\? someone@%zz\s+-\s+files only/);
    expect(table.stdout).toMatch(new RegExp(`work/telegram:${user}\\s+-\\s+files only`));
    expect(table.stdout).toMatch(/4 with files only \(no container\)/);
    for (const target of [
      ['--task', task],
      ['--platform', 'telegram', '--user', user],
      // The same person in a host profile: a sandbox of its own, listed under its profile.
      ['--profile', 'work', '--platform', 'telegram', '--user', user],
    ]) {
      const purged = start(['rm', ...target, '--purge']);
      expect(await purged.ended).toBe(0);
    }
    rmSync(stray, { recursive: true });
    const after = start(['ls', '--json']);
    expect(await after.ended).toBe(0);
    expect(after.stdout).not.toContain('files only');
  });
});
