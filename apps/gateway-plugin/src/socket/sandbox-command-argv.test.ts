import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseSocketExecArguments } from '../cli/parse-socket-exec-arguments.js';
import { parseSandboxSocketRequest } from './parse-sandbox-socket-request.js';
import { takeRequestFile } from './request-file.js';
import { findPerl, PERL_SOCKET_CLIENT, requestFileOf, sandboxCommandArgv } from './sandbox-command-argv.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** A socket path in a fresh folder of this user's: the argv's request file goes beside it. */
function socketPath(): string {
  const folder = mkdtempSync(path.join(tmpdir(), 'berth-argv-'));
  folders.push(folder);
  return path.join(folder, 's.sock');
}

const fileOf = (argv: string[]): string => requestFileOf(argv)!;

describe('sandboxCommandArgv', () => {
  it('with the Node client: node, the CLI, exec --socket and a private request file; no session key or command in the argv', () => {
    const socket = socketPath();
    const argv = sandboxCommandArgv({
      client: 'node',
      socket,
      sessionKey: 'agent:main:telegram:direct:123',
      command: 'cd /tmp && ls -la',
      node: '/usr/bin/node',
      cli: '/opt/berth/cli.js',
    });
    expect(argv.slice(0, 4)).toEqual(['/usr/bin/node', '/opt/berth/cli.js', 'exec', `--socket=${socket}`]);
    expect(argv).toHaveLength(5);
    // The request file's random name may hold any digits: the argv holds neither the key nor the command.
    expect(argv.join(' ')).not.toMatch(/telegram|direct:123|ls -la/);
    const file = fileOf(argv);
    expect(path.dirname(file)).toBe(path.join(path.dirname(socket), '.berth-requests'));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ v: 1, sessionKey: 'agent:main:telegram:direct:123', command: 'cd /tmp && ls -la' });
  });

  it('defaults the Node client to this Node and the cli.js beside the module', () => {
    const [node, cli] = sandboxCommandArgv({ client: 'node', socket: socketPath(), sessionKey: 'k', command: 'true' });
    expect(node).toBe(process.execPath);
    expect(cli).toMatch(/[/\\]cli\.js$/);
  });

  it('round-trips through the Node client: the parser names the file, the client reads it once and deletes it', () => {
    const socket = socketPath();
    const options = { socket, platform: 'telegram', userId: '-5', taskId: 'task-1', cwd: '--weird dir', timeout: 2.5, command: '-n "$X"; echo --' };
    const argv = sandboxCommandArgv({ ...options, forwardStdin: true, client: 'node' });
    const parsed = parseSocketExecArguments(argv.slice(2));
    expect(parsed).toEqual({ socket, forwardStdin: true, requestFile: fileOf(argv) });
    expect(JSON.parse(takeRequestFile(fileOf(argv)))).toEqual({
      v: 1,
      platform: 'telegram',
      userId: '-5',
      taskId: 'task-1',
      cwd: '--weird dir',
      timeout: 2.5,
      command: '-n "$X"; echo --',
    });
    expect(existsSync(fileOf(argv))).toBe(false);
    expect(() => takeRequestFile(fileOf(argv))).toThrow(/is gone \(a request is read once\)/);
  });

  it('gives the Perl client the request the Node client would send, asking for a framed reply', () => {
    const socket = socketPath();
    const options = { socket, platform: 'telegram', userId: '-5', taskId: 'task-1', cwd: '--weird dir', timeout: 2.5, command: '-n "$X"; echo -- }\n\u2028' };
    const argv = sandboxCommandArgv({ ...options, forwardStdin: true, client: 'perl', perl: '/usr/bin/perl' });
    expect(argv.slice(0, 2)).toEqual(['/usr/bin/perl', PERL_SOCKET_CLIENT]);
    expect(argv.slice(2, -1)).toEqual([`--socket=${socket}`, '--timeout=2.5', '--stdin']);
    const request = parseSandboxSocketRequest(takeRequestFile(fileOf(argv)));
    const node = JSON.parse(takeRequestFile(fileOf(sandboxCommandArgv({ ...options, client: 'node' }))));
    expect(request).toEqual({ ...node, reply: 'framed' });
  });

  it('refuses a request folder another user could read or write', () => {
    const socket = socketPath();
    mkdirSync(path.join(path.dirname(socket), '.berth-requests'), { mode: 0o755 });
    chmodSync(path.join(path.dirname(socket), '.berth-requests'), 0o755);
    expect(() => sandboxCommandArgv({ client: 'node', socket, sessionKey: 'k', command: 'true' })).toThrow(/is not private to this user/);
  });

  it('the client refuses a request file that is not private', () => {
    const socket = socketPath();
    const file = fileOf(sandboxCommandArgv({ client: 'node', socket, sessionKey: 'k', command: 'true' }));
    chmodSync(file, 0o644);
    expect(() => takeRequestFile(file)).toThrow(/not a private file of this user's/);
  });

  it('picks Perl by itself when a perl with Socket is on the PATH, and Node otherwise', async () => {
    const argv = sandboxCommandArgv({ socket: socketPath(), sessionKey: 'k', command: 'true' });
    // On this machine, which one must follow from findPerl().
    if (findPerl()) expect(argv.slice(0, 2)).toEqual([findPerl(), PERL_SOCKET_CLIENT]);
    else expect(argv[0]).toBe(process.execPath);
    // Both, whatever this machine has: a fresh module (findPerl asks once a process) under a PATH
    // holding a perl with Socket, then under one holding none.
    const withPerl = mkdtempSync(path.join(tmpdir(), 'berth-argv-perl-'));
    const withoutPerl = mkdtempSync(path.join(tmpdir(), 'berth-argv-noperl-'));
    folders.push(withPerl, withoutPerl);
    writeFileSync(path.join(withPerl, 'perl'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    for (const [folder, expected] of [
      [withPerl, [path.join(withPerl, 'perl'), PERL_SOCKET_CLIENT]],
      [withoutPerl, [process.execPath]],
    ] as const) {
      vi.resetModules();
      vi.stubEnv('PATH', folder);
      try {
        const fresh = await import('./sandbox-command-argv.js');
        expect(fresh.sandboxCommandArgv({ socket: socketPath(), sessionKey: 'k', command: 'true' }).slice(0, expected.length), folder).toEqual(expected);
      } finally {
        vi.unstubAllEnvs();
      }
    }
  });

  it.each([
    [{ socket: '', sessionKey: 'k', command: 'x' }, /socket is required/],
    [{ socket: 's', sessionKey: 'k', command: '' }, /command is empty/],
    [{ socket: 's', platform: 'telegram', command: 'x' }, /platform and userId go together/],
    [{ socket: 's', sessionKey: 'k', platform: 'telegram', userId: '1', command: 'x' }, /either sessionKey or platform/],
    [{ socket: 's', command: 'x', timeout: 0 }, /timeout 0/],
    [{ socket: 's', command: 'x', timeout: 1e-7 }, /timeout 1e-7 is not a number of seconds/],
    [{ socket: 's', command: 'x', taskId: '../up' }, /taskId "\.\.\/up" is not a plain name/],
  ])('refuses %o, whichever client', (options, message) => {
    expect(() => sandboxCommandArgv({ ...options, client: 'node' })).toThrow(message);
    expect(() => sandboxCommandArgv({ ...options, client: 'perl', perl: '/usr/bin/perl' })).toThrow(message);
  });
});
