import { createPlatformRegistry } from '@berth/core';
import { describe, expect, it } from 'vitest';
import { cliTarget } from './cli-target.js';
import { type CliOptions, COMMANDS, parseCliArguments, UsageError } from './parse-cli-arguments.js';

function usageError(argv: string[]): string {
  try {
    parseCliArguments(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).not.toContain('\n');
    return (error as Error).message;
  }
  throw new Error(`expected a usage error for ${argv.join(' ')}`);
}

describe('parseCliArguments', () => {
  it('takes everything after -- as the command, options included', () => {
    const parsed = parseCliArguments(['exec', '--platform', 'telegram', '--user', '123', '--timeout', '2.5', '--cwd', '/tmp', '--', 'ls', '-la', '--', 'x']);
    expect(parsed).toEqual({
      kind: 'command',
      command: 'exec',
      options: { platform: 'telegram', user: '123', timeout: 2.5, cwd: '/tmp', json: false, purge: false },
      commandWords: ['ls', '-la', '--', 'x'],
    });
  });

  it('reads --config and the task on every command that has a target', () => {
    expect(parseCliArguments(['rm', '--task', 'build-1', '--purge', '--config', 'c.yaml'])).toMatchObject({
      command: 'rm',
      options: { task: 'build-1', purge: true, config: 'c.yaml' },
    });
    expect(parseCliArguments(['ls', '--json'])).toMatchObject({ command: 'ls', options: { json: true } });
  });

  it('has --help on every command and on its own', () => {
    for (const command of COMMANDS) expect(parseCliArguments([command, '--help'])).toEqual({ kind: 'help', command });
    expect(parseCliArguments(['exec', '-h', '--', 'x'])).toEqual({ kind: 'help', command: 'exec' });
    expect(parseCliArguments([])).toEqual({ kind: 'help' });
    expect(parseCliArguments(['help', 'rm'])).toEqual({ kind: 'help', command: 'rm' });
  });

  it('refuses unknown commands and options, naming them', () => {
    expect(usageError(['launch'])).toMatch(/unknown command "launch"/);
    expect(usageError(['ls', '--purge'])).toMatch(/berth ls: Unknown option '--purge'/);
    expect(usageError(['env', '--platform'])).toMatch(/--platform/);
    expect(usageError(['doctor', 'extra'])).toMatch(/unexpected argument "extra"/);
  });

  it('wants the command after --, and a command at all', () => {
    expect(usageError(['exec', 'ls'])).toMatch(/after "--"/);
    expect(usageError(['exec', '--task', 'x'])).toMatch(/no command given/);
    expect(usageError(['exec', '--'])).toMatch(/no command given/);
  });

  it('wants --platform and --user together, and not with --task', () => {
    expect(usageError(['exec', '--platform', 'telegram', '--', 'id'])).toMatch(/go together/);
    expect(usageError(['rm', '--user', '1'])).toMatch(/go together/);
    expect(usageError(['exec', '--platform', 'telegram', '--user', '1', '--task', 't', '--', 'id'])).toMatch(/either/);
    expect(usageError(['env'])).toMatch(/required/);
    expect(usageError(['rm'])).toMatch(/--platform P --user ID, --session-key KEY or --task T/);
  });

  it.each([
    ['..', '..'],
    ['a/b', 'a/b'],
    ['empty', ''],
    ['/etc', '/etc'],
    ['10 KB', 'x'.repeat(10_240)],
    ['.hidden', '.hidden'],
    ['NUL', 'a\u0000b'],
  ])('refuses the task id %s', (_label, task) => {
    const message = usageError(['exec', '--task', task, '--', 'id']);
    expect(message).toMatch(/is not a plain name/);
    expect(message.length).toBeLessThan(300);
  });

  it.each([['0'], ['-1'], ['abc'], ['1e3'], ['86401'], ['']])('refuses the timeout %j', (timeout) => {
    expect(usageError(['exec', '--timeout', timeout, '--', 'id'])).toBe(
      `berth exec: --timeout ${JSON.stringify(timeout)} is not a number of seconds above 0 and at most 86400, e.g. --timeout 60`,
    );
  });

  it('reads serve --socket and exec --session-key, and refuses what names no single sandbox', () => {
    expect(parseCliArguments(['serve', '--socket', '/run/b.sock', '--config', 'c.yaml'])).toMatchObject({
      command: 'serve',
      options: { socket: '/run/b.sock', config: 'c.yaml' },
    });
    expect(parseCliArguments(['exec', '--session-key', 'agent:main:telegram:group:1', '--task', 't', '--', 'ls'])).toMatchObject({
      options: { sessionKey: 'agent:main:telegram:group:1', task: 't' },
    });
    expect(parseCliArguments(['serve', '--socket', 's', '--metrics', ':9464'])).toMatchObject({ options: { metrics: { host: '127.0.0.1', port: 9464 } } });
    expect(usageError(['serve', '--socket', 's', '--metrics', '9464'])).toBe(
      'berth serve: --metrics "9464" is not a listen address; give HOST:PORT, [IPv6]:PORT or :PORT (loopback), like 127.0.0.1:9464 or :9464',
    );
    expect(usageError(['exec', '--metrics', ':9464', '--', 'ls'])).toMatch(/Unknown option '--metrics'/);
    expect(usageError(['serve'])).toMatch(/berth serve: --socket PATH is required/);
    expect(usageError(['serve', '--socket', 's', '--json'])).toMatch(/Unknown option '--json'/);
    expect(usageError(['exec', '--stdin', '--', 'cat'])).toMatch(/--stdin works with --socket only/);
    expect(usageError(['exec', '--session-key', 'k', '--platform', 'telegram', '--user', '1', '--', 'ls'])).toMatch(/either --session-key or --platform/);
    expect(usageError(['exec', '--session-key', '', '--', 'ls'])).toMatch(/--session-key is empty/);
  });

  it('reads --profile for the commands that name a sandbox, and puts it in the session they name', () => {
    const registry = createPlatformRegistry();
    for (const words of [
      ['exec', '--profile', 'work', '--platform', 'telegram', '--user', '5', '--', 'ls'],
      ['rm', '--profile', 'work', '--platform', 'telegram', '--user', '5'],
      ['env', '--profile', 'work', '--platform', 'telegram', '--user', '5'],
    ]) {
      const { options } = parseCliArguments(words) as { options: CliOptions };
      expect(cliTarget(options, registry)).toEqual({ session: { platform: 'telegram', userId: '5', profile: 'work' }, taskId: 'default' });
    }
    const { options } = parseCliArguments(['rm', '--profile', 'work', '--task', 't']) as { options: CliOptions };
    expect(cliTarget(options, registry)).toEqual({ session: { profile: 'work' }, taskId: 't' });
    expect(usageError(['ls', '--profile', 'work'])).toMatch(/Unknown option '--profile'/);
  });

  it('takes a value that starts with a dash as the value it is, checked as any other', () => {
    const parsed = parseCliArguments(['exec', '--platform', 'telegram', '--user', '-100', '--', 'id']);
    expect(parsed).toMatchObject({ kind: 'command', options: { platform: 'telegram', user: '-100' } });
    expect(usageError(['exec', '--timeout', '-1', '--', 'id'])).not.toMatch(/ambiguous/);
  });
});
