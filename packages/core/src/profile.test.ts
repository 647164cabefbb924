import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseTerminalConfig } from './config.js';
import { SessionAttributionError } from './errors.js';
import { sessionProfile, splitProfileFolderName } from './profile.js';
import { createPlatformRegistry } from './platform-registry.js';
import { createSandboxResolver } from './sandbox-resolver.js';
import type { SessionContext } from './session-context.js';
import { PROPERTY_TEST_TIMEOUT_MS } from '../../../vitest.shared.js';

const root = path.resolve('/srv/berth');
const resolver = (input: Record<string, unknown> = {}) =>
  createSandboxResolver({ config: parseTerminalConfig({ sandbox_dir: root, ...input }), registry: createPlatformRegistry(), environment: {} });
const resolve = (session: SessionContext, input: Record<string, unknown> = {}) => resolver(input).resolve({ session });

describe('host profiles', () => {
  it('reads the default profile, in any spelling, as no profile at all', () => {
    for (const raw of [undefined, '', '  ', 'default', 'Default', ' DEFAULT ']) expect(sessionProfile(raw)).toBeUndefined();
    expect(sessionProfile('Work')).toBe('work');
    expect(sessionProfile(' team_b-2 ')).toBe('team_b-2');
  });

  it.each(['../etc', 'a~b', 'a/b', '-work', '_work', 'w'.repeat(65), 'wörk', 'a b'])('refuses the profile %j, naming it', (raw) => {
    expect(() => sessionProfile(raw)).toThrow(SessionAttributionError);
    expect(() => resolve({ platform: 'telegram', userId: '5', profile: raw })).toThrow(/names the profile .*not a profile id/);
    // Never a fallback: not with docker_user_sandbox false, not for a session that names nobody else.
    expect(() => resolve({ platform: 'telegram', userId: '5', profile: raw }, { docker_user_sandbox: false })).toThrow(SessionAttributionError);
    expect(() => resolve({ profile: raw })).toThrow(SessionAttributionError);
  });

  it('gives the same user a sandbox of their own in each profile, and the default profile the one they had before profiles', () => {
    const before = resolve({ platform: 'telegram', userId: '5' });
    const inDefault = resolve({ platform: 'telegram', userId: '5', profile: 'default' });
    const work = resolve({ platform: 'telegram', userId: '5', profile: 'work' });
    const home = resolve({ platform: 'telegram', userId: '5', profile: 'Home' });
    expect(inDefault.scope).toEqual(before.scope);
    expect(inDefault.paths).toEqual(before.paths);
    expect(before.scope.key).toBe('user:telegram:5');
    expect(work.scope).toMatchObject({ kind: 'user', key: 'profile:work:user:telegram:5', profile: 'work' });
    expect(home.scope.key).toBe('profile:home:user:telegram:5');
    expect(work.paths.workspace).toBe(path.join(root, 'docker', 'profile~work~telegram@5', 'workspace'));
    expect(home.paths.home).toBe(path.join(root, 'docker', 'profile~home~telegram@5', 'home'));
    expect(new Set([before, work, home].map((request) => request.scope.slug)).size).toBe(3);
  });

  it('gives sessions that differ only in their profile two requests from one resolver, asked in any order', () => {
    const one = resolver();
    const session = { platform: 'telegram', userId: '5', sessionKey: 'agent:main:telegram:dm:5' };
    const keys = [undefined, 'work', 'home', 'work', undefined].map(
      (profile) => one.resolve({ session: { ...session, ...(profile ? { profile } : {}) } }).scope.key,
    );
    expect(keys).toEqual([
      'user:telegram:5',
      'profile:work:user:telegram:5',
      'profile:home:user:telegram:5',
      'profile:work:user:telegram:5',
      'user:telegram:5',
    ]);
  });

  it('keeps conversations, cron jobs and task sandboxes of two profiles apart too', () => {
    for (const session of [{ sessionKey: 'agent:main:telegram:group:-100' }, { sessionKey: 'cron:nightly' }, { platform: 'telegram', chatId: '-100' }, {}]) {
      const keys = ['work', 'home', undefined].map((profile) => resolve({ ...session, ...(profile ? { profile } : {}) }).scope.key);
      expect(new Set(keys).size).toBe(3);
    }
    const shared = (profile?: string) => resolve({ platform: 'telegram', userId: '5', ...(profile ? { profile } : {}) }, { docker_user_sandbox: false });
    expect(shared().scope.key).toBe('task:default');
    expect(shared('work').scope.key).toBe('profile:work:task:default');
    expect(shared('work').paths.folder).toBe(path.join(root, 'docker', 'profile~work~default'));
  });

  it(
    'never gives two scopes one folder, with or without a profile, and reads a profile folder back',
    () => {
      const profile = fc.option(fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,63}$/), { nil: undefined });
      const who = fc.oneof(
        fc.record({ platform: fc.constant('telegram'), userId: fc.stringMatching(/^[1-9][0-9]{0,11}$/) }),
        fc.record({ sessionKey: fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/).map((job) => `cron:${job}`) }),
        fc.record({ taskId: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._~-]{0,30}$/) }),
      );
      fc.assert(
        fc.property(fc.tuple(profile, who), fc.tuple(profile, who), ([profileA, a], [profileB, b]) => {
          const one = resolve({ ...a, ...(profileA && profileA !== 'default' ? { profile: profileA } : {}) });
          const two = resolve({ ...b, ...(profileB && profileB !== 'default' ? { profile: profileB } : {}) });
          if (one.scope.key !== two.scope.key) expect(one.paths.folder).not.toBe(two.paths.folder);
          const folder = path.basename(one.paths.folder);
          expect(splitProfileFolderName(folder)?.profile).toBe(one.scope.profile);
        }),
        { numRuns: 500 },
      );
    },
    PROPERTY_TEST_TIMEOUT_MS,
  );
});
