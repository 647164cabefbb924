import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BerthError, ConfigError, runWithSession, SessionAttributionError, UnsupportedSpecificationError, type BerthHostV1 } from '@berth/core';
import { createBerthPlugin } from './berth-plugin.js';
import { createInProcessTerminalRegistry } from './create-in-process-terminal-registry.js';
import { createRecordingBackend } from './recording-backend.test-helper.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});
function tempDir(): string {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'berth-plugin-unit-'));
  folders.push(folder);
  return folder;
}

async function setUp(
  options: {
    config?: Record<string, unknown>;
    environment?: Record<string, string>;
    reservedNames?: string[];
    sessionSource?: BerthHostV1['sessionSource'];
    logger?: BerthHostV1['logger'];
  } = {},
) {
  const backend = createRecordingBackend();
  const terminal = createInProcessTerminalRegistry(options.reservedNames ? { reservedNames: options.reservedNames } : {});
  const plugin = createBerthPlugin({ backend });
  const host: BerthHostV1 = {
    specificationVersion: 'v1',
    terminal,
    config: { sandbox_dir: tempDir(), ...options.config },
    environment: options.environment ?? {},
    ...(options.sessionSource ? { sessionSource: options.sessionSource } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
  };
  await plugin.register(host);
  return { backend, terminal, plugin };
}

describe('the plugin', () => {
  it('registers berth-docker with the host, berth-podman for backend podman and berth-kubernetes for backend kubernetes', async () => {
    expect((await setUp()).terminal.names()).toEqual(['berth-docker']);
    expect((await setUp({ config: { backend: 'podman' } })).terminal.names()).toEqual(['berth-podman']);
    expect((await setUp({ config: { backend: 'kubernetes' } })).terminal.names()).toEqual(['berth-kubernetes']);
  });

  it('refuses a provider name the host reserves, in one line', async () => {
    const error = await setUp({ reservedNames: ['docker', 'berth-docker'] }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BerthError);
    expect((error as Error).message).toMatch(/reserves the terminal environment name berth-docker/);
  });

  it('refuses hosts of an unknown contract version', async () => {
    const plugin = createBerthPlugin({ backend: createRecordingBackend() });
    const host = { specificationVersion: 'v2', terminal: createInProcessTerminalRegistry() } as unknown as BerthHostV1;
    await expect(plugin.register(host)).rejects.toBeInstanceOf(UnsupportedSpecificationError);
  });

  it("accepts Hermes' own terminal keys and names the ignored ones in one warning", async () => {
    const warnings: string[] = [];
    const plugin = createBerthPlugin({ backend: createRecordingBackend() });
    const terminal = createInProcessTerminalRegistry();
    const config = { sandbox_dir: tempDir(), docker_orphan_reaper: true, home_mode: 'auto', env_passthrough: ['TEAM'] };
    await plugin.register({
      specificationVersion: 'v1',
      terminal,
      config,
      environment: {},
      logger: { info: () => {}, warn: (line) => warnings.push(line), error: () => {} },
    });
    expect(warnings).toEqual([
      'berth: ignoring terminal.docker_orphan_reaper, terminal.home_mode: Hermes settings with no meaning for a Berth sandbox (see docs/configuration.md)',
    ]);
    await plugin.close();
  });

  it('validates the config section the host passes, naming the key', async () => {
    await expect(setUp({ config: { docker_image: 'x', container_memroy: 1 } })).rejects.toThrow(/terminal\.container_memroy/);
    await expect(setUp({ config: { timeout: 'soon' } })).rejects.toBeInstanceOf(ConfigError);
  });

  it('runs each message in the sandbox of the session active at that moment, concurrently', async () => {
    const { backend, terminal } = await setUp();
    const environment = await terminal.get('berth-docker').createEnvironment({ taskId: 't1' });
    const events: string[] = [];
    backend.respond = async (request, exec) => {
      events.push(`start ${exec.command}`);
      // The first message waits, so the second one runs while it is in flight.
      if (exec.command === 'first') await new Promise((resolve) => setTimeout(resolve, 20));
      events.push(`end ${exec.command}`);
      return { stdout: request.scope.key };
    };
    const [first, second] = await Promise.all([
      runWithSession({ platform: 'telegram', userId: 111, chatId: 111, taskId: 't1' }, () => environment.execute('first')),
      runWithSession({ platform: 'whatsapp', userId: '+15550001111', taskId: 't1' }, () => environment.execute('second')),
    ]);
    expect(first.output).toBe('user:telegram:111');
    expect(second.output).toMatch(/^user:whatsapp:/);
    expect(second.output).not.toBe(first.output);
    // Concurrently: the second message started while the first was in flight.
    expect(events).toHaveLength(4);
    expect(events.indexOf('start second'), events.join(', ')).toBeLessThan(events.indexOf('end first'));
  });

  it('falls back to the legacy task layout when no user is in the context', async () => {
    const { backend, terminal } = await setUp();
    const environment = await terminal.get('berth-docker').createEnvironment({ taskId: 'task-7' });
    await environment.execute('pwd');
    expect(backend.execs[0]!.request.scope.key).toBe('task:task-7');
    expect(backend.execs[0]!.request.paths.workspace).toMatch(/\/docker\/task-7\/workspace$/);
  });

  it('uses the task layout for users too when docker_user_sandbox is false', async () => {
    const { backend, terminal } = await setUp({ config: { docker_user_sandbox: false } });
    const environment = await terminal.get('berth-docker').createEnvironment({ taskId: 'legacy' });
    await runWithSession({ platform: 'telegram', userId: 5 }, () => environment.execute('pwd'));
    expect(backend.execs[0]!.request.scope.key).toBe('task:legacy');
  });

  it('reads the Python gateway HERMES_SESSION_* variables only for a host that runs one command per process', async () => {
    const { backend, terminal } = await setUp({
      environment: { HERMES_SESSION_PLATFORM: 'telegram', HERMES_SESSION_USER_ID: '4242' },
      sessionSource: 'environment',
    });
    const environment = await terminal.get('berth-docker').createEnvironment({});
    await environment.execute('id');
    expect(backend.execs[0]!.request.scope.key).toBe('user:telegram:4242');
  });

  it('refuses HERMES_SESSION_* process variables in a host that runs messages concurrently (they race), naming the fix', async () => {
    const { backend, terminal } = await setUp({ environment: { HERMES_SESSION_PLATFORM: 'telegram', HERMES_SESSION_USER_ID: '4242' } });
    const environment = await terminal.get('berth-docker').createEnvironment({});
    const error = await environment.execute('id').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SessionAttributionError);
    expect((error as Error).message).toMatch(/HERMES_SESSION_PLATFORM, HERMES_SESSION_USER_ID .*runWithSession.*sessionSource: 'environment'/);
    expect(backend.execs).toHaveLength(0);
    // A session set with runWithSession is still honoured, whatever the process environment holds.
    await runWithSession({ platform: 'telegram', userId: 7 }, () => environment.execute('id'));
    expect(backend.execs[0]!.request.scope.key).toBe('user:telegram:7');
  });

  it('says once in the log that commands outside runWithSession run in the task sandbox', async () => {
    const warnings: string[] = [];
    const { terminal } = await setUp({ logger: { info: () => undefined, warn: (line) => warnings.push(line), error: () => undefined } });
    const environment = await terminal.get('berth-docker').createEnvironment({ taskId: 't' });
    await environment.execute('true');
    await environment.execute('true');
    expect(warnings.filter((line) => line.includes('outside runWithSession'))).toHaveLength(1);
  });

  it('refuses a host sessionSource it does not know', async () => {
    await expect(setUp({ sessionSource: 'globals' as never })).rejects.toThrow(/host\.sessionSource is "globals"/);
  });

  it('reads the user out of host session keys, and gives a group its own sandbox', async () => {
    const { backend, terminal } = await setUp();
    const environment = await terminal.get('berth-docker').createEnvironment({});
    await runWithSession({ sessionKey: 'agent:main:telegram:direct:987654' }, () => environment.execute('id'));
    await runWithSession({ sessionKey: 'agent:main:telegram:default:direct:123' }, () => environment.execute('id'));
    await runWithSession({ sessionKey: 'agent:main:telegram:default:direct:456' }, () => environment.execute('id'));
    await runWithSession({ sessionKey: 'agent:main:telegram:group:-100' }, () => environment.execute('id'));
    expect(backend.execs.map((call) => call.request.scope.key)).toEqual([
      'user:telegram:987654',
      'user:telegram:123',
      'user:telegram:456',
      'task:agent:main:telegram:group:-100',
    ]);
  });

  it.each(['agent:main:direct:789', 'agent:main:main', 'agent:main:telegram:DIRECT:123', 'agent:main:telegram:direct:'])(
    'refuses the session key %s in one line and runs nothing',
    async (sessionKey) => {
      const { backend, terminal } = await setUp();
      const environment = await terminal.get('berth-docker').createEnvironment({});
      const error = await runWithSession({ sessionKey }, () => environment.execute('id')).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(SessionAttributionError);
      expect((error as Error).message).toMatch(/session\.dmScope: per-channel-peer/);
      expect((error as Error).message).not.toMatch(/[\r\n]/);
      expect(backend.execs).toHaveLength(0);
    },
  );

  it('logs each refusal for the operator, without the ids of the key', async () => {
    const warnings: string[] = [];
    const { terminal } = await setUp({ logger: { info: () => undefined, warn: (line) => warnings.push(line), error: () => undefined } });
    const environment = await terminal.get('berth-docker').createEnvironment({});
    await runWithSession({ sessionKey: 'agent:main:direct:31415926' }, () => environment.execute('id')).catch(() => undefined);
    expect(warnings).toEqual([expect.stringMatching(/^berth: refused a command: session key agent:<agent>:direct:<peer> /)]);
    expect(warnings.join('')).not.toContain('31415926');
  });

  it("gives each user's backend request only their own variables, and their secrets to mask", async () => {
    const environmentVariables = {
      HERMES_USER_TELEGRAM_1_GITHUB_TOKEN: 'ghp_one_secret',
      HERMES_USER_TELEGRAM_2_GITHUB_TOKEN: 'ghp_two_secret',
      SHARED: 'shared-value',
    };
    const { backend, terminal } = await setUp({ environment: environmentVariables, config: { docker_forward_env: ['SHARED'] } });
    const environment = await terminal.get('berth-docker').createEnvironment({});
    await runWithSession({ platform: 'telegram', userId: '1' }, () => environment.execute('env'));
    const { request } = backend.execs[0]!;
    expect(request.environment.variables).toEqual({ GITHUB_TOKEN: 'ghp_one_secret', SHARED: 'shared-value' });
    // The backend masks what it returns (one place, where the output cut is known); it is told what.
    expect([...request.environment.secrets].sort()).toEqual(['ghp_one_secret', 'shared-value']);
  });

  it('returns 124 after a timeout, and passes cwd, timeout and stdin through', async () => {
    const { backend, terminal } = await setUp({ config: { timeout: 30 } });
    // As the backend contract says a timed-out result is (ExecResult.timedOut: exitCode 124).
    backend.respond = () => ({ exitCode: 124, timedOut: true, stdout: 'partial' });
    const environment = await terminal.get('berth-docker').createEnvironment({ cwd: '/workspace/a', timeout: 5 });
    const result = await environment.execute('sleep 100', { stdin: 'input' });
    expect(result.returncode).toBe(124);
    expect(backend.execs[0]!.exec).toEqual({ command: 'sleep 100', cwd: '/workspace/a', timeout: 5, stdin: 'input' });
    await environment.execute('true', { timeout: 2, cwd: '/tmp' });
    expect(backend.execs[1]!.exec).toMatchObject({ cwd: '/tmp', timeout: 2 });
  });

  it('refuses a bad user id instead of running it in a shared sandbox', async () => {
    const { backend, terminal } = await setUp();
    const environment = await terminal.get('berth-docker').createEnvironment({});
    await expect(runWithSession({ platform: 'telegram', userId: '../etc' }, () => environment.execute('id'))).rejects.toBeInstanceOf(BerthError);
    expect(backend.execs).toHaveLength(0);
  });

  it('keeps persistent sandboxes at cleanup', async () => {
    const { backend, terminal } = await setUp();
    const environment = await terminal.get('berth-docker').createEnvironment({});
    await runWithSession({ platform: 'telegram', userId: 1 }, () => environment.execute('true'));
    await environment.cleanup();
    expect(backend.removed).toEqual([]);
  });

  it('removes the container (not the files) at cleanup when container_persistent is false, once no other handle uses it', async () => {
    const { backend, terminal } = await setUp({ config: { container_persistent: false } });
    const provider = terminal.get('berth-docker');
    const first = await provider.createEnvironment({});
    const second = await provider.createEnvironment({});
    await runWithSession({ platform: 'telegram', userId: 1 }, () => first.execute('true'));
    await runWithSession({ platform: 'telegram', userId: 1 }, () => second.execute('true'));
    await first.cleanup();
    expect(backend.removed).toEqual([]);
    await second.cleanup();
    expect(backend.removed).toEqual([{ scopeKey: 'user:telegram:1', purge: false }]);
  });

  it('closes its backends when the plugin closes', async () => {
    const { backend, plugin } = await setUp();
    await plugin.close();
    expect(backend.closed).toBe(1);
  });

  it('loads the default config file when the host passes none', async () => {
    const home = tempDir();
    writeFileSync(path.join(home, 'config.yaml'), `terminal:\n  backend: podman\n  sandbox_dir: ${home}/sandboxes\n`);
    const terminal = createInProcessTerminalRegistry();
    const plugin = createBerthPlugin({ backend: createRecordingBackend() });
    await plugin.register({ specificationVersion: 'v1', terminal, environment: { HERMES_HOME: home } });
    expect(terminal.names()).toEqual(['berth-podman']);
    expect(plugin.instances[0]!.resolver.sandboxDir).toBe(path.join(home, 'sandboxes'));
  });
});
