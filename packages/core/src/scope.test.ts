import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseTerminalConfig } from './config.js';
import { IdentityError, SessionAttributionError } from './errors.js';
import { createGenericAdapter } from './platform-adapter.js';
import { createPlatformRegistry } from './platform-registry.js';
import { resolveSandboxDir } from './host-layout.js';
import { createSandboxResolver } from './sandbox-resolver.js';
import { runWithSession } from './session-context.js';
import { PROPERTY_TEST_TIMEOUT_MS } from '../../../vitest.shared.js';

const root = path.resolve('/srv/berth');
const resolver = (input: Record<string, unknown> = {}) =>
  createSandboxResolver({ config: parseTerminalConfig({ sandbox_dir: root, ...input }), registry: createPlatformRegistry(), environment: {} });

describe('scope and paths', () => {
  it('uses the user layout for a session with a user', () => {
    const request = resolver().resolve({ session: { platform: 'telegram', userId: 123456789, taskId: 't1' } });
    expect(request.scope.kind).toBe('user');
    expect(request.paths.workspace).toBe(path.join(root, 'docker', 'telegram@123456789', 'workspace'));
    expect(request.paths.home).toBe(path.join(root, 'docker', 'telegram@123456789', 'home'));
  });

  it('reads the active session when none is given', () => {
    const request = runWithSession({ platform: 'telegram', userId: '5' }, () => resolver().resolve());
    expect(request.scope.key).toBe('user:telegram:5');
  });

  it('keeps the legacy task layout without a user or with docker_user_sandbox false', () => {
    expect(resolver().resolve({ taskId: 'abc' }).paths.workspace).toBe(path.join(root, 'docker', 'abc', 'workspace'));
    expect(resolver().resolve({ session: { taskId: 'abc' } }).paths.workspace).toBe(path.join(root, 'docker', 'abc', 'workspace'));
    expect(resolver({ docker_user_sandbox: false }).resolve({ session: { platform: 'telegram', userId: 1, taskId: 'abc' } }).paths.workspace).toBe(
      path.join(root, 'docker', 'abc', 'workspace'),
    );
    expect(resolver().resolve().scope.key).toBe('task:default');
  });

  it('takes the user from a host session key of a direct chat', () => {
    expect(resolver().resolve({ session: { sessionKey: 'agent:main:telegram:direct:77' } }).scope.key).toBe('user:telegram:77');
    expect(resolver().resolve({ session: { sessionKey: 'agent:main:telegram:dm:77' } }).scope.key).toBe('user:telegram:77');
    expect(resolver().resolve({ session: { sessionKey: 'agent:main:telegram:default:direct:77' } }).scope.key).toBe('user:telegram:77');
  });

  it('gives a conversation without a user a sandbox of its own, never the shared default', () => {
    const group = resolver().resolve({ session: { sessionKey: 'agent:main:telegram:group:-100', taskId: 'default' } });
    expect(group.scope).toMatchObject({ kind: 'task', taskId: 'agent:main:telegram:group:-100' });
    expect(group.paths.folder).toBe(path.join(root, 'docker', 'task~agent%3Amain%3Atelegram%3Agroup%3A-100'));
    expect(resolver().resolve({ session: { sessionKey: 'cron:nightly' } }).scope.key).toBe('task:cron:nightly');
    expect(resolver().resolve({ session: { platform: 'telegram', chatId: -100 } }).scope.key).toBe('task:chat:telegram:-100');
    expect(resolver({ docker_user_sandbox: false }).resolve({ session: { sessionKey: 'agent:main:telegram:group:-100' } }).scope.key).toBe('task:default');
  });

  it.each([
    ['agent:main:direct:789', /session\.dmScope: per-peer.*per-channel-peer/],
    ['agent:main:main', /session\.dmScope: main.*per-channel-peer/],
    ['agent:main:telegram:DIRECT:123', /shape agent:<agent>:telegram:DIRECT:<id> is not one Berth recognises/],
    ['agent:main:telegram:direct:', /<empty>/],
    ['something-else', /not one Berth recognises/],
  ])('refuses the session key %s, naming the host setting that fixes it', (sessionKey, message) => {
    expect(() => resolver().resolve({ session: { sessionKey } })).toThrow(SessionAttributionError);
    expect(() => resolver().resolve({ session: { sessionKey } })).toThrow(message);
  });

  it('refuses a sender id without a platform', () => {
    expect(() => resolver().resolve({ session: { userId: '5' } })).toThrow(/no platform/);
  });

  it('gives a chat without a user its own sandbox under the canonical platform, whichever alias the host spelled', () => {
    const registry = createPlatformRegistry({ adapters: [{ ...createGenericAdapter({ platform: 'telegram' }), aliases: ['tg'] }] });
    const r = createSandboxResolver({ config: parseTerminalConfig({ sandbox_dir: root }), registry, environment: {} });
    for (const platform of ['telegram', 'tg', 'TG', 'Telegram']) {
      expect(r.resolve({ session: { platform, chatId: '-100' } }).scope.key).toBe('task:chat:telegram:-100');
    }
  });

  it.each([
    [{ chatId: '-100' }, /names a chat but no platform/],
    [{ platform: 'telegram' }, /names the platform "telegram" but no user, chat or session key/],
    [{ platform: 'telegram', taskId: 'abc' }, /no user, chat or session key/],
  ])('refuses a session that names something but nobody it can attribute: %j', (session, message) => {
    expect(() => resolver().resolve({ session })).toThrow(SessionAttributionError);
    expect(() => resolver().resolve({ session })).toThrow(message);
  });

  it('refuses a session that names nobody when the caller serves many people, and keeps the task layout for a single-user caller', () => {
    for (const target of [{}, { session: {} }, { session: { taskId: 'abc' } }, { taskId: 'abc' }]) {
      expect(() => resolver().resolve({ ...target, sessionRequired: true })).toThrow(
        /serves many people, but its session names no platform, user, chat or session key/,
      );
      expect(resolver().resolve(target).scope.kind).toBe('task');
    }
    // A session that names someone is unaffected; docker_user_sandbox: false is the operator's choice of one shared layout.
    expect(resolver().resolve({ session: { platform: 'telegram', chatId: 7 }, sessionRequired: true }).scope.key).toBe('task:chat:telegram:7');
    expect(resolver({ docker_user_sandbox: false }).resolve({ sessionRequired: true }).scope.key).toBe('task:default');
  });

  it('refuses a bad user id instead of falling back to a shared task sandbox', () => {
    expect(() => resolver().resolve({ session: { platform: 'telegram', userId: 'a\0b' } })).toThrow(IdentityError);
  });

  it('never produces a path outside {sandbox_dir}/docker, and never shares a folder (property)', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    const r = resolver();
    const dockerRoot = path.join(root, 'docker');
    const id = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.constantFrom('..', '.', '/', 'a/b', '/etc', '../../etc/passwd', '\0', 'x'.repeat(10_000), '%2e%2e', 'CON', 'telegram@1'),
    );
    const seen = new Map<string, string>();
    fc.assert(
      fc.property(fc.constantFrom('user', 'task'), fc.constantFrom('signal', 'telegram', 'discord'), id, (kind, platform, value) => {
        let request: ReturnType<typeof r.resolve>;
        try {
          request = kind === 'user' ? r.resolve({ session: { platform, userId: value } }) : r.resolve({ taskId: value });
        } catch (error) {
          // An empty id names nobody: with a platform and nothing else, nobody Berth can attribute.
          expect(error).toBeInstanceOf(kind === 'user' && value === '' ? SessionAttributionError : IdentityError);
          return;
        }
        const relative = path.relative(dockerRoot, request.paths.folder);
        expect(relative).not.toMatch(/^\.\.?($|\/)/);
        expect(relative).not.toContain(path.sep);
        expect(relative.length).toBeGreaterThan(0);
        expect(Buffer.byteLength(relative)).toBeLessThanOrEqual(255);
        // User folders are unique even on a case-insensitive file system; legacy task folders keep
        // the task id exactly (existing setups keep their files), so they are compared as written.
        const key = request.scope.kind === 'user' ? relative.toLowerCase() : relative;
        const previous = seen.get(key);
        if (previous !== undefined) expect(previous).toBe(request.scope.key);
        seen.set(key, request.scope.key);
      }),
      { numRuns: 3000 },
    );
  });

  it('gives each scope a bounded engine-safe slug', () => {
    const request = resolver().resolve({ session: { platform: 'signal', userId: `Ünïcødé..${'x'.repeat(200)}` } });
    expect(request.scope.slug).toMatch(/^[a-z0-9-]{1,60}$/);
  });
});

describe('sandbox_dir', () => {
  it('prefers the config, then TERMINAL_SANDBOX_DIR, then HERMES_HOME/sandboxes, then ~/.hermes/sandboxes', () => {
    expect(resolveSandboxDir('/a', { TERMINAL_SANDBOX_DIR: '/b', HERMES_HOME: '/c' })).toBe(path.resolve('/a'));
    expect(resolveSandboxDir(undefined, { TERMINAL_SANDBOX_DIR: '/b', HERMES_HOME: '/c' })).toBe(path.resolve('/b'));
    expect(resolveSandboxDir(undefined, { HERMES_HOME: '/c' })).toBe(path.resolve('/c/sandboxes'));
    expect(resolveSandboxDir(undefined, { HOME: '/home/u' })).toBe(path.resolve('/home/u/.hermes/sandboxes'));
    expect(resolveSandboxDir('~/s', { HOME: '/home/u' })).toBe(path.resolve('/home/u/s'));
  });
});
