import { describe, expect, it } from 'vitest';
import { parseSocketExecArguments } from '../cli/parse-socket-exec-arguments.js';
import { parseSandboxSocketRequest } from './parse-sandbox-socket-request.js';
import { findPerl, PERL_SOCKET_CLIENT, sandboxCommandArgv } from './sandbox-command-argv.js';

describe('sandboxCommandArgv', () => {
  it('with the Node client: node, the CLI, exec --socket, the session key, then the command as one word after --', () => {
    const argv = sandboxCommandArgv({ client: 'node', socket: '/run/berth/berth.sock', sessionKey: 'agent:main:telegram:direct:123', command: 'cd /tmp && ls -la', node: '/usr/bin/node', cli: '/opt/berth/cli.js' });
    expect(argv).toEqual(['/usr/bin/node', '/opt/berth/cli.js', 'exec', '--socket=/run/berth/berth.sock', '--session-key=agent:main:telegram:direct:123', '--', 'cd /tmp && ls -la']);
  });

  it('defaults the Node client to this Node and the cli.js beside the module', () => {
    const [node, cli] = sandboxCommandArgv({ client: 'node', socket: 's', sessionKey: 'k', command: 'true' });
    expect(node).toBe(process.execPath);
    expect(cli).toMatch(/[/\\]cli\.js$/);
  });

  it('round-trips through the Node client parser, values that start with "-" included', () => {
    const options = { socket: '/s.sock', platform: 'telegram', userId: '-5', taskId: 'task-1', cwd: '--weird dir', timeout: 2.5, command: '-n "$X"; echo --' };
    const argv = sandboxCommandArgv({ ...options, forwardStdin: true, client: 'node' });
    const parsed = parseSocketExecArguments(argv.slice(2));
    expect(parsed).toEqual({
      socket: '/s.sock',
      forwardStdin: true,
      request: { v: 1, platform: 'telegram', userId: '-5', taskId: 'task-1', cwd: '--weird dir', timeout: 2.5, command: '-n "$X"; echo --' },
    });
  });

  it('gives the Perl client the request the Node client would send, asking for a framed reply', () => {
    const options = { socket: 'relative/s.sock', platform: 'telegram', userId: '-5', taskId: 'task-1', cwd: '--weird dir', timeout: 2.5, command: '-n "$X"; echo -- }\n\u2028' };
    const argv = sandboxCommandArgv({ ...options, forwardStdin: true, client: 'perl', perl: '/usr/bin/perl' });
    expect(argv.slice(0, 2)).toEqual(['/usr/bin/perl', PERL_SOCKET_CLIENT]);
    expect(argv.slice(2, -1)).toEqual([`--socket=${process.cwd()}/relative/s.sock`, '--timeout=2.5', '--stdin']);
    const request = parseSandboxSocketRequest(argv.at(-1)!.replace(/^--request=/, ''));
    const node = parseSocketExecArguments(sandboxCommandArgv({ ...options, client: 'node' }).slice(2)).request;
    expect(request).toEqual({ ...node, reply: 'framed' });
  });

  it('picks Perl by itself when a perl with Socket is on the PATH, and Node otherwise', () => {
    const argv = sandboxCommandArgv({ socket: '/s', sessionKey: 'k', command: 'true' });
    // Both answers are right, depending on the machine; which one must follow from findPerl().
    if (findPerl()) expect(argv.slice(0, 2)).toEqual([findPerl(), PERL_SOCKET_CLIENT]);
    else expect(argv[0]).toBe(process.execPath);
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
