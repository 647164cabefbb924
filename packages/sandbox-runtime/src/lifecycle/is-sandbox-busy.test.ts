import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { insideProcessListing, isIdleProcess, isSandboxBusy } from './is-sandbox-busy.js';
import { KEEP_ALIVE_COMMAND } from '../sandbox-spec.js';

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
      expect(read.commands.some((command) => command.includes('/proc/[0-9]*'))).toBe(false);
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
