import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, readFile, readlink, rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { ExecChannel } from '@berth/core/driver';
import { KillerShell } from './killer-shell.js';
import { ShellSession } from './shell-session.js';
import { hostProcessesWith } from '../testing/host-processes.js';

/**
 * The session protocol against the host's own /bin/sh (dash on Debian, the shell of most real
 * images), through a local process instead of an engine exec: the framing, persistence and
 * killing logic is the same; the engine only carries the bytes. Detached, so the shell leads its
 * own process group, as an engine's exec does.
 */
function localChannel(options: { keepsStdinOpen?: boolean } = {}): ExecChannel & { pid: number } {
  const child = spawn('/bin/sh', [], { stdio: ['pipe', 'pipe', 'pipe'], cwd: '/tmp', detached: true });
  const closeListeners: Array<() => void> = [];
  let closed = false;
  child.on('close', () => {
    closed = true;
    for (const listener of closeListeners.splice(0)) listener();
  });
  return {
    pid: child.pid!,
    write: (data) => void child.stdin.write(data),
    // keepsStdinOpen: an engine that keeps the exec's stdin open after the connection ends (Podman's
    // exec API under a flood of output): neither ending nor dropping the channel reaches the shell.
    end: () => (options.keepsStdinOpen ? undefined : child.stdin.end()),
    destroy: () => (options.keepsStdinOpen ? undefined : child.kill('SIGKILL')),
    onStdout: (listener) => void child.stdout.on('data', listener),
    onStderr: (listener) => void child.stderr.on('data', listener),
    onClose: (listener) => (closed ? listener() : void closeListeners.push(listener)),
    exitCode: async () => child.exitCode ?? undefined,
  };
}

const sessions: ShellSession[] = [];
afterEach(async () => {
  for (const session of sessions.splice(0)) {
    session.close();
    await rm(session.stateDir, { recursive: true, force: true });
  }
});

async function open(variables: Record<string, string> = {}): Promise<{
  session: ShellSession;
  shellPid: number;
  run: (
    command: string,
    extra?: {
      stdin?: string;
      timeoutMs?: number;
      cwd?: string;
      variables?: Record<string, string>;
      signal?: AbortSignal;
      onStdout?: (chunk: Uint8Array) => void;
    },
  ) => Promise<{ status: number; stdout: string; stderr: string; timedOut: boolean }>;
}> {
  const channel = localChannel();
  const session = await ShellSession.open({ channel, variables, cwd: '/tmp' });
  sessions.push(session);
  const killer = new KillerShell(localChannel());
  return {
    session,
    shellPid: channel.pid,
    run: async (command, extra = {}) => {
      const result = await session.run({
        command,
        ...(extra.cwd ? { cwd: extra.cwd } : {}),
        ...(extra.stdin !== undefined ? { stdin: Buffer.from(extra.stdin) } : {}),
        timeoutMs: extra.timeoutMs ?? 10_000,
        outputLimit: 10_000,
        variables: extra.variables ?? variables,
        kill: async () => killer.kill(session.stateDir),
        ...(extra.signal ? { signal: extra.signal } : {}),
        ...(extra.onStdout ? { onStdout: extra.onStdout } : {}),
      });
      return { status: result.status, stdout: result.stdout.text(), stderr: result.stderr.text(), timedOut: result.timedOut };
    },
  };
}

describe('ShellSession on the host shell', () => {
  it("ends its shell when closed, even where the engine keeps the shell's stdin open", async () => {
    const channel = localChannel({ keepsStdinOpen: true });
    const session = await ShellSession.open({ channel, variables: {}, cwd: '/tmp' });
    let ended = false;
    channel.onClose(() => (ended = true));
    session.close();
    for (let waited = 0; !ended && waited < 5000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    await rm(session.stateDir, { recursive: true, force: true });
    if (!ended) process.kill(channel.pid, 'SIGKILL');
    expect(ended).toBe(true);
  });

  it('frames exit codes and streams, and isolates stdin', async () => {
    const { run } = await open();
    expect(await run('echo a; echo b >&2; exit 4')).toMatchObject({ status: 4, stdout: 'a\n', stderr: 'b\n' });
    expect(await run('cat; echo done')).toMatchObject({ status: 0, stdout: 'done\n' });
    expect(await run('cat', { stdin: 'given' })).toMatchObject({ stdout: 'given' });
  });

  it('carries cd, export and unset between commands, and applies environment changes', async () => {
    const { run } = await open({ TOKEN: "it's secret" });
    expect((await run('printf %s "$TOKEN"')).stdout).toBe("it's secret");
    await run('cd / && export KEPT=1');
    expect((await run('pwd; echo $KEPT')).stdout).toBe('/\n1\n');
    await run('unset KEPT TOKEN');
    expect((await run('echo "${KEPT-none} ${TOKEN-none}"')).stdout).toBe('none none\n');
    expect((await run('echo "$TOKEN"', { variables: { TOKEN: 'rotated' } })).stdout).toBe('rotated\n');
  });

  it("runs nothing when its write of the command fails, never the previous command's file again, and says so", async () => {
    const { session, run } = await open();
    const ran = `/tmp/berth-ran-${randomBytes(6).toString('hex')}`;
    try {
      expect((await run(`echo first >> ${ran}`)).status).toBe(0);
      // The write fails as a full memory bound fails it (ENOMEM); here the name is a folder.
      await rm(`${session.stateDir}/cmd`);
      await mkdir(`${session.stateDir}/cmd`);
      const result = await session.run({
        command: `echo second >> ${ran}`,
        timeoutMs: 10_000,
        outputLimit: 10_000,
        variables: {},
        kill: async () => undefined,
      });
      expect(result).toMatchObject({ status: 125, notWritten: true });
      expect(result.stderr.text()).toMatch(/cmd/);
      expect(await readFile(ran, 'utf8')).toBe('first\n');
    } finally {
      await rm(ran, { force: true });
    }
  });

  it('kills a grandchild at the timeout and stays usable', async () => {
    const { run, session } = await open();
    const result = await run('sh -c "sleep 30" & wait', { timeoutMs: 300 });
    expect(result).toMatchObject({ timedOut: true });
    expect(session.alive).toBe(true);
    expect((await run('echo again')).stdout).toBe('again\n');
  });

  it('gives the output as it comes and, once aborted, kills the command (status 130) and stays usable', async () => {
    const { run, session } = await open();
    const stop = new AbortController();
    const marker = `berth-aborted-${randomBytes(4).toString('hex')}`;
    const seen: string[] = [];
    const result = await run(`echo begun; sh -c 'sleep 600; : ${marker}'; echo not-reached`, {
      signal: stop.signal,
      // Aborted once the command's first line has come: the command surely runs.
      onStdout: (chunk) => {
        seen.push(Buffer.from(chunk).toString());
        stop.abort();
      },
    });
    expect(seen.join('')).toBe('begun\n');
    expect(result).toMatchObject({ status: 130, timedOut: false, stdout: 'begun\n' });
    await expect.poll(() => hostProcessesWith(marker), { timeout: 20_000 }).toEqual([]);
    expect(session.alive).toBe(true);
    expect((await run('echo again')).stdout).toBe('again\n');
  });

  it('kills at the timeout what the command left to init, and nothing older', async () => {
    const { run } = await open();
    const older = `berth-older-${randomBytes(4).toString('hex')}`;
    const orphan = `berth-orphan-${randomBytes(4).toString('hex')}`;
    // A job an earlier command left running, its output elsewhere (a dev server, say).
    // Jobs that outlive the test's slowest run (the poll below may take 20 s on a loaded machine),
    // so that only a kill ends them.
    expect((await run(`(sh -c 'sleep 600; : ${older}' > /dev/null 2>&1 &); echo started`)).stdout).toBe('started\n');
    // Its `sleep` is there before the next command looks at what is alive (on a loaded machine it
    // came after, counted as the next command's, and its kill ended the older job: seen once).
    const hasChild = (pid: number): boolean =>
      readdirSync('/proc').some((entry) => {
        try {
          return /^\d+$/.test(entry) && readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ')[1] === String(pid);
        } catch {
          return false;
        }
      });
    await expect.poll(() => hostProcessesWith(older).some(hasChild), { timeout: 20_000 }).toBe(true);
    // This command's own job, left to init at once (its parent is gone), so no longer its descendant.
    // A timeout long enough that the command has surely started on a loaded machine (its output
    // says so): a kill that came before the command would prove nothing.
    const result = await run(`(sh -c 'sleep 600; : ${orphan}' > /dev/null 2>&1 &); echo begun; sleep 600`, { timeoutMs: 2_000 });
    expect(result).toMatchObject({ timedOut: true, stdout: 'begun\n' });
    await expect.poll(() => hostProcessesWith(orphan), { timeout: 20_000 }).toEqual([]);
    expect(hostProcessesWith(older)).toHaveLength(1);
    // Continued, not left stopped: the older job still runs (its state letter is not T).
    const [pid] = hostProcessesWith(older);
    expect((await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]![0]).not.toBe('T');
    process.kill(Number(pid), 'SIGKILL');
    expect((await run('echo again')).stdout).toBe('again\n');
  });

  it("gives a command reading $$ or $PPID a shell of its own: $$ is the command's shell, kill $$ ends only the command", async () => {
    const { run, shellPid } = await open();
    const ids = (await run('echo "$$ $PPID"')).stdout.trim().split(' ').map(Number);
    expect(ids[1]).toBe(shellPid);
    expect(ids[0]).not.toBe(shellPid);
    await run('cd / && export KEPT=1');
    expect(await run('kill $$; echo not-reached')).toMatchObject({ status: 143, stdout: '' });
    expect((await run('pwd; echo $KEPT')).stdout).toBe('/\n1\n');
  });

  it("runs a plain program as the child itself, with its own status and streams, and keeps the session's cd and export", async () => {
    const { run } = await open();
    await run('cd / && export KEPT=1');
    expect(await run('/bin/echo plain')).toMatchObject({ status: 0, stdout: 'plain\n', stderr: '' });
    const missing = await run('ls /no-such-folder-here');
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain('/no-such-folder-here');
    expect(await run('no-such-program-here')).toMatchObject({ status: 127 });
    expect(await run('cat', { stdin: 'given' })).toMatchObject({ status: 0, stdout: 'given' });
    expect(await run('env')).toMatchObject({ stdout: expect.stringContaining('KEPT=1') });
    expect(await run('pwd; echo $KEPT')).toMatchObject({ stdout: '/\n1\n', stderr: '' });
    expect(await run('sleep 30', { timeoutMs: 300 })).toMatchObject({ timedOut: true });
    expect((await run('echo again')).stdout).toBe('again\n');
  });

  it("leaves a command none of the session's descriptors but its stdout and stderr", async () => {
    const { run, session, shellPid } = await open();
    const sessionInput = await readlink(`/proc/${shellPid}/fd/0`);
    // The descriptors of the command's own shell (the one running \`read\`, a builtin), listed by ls.
    const descriptors = async (stdin?: string) => {
      const listing = (await run('read -r l < /proc/self/stat; ls -l "/proc/${l%% *}/fd"', stdin === undefined ? {} : { stdin })).stdout;
      return new Map([...listing.matchAll(/ (\d+) -> (.*)$/gm)].map(([, fd, target]) => [Number(fd), target!]));
    };
    for (const [stdin, input] of [
      [undefined, '/dev/null'],
      ['x', `${session.stateDir}/in`],
    ] as const) {
      const given = await descriptors(stdin);
      expect(given.get(0)).toBe(input);
      // Not the gateway's channel (the next command's script), not the spares' FIFOs or the state
      // folder's files but the command file the shell is reading.
      for (const [fd, target] of given) {
        expect(target, `descriptor ${fd}`).not.toBe(sessionInput);
        if (fd > 0 && target !== `${session.stateDir}/cmd`) expect(target, `descriptor ${fd}`).not.toContain(session.stateDir);
      }
    }
  });
});
