import { describe, expect, it } from 'vitest';
import { parseSocketExecArguments } from '../cli/parse-socket-exec-arguments.js';
import { sandboxCommandArgv } from './sandbox-command-argv.js';

describe('sandboxCommandArgv', () => {
  it('gives node, the CLI, exec --socket, the session key, then the command as one word after --', () => {
    const argv = sandboxCommandArgv({ socket: '/run/berth/berth.sock', sessionKey: 'agent:main:telegram:direct:123', command: 'cd /tmp && ls -la', node: '/usr/bin/node', cli: '/opt/berth/cli.js' });
    expect(argv).toEqual(['/usr/bin/node', '/opt/berth/cli.js', 'exec', '--socket=/run/berth/berth.sock', '--session-key=agent:main:telegram:direct:123', '--', 'cd /tmp && ls -la']);
  });

  it('defaults to this Node and the cli.js beside the module', () => {
    const [node, cli] = sandboxCommandArgv({ socket: 's', sessionKey: 'k', command: 'true' });
    expect(node).toBe(process.execPath);
    expect(cli).toMatch(/[/\\]cli\.js$/);
  });

  it('round-trips through the client parser, values that start with "-" included', () => {
    const options = { socket: '/s.sock', platform: 'telegram', userId: '-5', taskId: 'task-1', cwd: '--weird dir', timeout: 2.5, command: '-n "$X"; echo --' };
    const argv = sandboxCommandArgv({ ...options, forwardStdin: true });
    const parsed = parseSocketExecArguments(argv.slice(2));
    expect(parsed).toEqual({
      socket: '/s.sock',
      forwardStdin: true,
      request: { v: 1, platform: 'telegram', userId: '-5', taskId: 'task-1', cwd: '--weird dir', timeout: 2.5, command: '-n "$X"; echo --' },
    });
  });

  it.each([
    [{ socket: '', sessionKey: 'k', command: 'x' }, /socket is required/],
    [{ socket: 's', sessionKey: 'k', command: '' }, /command is empty/],
    [{ socket: 's', platform: 'telegram', command: 'x' }, /platform and userId go together/],
    [{ socket: 's', sessionKey: 'k', platform: 'telegram', userId: '1', command: 'x' }, /either sessionKey or platform/],
    [{ socket: 's', command: 'x', timeout: 0 }, /timeout 0/],
  ])('refuses %o', (options, message) => {
    expect(() => sandboxCommandArgv(options)).toThrow(message);
  });
});
