import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, constants, existsSync, mkdtempSync, openSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecChannel } from '@berth/core/driver';
import { afterEach, describe, expect, it } from 'vitest';
import { LAUNCH_FIFO, openFifoChannel } from './fifo-channel.js';
import { CHANNELS_TARGET, KEEP_ALIVE_COMMAND } from '../sandbox-spec.js';

// The sandbox's own main process, run on this host with the channel folder where the sandbox
// would see /run/berth: the launcher script and the FIFOs are the real ones, no engine.
const folders: string[] = [];
const launchers: ChildProcess[] = [];
afterEach(() => {
  for (const launcher of launchers.splice(0)) if (launcher.pid) process.kill(-launcher.pid, 'SIGKILL');
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

const makeFifos = (files: string[]): void => void execFileSync('mkfifo', ['-m', '600', '--', ...files]);

async function channelFolder(withLaunchFifo = true): Promise<string> {
  const folder = mkdtempSync(path.join(tmpdir(), 'berth-channels-'));
  folders.push(folder);
  if (withLaunchFifo) makeFifos([path.join(folder, LAUNCH_FIFO)]);
  return folder;
}

function startLauncher(folder: string, script = KEEP_ALIVE_COMMAND[2].replaceAll(CHANNELS_TARGET, folder)): void {
  // A process group of its own, so the test ends the launcher and every shell it started.
  launchers.push(spawn('/bin/sh', ['-c', script], { detached: true, stdio: 'ignore' }));
}

function collect(channel: ExecChannel): { out: () => string; err: () => string; closed: Promise<void> } {
  let out = '';
  let err = '';
  channel.onStdout((chunk) => (out += chunk.toString()));
  channel.onStderr((chunk) => (err += chunk.toString()));
  return { out: () => out, err: () => err, closed: new Promise((resolve) => channel.onClose(resolve)) };
}

async function until(what: () => boolean, ms = 5_000): Promise<void> {
  for (const started = Date.now(); !what(); ) {
    if (Date.now() - started > ms) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('openFifoChannel', () => {
  it('gets a shell from the launcher: stdin, stdout and stderr apart, and its names gone from the folder', async () => {
    const folder = await channelFolder();
    startLauncher(folder);
    const channel = await openFifoChannel(folder);
    expect(channel).toBeDefined();
    const seen = collect(channel!);
    channel!.write('echo out; echo err >&2; echo $$ > /dev/null\n');
    await until(() => seen.out() === 'out\n' && seen.err() === 'err\n');
    // Its three FIFOs, named after this process's random instance mark (not its pid), until it closes.
    const names = readdirSync(folder).filter((entry) => entry !== LAUNCH_FIFO);
    expect(names.map((entry) => entry.slice(16)).sort()).toEqual(['.err', '.in', '.out']);
    expect(new Set(names.map((entry) => entry.slice(0, 8))).size).toBe(1);
    // Two at once, each its own shell.
    const [first, second] = await Promise.all([openFifoChannel(folder), openFifoChannel(folder)]);
    const one = collect(first!);
    const two = collect(second!);
    first!.write('echo one\n');
    second!.write('echo two\n');
    await until(() => one.out() === 'one\n' && two.out() === 'two\n');
    for (const open of [channel, first, second]) open!.destroy();
    expect(readdirSync(folder)).toEqual([LAUNCH_FIFO]);
  });

  it('ends the shell when this side closes its stdin, and says so when the shell ends by itself', async () => {
    const folder = await channelFolder();
    startLauncher(folder);
    const channel = await openFifoChannel(folder);
    const seen = collect(channel!);
    channel!.write('echo $$\n');
    await until(() => /^\d+\n$/.test(seen.out()));
    const pid = Number(seen.out().trim());
    channel!.destroy();
    // The gateway gone (its ends closed): the shell reads the end of its stdin and leaves.
    await until(() => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    });
    const other = await openFifoChannel(folder);
    const ended = collect(other!);
    other!.write('exit 3\n');
    await ended.closed;
  });

  it('answers undefined within half a second without a launcher, and at once without a launch FIFO, leaving nothing behind', async () => {
    const noReader = await channelFolder();
    const started = Date.now();
    expect(await openFifoChannel(noReader)).toBeUndefined();
    expect(await openFifoChannel(await channelFolder(false))).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(readdirSync(noReader)).toEqual([LAUNCH_FIFO]);
  });

  it('gives up after its timeout when the launcher reads but starts no shell (a sandbox full of processes)', async () => {
    const folder = await channelFolder();
    startLauncher(folder, `while :; do while read -r line; do :; done < ${folder}/${LAUNCH_FIFO}; done`);
    expect(await openFifoChannel(folder, { helloTimeoutMs: 300 })).toBeUndefined();
    expect(readdirSync(folder)).toEqual([LAUNCH_FIFO]);
  });

  it("removes the FIFOs a process that is gone left (a gateway killed, whatever its pid), and no one else's", async () => {
    const folder = await channelFolder();
    startLauncher(folder);
    const at = (name: string) => path.join(folder, name);
    // A killed gateway's channel: nothing reads its .out any more. Its maker's pid may well be
    // alive again (pid 1 of a restarted gateway container): it does not count.
    const stale = ['00000001aaaaaaaa.in', '00000001aaaaaaaa.out', '00000001aaaaaaaa.err'];
    // A live process's channel: its .out has a reader.
    const live = ['00000001bbbbbbbb.in', '00000001bbbbbbbb.out', '00000001bbbbbbbb.err'];
    // One just made, whose maker has not opened it yet.
    const young = ['00000002cccccccc.in', '00000002cccccccc.out', '00000002cccccccc.err'];
    makeFifos([...stale, ...live, ...young].map(at));
    const past = new Date(Date.now() - 60_000);
    for (const name of [...stale, ...live]) utimesSync(at(name), past, past);
    const reader = openSync(at(live[1]!), constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      writeFileSync(at('notes'), 'not ours');
      (await openFifoChannel(folder))!.destroy();
      for (const name of stale) expect(existsSync(at(name)), name).toBe(false);
      for (const name of [...live, ...young]) expect(existsSync(at(name)), name).toBe(true);
      expect(existsSync(at('notes'))).toBe(true);
    } finally {
      closeSync(reader);
    }
  });

  it('refuses a channel folder that is a symbolic link, and makes nothing where it points', async () => {
    const target = await channelFolder();
    startLauncher(target);
    const link = path.join(mkdtempSync(path.join(tmpdir(), 'berth-channels-link-')), 'channels');
    folders.push(path.dirname(link));
    const { symlinkSync } = await import('node:fs');
    symlinkSync(target, link);
    expect(await openFifoChannel(link)).toBeUndefined();
    expect(readdirSync(target)).toEqual([LAUNCH_FIFO]);
  });

  it('ends the launcher, rather than spin, when it cannot open the launch FIFO', async () => {
    const folder = await channelFolder();
    chmodSync(path.join(folder, LAUNCH_FIFO), 0);
    // As a user the FIFO's mode shuts out (root opens anything, so nobody stands in for the user namespace case).
    const script = KEEP_ALIVE_COMMAND[2].replaceAll(CHANNELS_TARGET, folder).replace('while :; do sleep 3600 & wait $!; done', 'wait');
    const launcher = spawn('/usr/sbin/runuser', ['-u', 'nobody', '--', '/bin/sh', '-c', script], { stdio: 'ignore' });
    const ended = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 5_000);
      launcher.on('exit', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    if (!ended) launcher.kill('SIGKILL');
    expect(ended).toBe(true);
  });

  it('starts nothing for a request line that is not a channel name', async () => {
    const folder = await channelFolder();
    const marker = path.join(folder, 'pwned');
    startLauncher(folder);
    const { openSync, writeSync, closeSync, constants } = await import('node:fs');
    const fd = openSync(path.join(folder, LAUNCH_FIFO), constants.O_WRONLY);
    writeSync(fd, `x; touch ${marker}\n../../etc/x\n$(touch ${marker})\n`);
    closeSync(fd);
    // A real request after them still gets its shell: the bad lines were read and skipped.
    const channel = await openFifoChannel(folder);
    expect(channel).toBeDefined();
    channel!.destroy();
    expect(existsSync(marker)).toBe(false);
  });
});
