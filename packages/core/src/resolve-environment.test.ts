import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseTerminalConfig } from './config.js';
import { createPlatformRegistry } from './platform-registry.js';
import { createSandboxResolver } from './sandbox-resolver.js';
import { ConfigError } from './errors.js';
import { PROPERTY_TEST_TIMEOUT_MS } from '../../../vitest.shared.js';

const config = (input: Record<string, unknown> = {}) => parseTerminalConfig({ sandbox_dir: '/srv/berth', ...input });

function resolverFor(environment: Record<string, string>, input: Record<string, unknown> = {}) {
  return createSandboxResolver({ config: config(input), registry: createPlatformRegistry(), environment });
}

function variablesOf(environment: Record<string, string>, platform: string, userId: string, input: Record<string, unknown> = {}) {
  return resolverFor(environment, input).resolve({ session: { platform, userId } }).environment.variables;
}

describe('environment resolution', () => {
  it('gives a user their own variables under the plain name', () => {
    const environment = { HERMES_USER_TELEGRAM_123456789_GITHUB_TOKEN: 'ghp_x', HERMES_USER_TELEGRAM_987_GITHUB_TOKEN: 'ghp_other' };
    expect(variablesOf(environment, 'telegram', '123456789')).toEqual({ GITHUB_TOKEN: 'ghp_x' });
  });

  it('layers docker_env < docker_forward_env < user variables', () => {
    const environment = { SHARED: 'forwarded', HERMES_USER_TELEGRAM_1_SHARED: 'mine', OPENAI_API_KEY: 'sk-global' };
    const resolved = resolverFor(environment, {
      docker_env: { SHARED: 'static', MODE: 'ci' },
      docker_forward_env: ['SHARED', 'OPENAI_API_KEY', 'ABSENT'],
    }).resolve({ session: { platform: 'telegram', userId: '1' } }).environment;
    expect(resolved.variables).toEqual({ MODE: 'ci', OPENAI_API_KEY: 'sk-global', SHARED: 'mine' });
    expect(resolved.details.find((variable) => variable.name === 'SHARED')?.source).toBe('user');
    expect(resolved.secrets).toEqual(expect.arrayContaining(['sk-global', 'mine']));
    expect(resolved.secrets).not.toContain('ci');
  });

  it('gives a task scope no user variables', () => {
    const resolver = resolverFor({ HERMES_USER_TELEGRAM_1_TOKEN: 'secret' });
    expect(resolver.resolve({ taskId: 'abc' }).environment.variables).toEqual({});
  });

  it('honours a custom prefix', () => {
    expect(variablesOf({ ACME_TELEGRAM_1_TOKEN: 'v', HERMES_USER_TELEGRAM_1_OTHER: 'w' }, 'telegram', '1', { docker_user_env_prefix: 'ACME' })).toEqual({
      TOKEN: 'v',
    });
  });

  it('does not give user ab the variables of user ab-cd or ab_cd (the naive prefix trap)', () => {
    const registry = createPlatformRegistry();
    const abcd = registry.envName({ platform: 'signal', id: 'ab-cd' });
    const environment = {
      [`HERMES_USER_SIGNAL_${abcd}_TOKEN`]: 'for-ab-cd',
      HERMES_USER_SIGNAL_AB_TOKEN: 'for-ab',
    };
    expect(variablesOf(environment, 'signal', 'ab')).toEqual({ TOKEN: 'for-ab' });
    expect(variablesOf(environment, 'signal', 'ab-cd')).toEqual({ TOKEN: 'for-ab-cd' });
    expect(variablesOf(environment, 'signal', 'ab_cd')).toEqual({});
  });

  it('keeps users whose ids differ only in case apart', () => {
    const registry = createPlatformRegistry();
    const upper = registry.envName({ platform: 'signal', id: 'AB' });
    const environment = { HERMES_USER_SIGNAL_AB_TOKEN: 'lower', [`HERMES_USER_SIGNAL_${upper}_TOKEN`]: 'upper' };
    expect(variablesOf(environment, 'signal', 'ab')).toEqual({ TOKEN: 'lower' });
    expect(variablesOf(environment, 'signal', 'AB')).toEqual({ TOKEN: 'upper' });
  });

  it('refuses, by name only, variables that name no user unambiguously', () => {
    const resolver = resolverFor({
      HERMES_USER_SIGNAL_ab_TOKEN: 'secret-1', // lower case: not an env form
      HERMES_USER_SIGNAL_Z61_TOKEN: 'secret-2', // `a` written as an escape: not canonical
      HERMES_USER_TELEGRAM_1: 'secret-3', // no variable name
      HERMES_USER_Tele_1_X: 'secret-4', // platform not upper case
      HERMES_USER__1_X: 'secret-5',
    });
    const names = resolver.index.refused.map((error) => error.variable).sort();
    expect(names).toEqual([
      'HERMES_USER_SIGNAL_Z61_TOKEN',
      'HERMES_USER_SIGNAL_ab_TOKEN',
      'HERMES_USER_TELEGRAM_1',
      'HERMES_USER_Tele_1_X',
      'HERMES_USER__1_X',
    ]);
    for (const error of resolver.index.refused) {
      expect(error.message).toContain(error.variable);
      expect(error.message).not.toMatch(/secret-\d/);
    }
    expect(resolver.resolve({ session: { platform: 'signal', userId: 'a' } }).environment.variables).toEqual({});
  });

  it("refuses user variables with reserved or internal names, or a NUL in the value, by name only; the user's other variables still arrive", () => {
    const names = ['__berth_dir', '__berth_kept', '__BERTH_CWD', '__Berth_x', 'PATH', 'HOME', 'HOSTNAME', 'NUL_VALUE'];
    const environment: Record<string, string> = Object.fromEntries(
      names.map((name) => [`HERMES_USER_TELEGRAM_7_${name}`, name === 'NUL_VALUE' ? 'secret\u0000x' : 'secret-value']),
    );
    environment.HERMES_USER_TELEGRAM_7_GITHUB_TOKEN = 'ghp_fine';
    const resolver = resolverFor(environment);
    expect(resolver.index.refused.map((error) => error.variable).sort()).toEqual(names.map((name) => `HERMES_USER_TELEGRAM_7_${name}`).sort());
    for (const error of resolver.index.refused) {
      expect(error.message).toMatch(/is not forwarded to any sandbox: .*(set by the sandbox itself|Berth's own|NUL byte)/);
      expect(error.message).not.toContain('secret');
    }
    expect(resolver.resolve({ session: { platform: 'telegram', userId: '7' } }).environment.variables).toEqual({ GITHUB_TOKEN: 'ghp_fine' });
  });

  it('refuses reserved and internal names in docker_env, docker_forward_env and env_passthrough when the config is read, and a NUL in a docker_env value', () => {
    expect(() => config({ docker_env: { PATH: '/x' } })).toThrow(/terminal\.docker_env\.PATH .*PATH is set by the sandbox itself; remove it/);
    expect(() => config({ docker_env: { __berth_dir: '/x' } })).toThrow(/terminal\.docker_env\.__berth_dir .*__berth \(any case\) are Berth's own/);
    expect(() => config({ docker_forward_env: ['HOME'] })).toThrow(/terminal\.docker_forward_env\.0 .*HOME is set by the sandbox itself/);
    expect(() => config({ env_passthrough: ['__BERTH_CWD'] })).toThrow(/terminal\.env_passthrough\.0 .*Berth's own/);
    const nul = () => config({ docker_env: { LANG: 'C.UTF-8\u0000secret' } });
    expect(nul).toThrow(/^terminal\.docker_env\.LANG is a string: contains a NUL byte, which no variable can hold; remove it$/);
  });

  it('refuses to forward a per-user variable to everybody, when the config is read (not at the first command)', () => {
    expect(() => resolverFor({ HERMES_USER_TELEGRAM_1_TOKEN: 'x' }, { docker_forward_env: ['HERMES_USER_TELEGRAM_1_TOKEN'] })).toThrow(ConfigError);
    expect(() => resolverFor({}, { docker_user_env_prefix: 'TEAM', docker_forward_env: ['TEAM_TELEGRAM_1_TOKEN'] })).toThrow(
      /terminal\.docker_forward_env\.0 .*per-user variable/,
    );
  });

  it('names the exact prefix an operator writes for a user', () => {
    const resolver = resolverFor({});
    expect(resolver.index.prefixFor({ platform: 'telegram', id: '123456789' })).toBe('HERMES_USER_TELEGRAM_123456789_');
  });

  it('never lets one identity read a variable set for another (property)', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    // Ids the generic adapter takes (one that reads as a path, ".", ".." or with a slash, it refuses).
    const id = fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 12 }).filter((value) => value !== '.' && value !== '..' && !/[/\\]/.test(value));
    fc.assert(
      fc.property(id, id, fc.constantFrom('signal', 'discord', 'matrix'), (a, b, platform) => {
        fc.pre(a !== b);
        const registry = createPlatformRegistry();
        const environment = { [`HERMES_USER_${platform.toUpperCase()}_${registry.envName({ platform, id: a })}_TOKEN`]: `value-of-${a}` };
        const resolver = createSandboxResolver({ config: config(), registry, environment });
        expect(resolver.resolve({ session: { platform, userId: b } }).environment.variables).toEqual({});
        expect(resolver.resolve({ session: { platform, userId: a } }).environment.variables).toEqual({ TOKEN: `value-of-${a}` });
      }),
      { numRuns: 500 },
    );
  });

  it('gives linked identities one sandbox and all their variables, the first listed winning', () => {
    const environment = {
      HERMES_USER_TELEGRAM_1_GITHUB_TOKEN: 'from-telegram',
      HERMES_USER_SIGNAL_BOB_GITHUB_TOKEN: 'from-signal',
      HERMES_USER_SIGNAL_BOB_NPM_TOKEN: 'npm-from-signal',
    };
    const resolver = resolverFor(environment, { docker_identity_links: [['telegram:1', 'signal:bob']] });
    const viaSignal = resolver.resolve({ session: { platform: 'signal', userId: 'bob' } });
    const viaTelegram = resolver.resolve({ session: { platform: 'telegram', userId: '1' } });
    expect(viaSignal.paths.workspace).toBe(viaTelegram.paths.workspace);
    expect(viaSignal.scope.key).toBe('user:telegram:1');
    expect(viaSignal.environment.variables).toEqual({ GITHUB_TOKEN: 'from-telegram', NPM_TOKEN: 'npm-from-signal' });
    expect(viaSignal.environment.details.find((variable) => variable.name === 'GITHUB_TOKEN')?.source).toBe('linked');
  });

  it('refuses an identity linked twice', () => {
    expect(() =>
      resolverFor(
        {},
        {
          docker_identity_links: [
            ['telegram:1', 'signal:bob'],
            ['signal:bob', 'telegram:2'],
          ],
        },
      ),
    ).toThrow(/already linked/);
  });
});
