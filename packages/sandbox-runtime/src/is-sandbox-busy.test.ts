import { describe, expect, it } from 'vitest';
import { isIdleProcess, isSandboxBusy } from './is-sandbox-busy.js';
import { KEEP_ALIVE_COMMAND } from './sandbox-spec.js';

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
