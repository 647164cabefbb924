import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { DriverProcessList, ExecChannel, SandboxDriverV1 } from '@berth/core/driver';
import { insideProcessListing, isIdleProcess, isSandboxBusy, sandboxIsBusy } from './is-sandbox-busy.js';
import { KEEP_ALIVE_COMMAND } from '../sandbox-spec.js';
import { RUNNING_PROBE } from '../shell/shell-protocol.js';

const launcher = KEEP_ALIVE_COMMAND.join(' ');
const DOCKER_INIT = /(^|\/)(docker-init|tini|catatonit|conmon)\b/;

describe('whether a sandbox is busy', () => {
  it("reads the launcher as it is built, its sleep, a waiting shell and the engine's own processes as idle", () => {
    expect(isIdleProcess(launcher)).toBe(true);
    expect(isIdleProcess(`/sbin/docker-init -- ${launcher}`, DOCKER_INIT)).toBe(true);
    expect(isIdleProcess('sleep 3600')).toBe(true);
    expect(isIdleProcess('/bin/sh')).toBe(true);
    expect(isIdleProcess('/pause', /^\/pause$/)).toBe(true);
    expect(isIdleProcess('/pause')).toBe(false);
    expect(isIdleProcess('sleep 30')).toBe(false);
    expect(isIdleProcess('python3 train.py')).toBe(false);
    expect(isIdleProcess('/bin/sh -c make')).toBe(false);
  });

  it('is busy with any work, idle with none, and asks the probe only when a session shell could hide a command', async () => {
    let asked = 0;
    const probe = (answer: boolean) => async () => {
      asked++;
      return answer;
    };
    expect(await isSandboxBusy({ commands: [launcher, 'sleep 3600', 'node server.js'] }, probe(false))).toBe(true);
    expect(await isSandboxBusy({ commands: [launcher, 'sleep 3600'] }, probe(true))).toBe(false);
    expect(asked).toBe(0);
    expect(await isSandboxBusy({ commands: [launcher, 'sleep 3600', '/bin/sh'] }, probe(true))).toBe(true);
    expect(await isSandboxBusy({ commands: [launcher, 'sleep 3600', '/bin/sh'] }, probe(false))).toBe(false);
    expect(asked).toBe(2);
    // A probe run with the listing: its "running" is busy whatever the list says.
    expect(await isSandboxBusy({ commands: [launcher] }, true)).toBe(true);
    expect(await isSandboxBusy({ commands: [launcher, '/bin/sh'] }, false)).toBe(false);
  });

  it("takes a user's forked shell or sleep for work, though its command line is the sandbox's own", async () => {
    // An idle sandbox as Docker lists it: its init (1), the launcher (7), the launcher's loop (8)
    // and sleep (9), a session's shell (20) and the kill shell (21), each leading its own group
    // (setsid), and the session's spare (22), a shell of the session's own.
    const idle = {
      commands: ['/sbin/docker-init', launcher, launcher, 'sleep 3600', '/bin/sh', '/bin/sh', '/bin/sh'],
      ids: [
        { pid: 1, ppid: 0, pgid: 1 },
        { pid: 7, ppid: 1, pgid: 7 },
        { pid: 8, ppid: 7, pgid: 7 },
        { pid: 9, ppid: 7, pgid: 7 },
        { pid: 20, ppid: 1, pgid: 20 },
        { pid: 21, ppid: 1, pgid: 21 },
        { pid: 22, ppid: 20, pgid: 20 },
      ],
      engineProcess: DOCKER_INIT,
    };
    const plus = (commands: string[], ids: { pid: number; ppid: number; pgid: number }[]) => ({
      ...idle,
      commands: [...idle.commands, ...commands],
      ids: [...idle.ids, ...ids],
    });
    expect(await isSandboxBusy(idle, false)).toBe(false);
    // `(sleep 3600; make) &`, its command ended: the forked shell moved to the init, in the session's group.
    const job = plus(
      ['/bin/sh', 'sleep 3600'],
      [
        { pid: 30, ppid: 1, pgid: 20 },
        { pid: 31, ppid: 30, pgid: 20 },
      ],
    );
    expect(await isSandboxBusy(job, false)).toBe(true);
    // `(while :; do :; done) &`: a second shell of the session's, beside its spare.
    expect(await isSandboxBusy(plus(['/bin/sh'], [{ pid: 32, ppid: 20, pgid: 20 }]), false)).toBe(true);
    // A sleep left to the launcher: one launcher has one sleep of its own.
    expect(await isSandboxBusy(plus(['sleep 3600'], [{ pid: 33, ppid: 7, pgid: 20 }]), false)).toBe(true);
    // Without the ids, two sleeps are one too many.
    expect(await isSandboxBusy({ commands: [launcher, 'sleep 3600', 'sleep 3600'] }, false)).toBe(true);
    // Ids that do not match the commands are not read.
    expect(await isSandboxBusy({ ...idle, ids: idle.ids.slice(1) }, false)).toBe(false);
  });
});

describe('the process list read from inside', () => {
  // The script reads the sessions' pid files under the sandbox's /tmp; on the host, other tests'
  // sessions keep theirs there too, so each case points it at a folder of its own.
  const run = async (script: string, folder: string): Promise<string> =>
    (await promisify(execFile)('/bin/sh', ['-c', script.replaceAll('/tmp/.berth-', `${folder}/.berth-`)])).stdout;

  it('lists the processes but not itself, and does not take its own command line for a command running', async () => {
    const folder = await mkdtemp(path.join(tmpdir(), 'berth-listing-'));
    try {
      const listing = insideProcessListing();
      expect(listing.script).toContain('/tmp/.berth-');
      const read = listing.read(await run(listing.script, folder));
      expect(read.commands.length).toBeGreaterThan(0);
      // Each process with its parent and group: this test's own process among them.
      expect(read.ids).toHaveLength(read.commands.length);
      expect(read.ids.find((entry) => entry.pid === process.pid)).toMatchObject({ ppid: process.ppid });
      // Not itself (other listings, of tests running beside this one, may show: their markers differ).
      const marker = /berth-busy-[0-9a-f]{8}/.exec(listing.script)![0];
      expect(read.commands.some((command) => command.includes(marker))).toBe(false);
      expect(read.commands.some((command) => command.includes('/proc/[0-9]*') && !/berth-busy-[0-9a-f]{8}/.test(command))).toBe(false);
      // Its own command line holds the words it prints when a command runs: only a whole line counts.
      expect(read.running).toBe(false);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it("says a command runs when a session's pid file names a live process", async () => {
    const folder = await mkdtemp(path.join(tmpdir(), 'berth-listing-'));
    try {
      await mkdir(path.join(folder, '.berth-0123'));
      await writeFile(path.join(folder, '.berth-0123', 'pid'), `${process.pid} 0 \n`);
      const listing = insideProcessListing();
      expect(listing.read(await run(listing.script, folder)).running).toBe(true);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});

describe('sandboxIsBusy, the one place the runtime asks a driver', () => {
  /** An exec channel that prints `stdout` and ends with `exitCode`. */
  const answering = (stdout: string, exitCode: number | undefined): ExecChannel => ({
    write: () => undefined,
    end: () => undefined,
    destroy: () => undefined,
    onStdout: (listener) => void setImmediate(() => listener(Buffer.from(stdout))),
    onStderr: () => undefined,
    onClose: (listener) => void setImmediate(() => setImmediate(listener)),
    exitCode: async () => exitCode,
  });
  /** A driver that lists `listed` (or throws it) and answers every exec with `exec`; what it ran is in `ran`. */
  const driverListing = (listed: DriverProcessList | Error, exec: { stdout?: string; exitCode?: number } = {}, processList = true) => {
    const ran: string[][] = [];
    const driver = {
      capabilities: { processList, hostFolders: true, networkIsolation: true },
      listProcesses: async () => {
        if (listed instanceof Error) throw listed;
        return listed;
      },
      openChannel: async (_id: string, command: readonly string[]) => {
        ran.push([...command]);
        return answering(exec.stdout ?? '', exec.exitCode);
      },
    } as unknown as SandboxDriverV1;
    return { driver, ran };
  };

  it('decides from the listing alone when no session shell could hide a command', async () => {
    const idle = driverListing({ commands: [`/sbin/docker-init -- ${launcher}`, 'sleep 3600'], engineProcess: DOCKER_INIT });
    expect(await sandboxIsBusy(idle.driver, 'id')).toBe(false);
    const working = driverListing({ commands: [launcher, 'sleep 3600', 'make -j2'] });
    expect(await sandboxIsBusy(working.driver, 'id')).toBe(true);
    expect([...idle.ran, ...working.ran]).toEqual([]);
  });

  it('runs RUNNING_PROBE in the sandbox when a session shell is listed: exit 1 is idle, anything else busy', async () => {
    const commands = [launcher, 'sleep 3600', '/bin/sh'];
    const waiting = driverListing({ commands }, { exitCode: 1 });
    expect(await sandboxIsBusy(waiting.driver, 'id')).toBe(false);
    expect(waiting.ran).toEqual([['/bin/sh', '-c', RUNNING_PROBE]]);
    expect(await sandboxIsBusy(driverListing({ commands }, { exitCode: 0 }).driver, 'id')).toBe(true);
    expect(await sandboxIsBusy(driverListing({ commands }, {}).driver, 'id')).toBe(true);
  });

  it('lists from inside, through the exec channel, where the engine cannot see the processes', async () => {
    const idle = driverListing({ engineProcess: /^\/pause$/ }, { stdout: `1 0 1 /pause\n7 0 7 ${launcher}\n8 7 7 sleep 3600\n`, exitCode: 0 });
    expect(await sandboxIsBusy(idle.driver, 'id')).toBe(false);
    expect(idle.ran).toHaveLength(1);
    expect(idle.ran[0]!.slice(0, 2)).toEqual(['/bin/sh', '-c']);
    expect(idle.ran[0]![2]).toContain(RUNNING_PROBE);
    expect(await sandboxIsBusy(driverListing({}, { stdout: `7 0 7 ${launcher}\n9 7 9 python3 train.py\n`, exitCode: 0 }).driver, 'id')).toBe(true);
    // A user's sleep under a session's shell is work, read with the parents the listing gives.
    const job = `7 0 7 ${launcher}\n8 7 7 sleep 3600\n20 7 20 /bin/sh\n30 20 20 sleep 3600\n`;
    expect(await sandboxIsBusy(driverListing({}, { stdout: job, exitCode: 0 }).driver, 'id')).toBe(true);
    // A listing past the output bound (a user can print as much as they like) is cut: unknown.
    const flood = `7 0 7 ${launcher}\n${'9 7 7 \n'.repeat(800_000)}`;
    expect(await sandboxIsBusy(driverListing({}, { stdout: flood, exitCode: 0 }).driver, 'id')).toBe(true);
    // A listing that failed (or was cut) is unknown.
    expect(await sandboxIsBusy(driverListing({}, { stdout: `7 0 7 ${launcher}\n`, exitCode: 2 }).driver, 'id')).toBe(true);
  });

  it('counts as busy what it cannot tell: no process list, a listing that throws', async () => {
    const without = driverListing({ commands: [] }, {}, false);
    expect(await sandboxIsBusy(without.driver, 'id')).toBe(true);
    expect(await sandboxIsBusy(driverListing(new Error('engine gone')).driver, 'id')).toBe(true);
    expect(without.ran).toEqual([]);
  });
});
