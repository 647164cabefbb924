import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildKillRequest, KILLER_INIT } from './kill-shell-script.js';

// The kill shell's program on this host's real processes, under the shells a sandbox image may
// have as /bin/sh (busybox's ash, Debian's dash): a command that forks without pause, in a process
// group of its own as the session's is, is killed whole, and the kill writes nothing to stderr
// (what it writes that it never prints counts against it: killer-shell.ts).
const SHELLS = [['busybox', 'sh'], ['dash']].filter(([program]) => spawnSync('sh', ['-c', `command -v ${program}`]).status === 0);
const roots: string[] = [];
const groups: number[] = [];
afterEach(() => {
  for (const group of groups.splice(0)) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // gone
    }
  }
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** The live (not zombie) processes of process group `group`, from /proc. */
function liveInGroup(group: number): number[] {
  const live: number[] = [];
  for (const name of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      const fields = readFileSync(`/proc/${name}/stat`, 'utf8').split(') ').at(-1)!.split(' ');
      if (fields[0] !== 'Z' && Number(fields[3]) === group) live.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return live;
}

describe('the kill shell program', () => {
  it.skipIf(SHELLS.length === 0)(
    `kills a command that forks without pause, whole, and says nothing on stderr (${SHELLS.map((shell) => shell[0]).join(', ')})`,
    async () => {
      for (const shell of SHELLS) {
        const folder = mkdtempSync(path.join(tmpdir(), 'berth-kill-'));
        roots.push(folder);
        const before = readdirSync('/proc')
          .filter((entry) => /^\d+$/.test(entry))
          .map((entry) => `/proc/${entry}`)
          .join(' ');
        // A group of its own, as the session's shell has; its children fork and vanish all the time.
        const command = spawn(shell[0]!, [...shell.slice(1), '-c', 'while :; do sh -c "sleep 1777" & done'], { detached: true, stdio: 'ignore' });
        groups.push(command.pid!);
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(liveInGroup(command.pid!).length).toBeGreaterThan(1);
        writeFileSync(path.join(folder, 'pid'), `${command.pid} ${command.pid} ${before}\n`);
        const killed = spawnSync(shell[0]!, [...shell.slice(1), '-c', `${KILLER_INIT}\n${buildKillRequest(folder)}`], { encoding: 'utf8', timeout: 60_000 });
        expect(killed.status, shell[0]).toBe(0);
        expect(killed.stderr, `${shell[0]}: what the kill wrote on stderr`).toBe('');
        // What is killed dies as the kernel gets to it: a moment on a loaded machine.
        for (let wait = 0; wait < 50 && liveInGroup(command.pid!).length > 0; wait++) await new Promise((resolve) => setTimeout(resolve, 100));
        expect(liveInGroup(command.pid!), `${shell[0]}: left alive`).toEqual([]);
      }
    },
    // Two shells, each a fork loop the kill races on a loaded machine (the kill itself may take
    // the 60 s its spawnSync allows): the default 20 s failed once beside stress-ng --cpu 2.
    150_000,
  );
});
