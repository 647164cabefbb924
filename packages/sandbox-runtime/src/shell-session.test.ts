import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { ExecChannel } from '@berth/core';
import { KillerShell } from './killer-shell.js';
import { ShellSession } from './shell-session.js';

/**
 * The session protocol against the host's own /bin/sh (dash on Debian, the shell of most real
 * images), through a local process instead of an engine exec: the framing, persistence and
 * killing logic is the same; the engine only carries the bytes.
 */
function localChannel(): ExecChannel {
  const child = spawn('/bin/sh', [], { stdio: ['pipe', 'pipe', 'pipe'], cwd: '/tmp' });
  const closeListeners: Array<() => void> = [];
  let closed = false;
  child.on('close', () => {
    closed = true;
    for (const listener of closeListeners.splice(0)) listener();
  });
  return {
    write: (data) => void child.stdin.write(data),
    end: () => child.stdin.end(),
    destroy: () => child.kill('SIGKILL'),
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

async function open(variables: Record<string, string> = {}): Promise<{ session: ShellSession; run: (command: string, extra?: { stdin?: string; timeoutMs?: number; cwd?: string; variables?: Record<string, string> }) => Promise<{ status: number; stdout: string; stderr: string; timedOut: boolean }> }> {
  const session = await ShellSession.open({ channel: localChannel(), variables, cwd: '/tmp' });
  sessions.push(session);
  const killer = new KillerShell(localChannel());
  return {
    session,
    run: async (command, extra = {}) => {
      const result = await session.run({
        command,
        ...(extra.cwd ? { cwd: extra.cwd } : {}),
        ...(extra.stdin !== undefined ? { stdin: Buffer.from(extra.stdin) } : {}),
        timeoutMs: extra.timeoutMs ?? 10_000,
        outputLimit: 10_000,
        variables: extra.variables ?? variables,
        kill: async () => killer.kill(session.stateDir),
      });
      return { status: result.status, stdout: result.stdout.text(), stderr: result.stderr.text(), timedOut: result.timedOut };
    },
  };
}

describe('ShellSession on the host shell', () => {
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

  it('kills a grandchild at the timeout and stays usable', async () => {
    const { run, session } = await open();
    const result = await run('sh -c "sleep 30" & wait', { timeoutMs: 300 });
    expect(result).toMatchObject({ timedOut: true });
    expect(session.alive).toBe(true);
    expect((await run('echo again')).stdout).toBe('again\n');
  });
});
