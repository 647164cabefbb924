import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseTerminalConfig } from './config.js';
import { createPlatformRegistry } from './platform-registry.js';
import { createSandboxResolver } from './sandbox-resolver.js';
import { runWithSession } from './session-context.js';
import { PROPERTY_TEST_TIMEOUT_MS } from '../../../vitest.shared.js';

const config = (input: Record<string, unknown> = {}) => parseTerminalConfig({ sandbox_dir: '/srv/berth', ...input });

describe('the resolver remembers requests', () => {
  it('gives the same session the same frozen request, and another session its own', () => {
    const resolver = createSandboxResolver({
      config: config(),
      registry: createPlatformRegistry(),
      environment: { HERMES_USER_TELEGRAM_1_TOKEN: 'one-secret' },
    });
    const first = resolver.resolve({ session: { platform: 'telegram', userId: '1' } });
    expect(resolver.resolve({ session: { platform: 'telegram', userId: '1' } })).toBe(first);
    expect(runWithSession({ platform: 'telegram', userId: '1' }, () => resolver.resolve())).toBe(first);
    expect(Object.isFrozen(first) && Object.isFrozen(first.environment.variables) && Object.isFrozen(first.paths)).toBe(true);
    const other = resolver.resolve({ session: { platform: 'telegram', userId: '2' } });
    expect(other.scope.key).toBe('user:telegram:2');
    expect(other.environment.variables).toEqual({});
    // The same id as a number and a task id of the host's are other questions, answered afresh.
    expect(resolver.resolve({ session: { platform: 'telegram', userId: 1 } }).scope.key).toBe('user:telegram:1');
    expect(resolver.resolve({ taskId: 't1' }).scope.key).toBe('task:t1');
    expect(resolver.resolve({ taskId: 't2' }).scope.key).toBe('task:t2');
  });

  it('reads forwarded variables anew when the gateway changed them', () => {
    const environment: Record<string, string> = { OPENAI_API_KEY: 'sk-old' };
    const resolver = createSandboxResolver({ config: config({ docker_forward_env: ['OPENAI_API_KEY'] }), registry: createPlatformRegistry(), environment });
    const session = { platform: 'telegram', userId: '1' };
    expect(resolver.resolve({ session }).environment.variables).toEqual({ OPENAI_API_KEY: 'sk-old' });
    environment.OPENAI_API_KEY = 'sk-new';
    expect(resolver.resolve({ session }).environment).toMatchObject({ variables: { OPENAI_API_KEY: 'sk-new' }, secrets: ['sk-new'] });
    delete environment.OPENAI_API_KEY;
    expect(resolver.resolve({ session }).environment.variables).toEqual({});
  });

  it('refuses a session it cannot attribute every time, remembering nothing', () => {
    const resolver = createSandboxResolver({ config: config(), registry: createPlatformRegistry(), environment: {} });
    for (let attempt = 0; attempt < 3; attempt++)
      expect(() => resolver.resolve({ session: { sessionKey: 'agent:main:direct:5' } })).toThrow(/session\.dmScope: per-channel-peer/);
  });

  it('stays right past the number of sessions it remembers', () => {
    const resolver = createSandboxResolver({ config: config(), registry: createPlatformRegistry(), environment: { HERMES_USER_TELEGRAM_7_T: 'seven' } });
    for (let user = 0; user < 5000; user++)
      expect(resolver.resolve({ session: { platform: 'telegram', userId: String(user) } }).scope.key).toBe(`user:telegram:${user}`);
    expect(resolver.resolve({ session: { platform: 'telegram', userId: '7' } }).environment.variables).toEqual({ T: 'seven' });
    expect(resolver.resolve({ session: { platform: 'telegram', userId: '0' } }).scope.key).toBe('user:telegram:0');
  });

  it('answers as a resolver that remembers nothing, for any order of many sessions', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    const session = fc.record({
      platform: fc.constantFrom('telegram', 'whatsapp', 'signal'),
      userId: fc.constantFrom('1', '2', '+15550001', 'ab', 'AB', 'ab-cd'),
    });
    fc.assert(
      fc.property(fc.array(session, { minLength: 1, maxLength: 60 }), (sessions) => {
        const environment = { HERMES_USER_TELEGRAM_1_T: 'a', HERMES_USER_SIGNAL_AB_T: 'b' };
        const remembering = createSandboxResolver({ config: config(), registry: createPlatformRegistry(), environment });
        for (const one of sessions) {
          const fresh = createSandboxResolver({ config: config(), registry: createPlatformRegistry(), environment }).resolve({ session: one });
          expect(remembering.resolve({ session: one })).toEqual(fresh);
        }
      }),
    );
  });
});

describe("a host scope's variables", () => {
  const resolver = () =>
    createSandboxResolver({
      config: config({ docker_forward_env: ['OPENAI_API_KEY'] }),
      registry: createPlatformRegistry(),
      // The gateway's own environment: another profile's values, which a scoped request never gets.
      environment: { HERMES_USER_TELEGRAM_1_TOKEN: 'gateway-token', OPENAI_API_KEY: 'gateway-key' },
    });
  const work = { HERMES_USER_TELEGRAM_1_TOKEN: 'work-token', OPENAI_API_KEY: 'work-key', UNRELATED: 'x' };
  const home = { HERMES_USER_TELEGRAM_1_TOKEN: 'home-token' };

  it('are the only source of forwarded and user variables when given, for one resolver in any order', () => {
    const one = resolver();
    const session = (profile?: string) => ({ platform: 'telegram', userId: '1', ...(profile ? { profile } : {}) });
    const asked = [
      one.resolve({ session: session('work'), variables: work }),
      one.resolve({ session: session('home'), variables: home }),
      one.resolve({ session: session() }),
      one.resolve({ session: session('work'), variables: {} }),
      one.resolve({ session: session('work'), variables: work }),
    ].map((request) => request.environment.variables);
    expect(asked).toEqual([
      { TOKEN: 'work-token', OPENAI_API_KEY: 'work-key' },
      { TOKEN: 'home-token' },
      { TOKEN: 'gateway-token', OPENAI_API_KEY: 'gateway-key' },
      {},
      { TOKEN: 'work-token', OPENAI_API_KEY: 'work-key' },
    ]);
    expect(one.resolve({ session: session('work'), variables: work }).environment.secrets).toEqual(expect.arrayContaining(['work-token', 'work-key']));
  });

  it("never give one user's variable to another, whatever the scope holds", () => {
    const request = resolver().resolve({ session: { platform: 'telegram', userId: '2' }, variables: work });
    expect(request.environment.variables).toEqual({ OPENAI_API_KEY: 'work-key' });
  });
});
