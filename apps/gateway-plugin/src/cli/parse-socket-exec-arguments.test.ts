import { describe, expect, it } from 'vitest';
import { isSocketExec, parseSocketExecArguments, SocketExecUsageError } from './parse-socket-exec-arguments.js';

describe('isSocketExec', () => {
  it.each([
    [['exec', '--socket', 's', '--', 'ls'], true],
    [['exec', '--socket=s', '--', 'ls'], true],
    [['exec', '--task', 't', '--', 'ls', '--socket', 's'], false],
    [['exec', '--socket', 's', '--help'], false],
    [['ls', '--socket', 's'], false],
    [['exec', '--', 'ls'], false],
  ])('%j -> %s', (argv, expected) => {
    expect(isSocketExec(argv)).toBe(expected);
  });
});

describe('parseSocketExecArguments', () => {
  it('builds a request: session key, task fallback, joined words', () => {
    expect(
      parseSocketExecArguments(['exec', '--socket', '/s', '--session-key', 'agent:main:telegram:group:9', '--task', 't1', '--', 'echo', 'a;', 'pwd']),
    ).toEqual({
      socket: '/s',
      forwardStdin: false,
      request: { v: 1, sessionKey: 'agent:main:telegram:group:9', taskId: 't1', command: 'echo a; pwd' },
    });
  });

  it('carries the host profile the sandbox belongs to', () => {
    expect(parseSocketExecArguments(['exec', '--socket', '/s', '--platform', 'telegram', '--user', '5', '--profile', 'work', '--', 'ls'])).toMatchObject({
      request: { platform: 'telegram', userId: '5', profile: 'work', command: 'ls' },
    });
  });

  it.each([
    [['exec', '--socket', '/s'], /no command given/],
    [['exec', '--socket', '/s', 'ls'], /put the command after "--"/],
    [['exec', '--socket', '/s', '--platform', 'telegram', '--', 'ls'], /--platform and --user go together/],
    [['exec', '--socket', '/s', '--session-key', 'k', '--platform', 'telegram', '--user', '1', '--', 'ls'], /either --session-key or --platform/],
    [['exec', '--socket', '/s', '--task', '..', '--', 'ls'], /task id "\.\." is not a plain name/],
    [['exec', '--socket', '/s', '--timeout', '-1', '--', 'ls'], /--timeout|ambiguous/],
    [['exec', '--socket', '/s', '--timeout', 'soon', '--', 'ls'], /--timeout "soon" is not a number/],
    [['exec', '--socket', '/s', '--config', 'c.yaml', '--', 'ls'], /--config is read by berth serve/],
    [['exec', '--socket', '/s', '--bogus', '--', 'ls'], /Unknown option '--bogus'/],
    [['exec', '--socket', '', '--', 'ls'], /--socket needs the path/],
    [['exec', '--socket', '/s', '--request-file', '/f', '--', 'ls'], /--request-file carries the whole request; drop the command/],
    [['exec', '--socket', '/s', '--request-file', '/f', '--session-key', 'k'], /--request-file carries the whole request; drop --session-key/],
  ])('refuses %j with one line', (argv, message) => {
    let caught: unknown;
    try {
      parseSocketExecArguments(argv);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SocketExecUsageError);
    expect((caught as Error).message).toMatch(message);
    expect((caught as Error).message).not.toMatch(/\n/);
  });
});
