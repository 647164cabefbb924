import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseTerminalConfig } from './config.js';
import { IdentityError, SessionAttributionError } from './errors.js';
import { createPlatformRegistry } from './platform-registry.js';
import { createSandboxResolver } from './sandbox-resolver.js';
import { classifySessionKey } from './session-key.js';
import { PROPERTY_TEST_TIMEOUT_MS } from '../../../vitest.shared.js';

// One resolver for every key, as in a gateway (it remembers sessions; sandbox-resolver.test.ts
// shows that changes no answer), so each run costs the resolution and not a new config.
const resolver = createSandboxResolver({ config: parseTerminalConfig({ sandbox_dir: '/srv/berth' }), registry: createPlatformRegistry(), environment: {} });

/** Whose sandbox a key gives: a scope key, or the refusal. */
function scopeOf(sessionKey: string): { scope: string } | { refused: string } {
  try {
    return { scope: resolver.resolve({ session: { sessionKey }, taskId: 'default' }).scope.key };
  } catch (error) {
    if (error instanceof SessionAttributionError || error instanceof IdentityError) return { refused: error.message };
    throw error;
  }
}

// Segments as hosts write them: no ':' inside (ids after the marker may hold ':' and are tested apart).
const segment = fc.string({ minLength: 1, maxLength: 12 }).filter((value) => !value.includes(':'));
const channel = fc.constantFrom('telegram', 'whatsapp', 'signal', 'discord', 'slack', 'matrix');
// Peer ids as platforms write them ("." and ".." read as paths, and are refused on every platform).
const peer = fc.oneof(
  fc.stringMatching(/^[0-9]{1,12}$/),
  fc.stringMatching(/^[A-Za-z0-9_.+@-]{1,20}$/).filter((value) => value !== '.' && value !== '..'),
  fc.constant('@alice:example.org'),
);
const conversationWord = fc.constantFrom('group', 'channel', 'thread', 'topic');

describe('classifySessionKey', () => {
  it.each([
    ['agent:main:telegram:dm:111111', { kind: 'user', platform: 'telegram', peer: '111111' }],
    ['agent:main:telegram:direct:123', { kind: 'user', platform: 'telegram', peer: '123' }],
    ['agent:ops:whatsapp:bot2:direct:+15550001111', { kind: 'user', platform: 'whatsapp', peer: '+15550001111' }],
    ['agent:main:matrix:direct:@alice:example.org', { kind: 'user', platform: 'matrix', peer: '@alice:example.org' }],
    ['agent:main:telegram:group:-100123', { kind: 'conversation' }],
    ['agent:main:telegram:group:-100123:topic:7', { kind: 'conversation' }],
    ['agent:main:slack:channel:C01', { kind: 'conversation' }],
    ['agent:main:discord:acct:thread:99', { kind: 'conversation' }],
    ['cron:nightly-report', { kind: 'conversation' }],
    ['hook:0f8e6c1a-3b7d-4e2f-9a10-5c6d7e8f9a0b', { kind: 'conversation' }],
  ])('reads %s', (key, expected) => {
    expect(classifySessionKey(key)).toMatchObject(expected);
  });

  it.each([
    ['agent:main:direct:789', 'per-peer'],
    ['agent:main:dm:789', 'per-peer'],
    ['agent:main:main', 'session.dmScope: main'],
    ['agent:main:home', 'session.dmScope: main'],
    ['agent:main:telegram:DIRECT:123', 'not one Berth recognises'],
    ['AGENT:main:telegram:direct:123', 'not one Berth recognises'],
    ['agent:main:telegram:direct:', 'not one Berth recognises'],
    ['agent:main:telegram:direct', 'not one Berth recognises'],
    ['agent::telegram:direct:1', 'not one Berth recognises'],
    ['agent:main:Tele-gram:direct:1', 'not one Berth recognises'],
    ['agent:main:telegram:12345', 'not one Berth recognises'],
    ['cron:', 'not one Berth recognises'],
    ['', 'not one Berth recognises'],
    ['agent:main:telegram:direct:1\u202e', 'invisible'],
    ['agent:main:telegram:direct:1\n', 'control'],
  ])('refuses %s with a line that says why and what fixes it', (key, reason) => {
    const meaning = classifySessionKey(key);
    expect(meaning.kind).toBe('refused');
    if (meaning.kind !== 'refused') return;
    expect(meaning.reason).toContain(reason);
    expect(meaning.reason).toMatch(/session\.dmScope|refused/);
    expect(meaning.reason).not.toMatch(/[\r\n]/);
  });

  it('never prints the ids of a refused key, only its shape', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(segment, fc.stringMatching(/^[0-9]{6,12}$/), (agent, id) => {
        for (const key of [`agent:${agent}:direct:${id}`, `agent:${agent}:telegram:DIRECT:${id}`, `x:${id}`]) {
          const meaning = classifySessionKey(key);
          expect(meaning.kind).toBe('refused');
          if (meaning.kind === 'refused') expect(meaning.reason).not.toContain(id);
        }
      }),
    );
  });
});

describe('whose sandbox a session key gives (properties)', () => {
  it('a direct key of either OpenClaw shape or the Python gateway gives exactly the user it names', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(
        segment,
        channel,
        fc.option(
          segment.filter((value) => !['direct', 'dm', 'group', 'channel', 'thread', 'topic'].includes(value)),
          { nil: undefined },
        ),
        fc.constantFrom('direct', 'dm'),
        peer,
        (agent, platform, account, word, id) => {
          const key = ['agent', agent, platform, ...(account === undefined ? [] : [account]), word, id].join(':');
          expect(scopeOf(key)).toEqual({ scope: `user:${platform}:${id}` });
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('two distinct users never share a scope, whichever key shapes name them', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(channel, peer, channel, peer, segment, segment, (platformA, peerA, platformB, peerB, agentA, agentB) => {
        fc.pre(platformA !== platformB || peerA !== peerB);
        const a = scopeOf(`agent:${agentA}:${platformA}:direct:${peerA}`);
        const b = scopeOf(`agent:${agentB}:${platformB}:acct:direct:${peerB}`);
        expect(a).not.toEqual(b);
      }),
      { numRuns: 2000 },
    );
  });

  it('each conversation gets its own sandbox: never a user, never another conversation, never the shared default', {
    timeout: PROPERTY_TEST_TIMEOUT_MS,
  }, () => {
    const seen = new Map<string, string>();
    fc.assert(
      fc.property(segment, channel, conversationWord, segment, fc.option(segment, { nil: undefined }), (agent, platform, word, id, topic) => {
        const key = ['agent', agent, platform, word, id, ...(topic === undefined ? [] : ['topic', topic])].join(':');
        const result = scopeOf(key);
        expect(result).toHaveProperty('scope');
        if (!('scope' in result)) return;
        expect(result.scope).toMatch(/^task:/);
        expect(result.scope).not.toBe('task:default');
        const previous = seen.get(result.scope);
        if (previous !== undefined) expect(previous).toBe(key);
        seen.set(result.scope, key);
      }),
      { numRuns: 2000 },
    );
  });

  it('per-peer and main keys, whatever their ids, never reach a sandbox', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(segment, peer, fc.constantFrom('direct', 'dm'), segment, (agent, id, word, mainKey) => {
        expect(scopeOf(`agent:${agent}:${word}:${id}`)).toHaveProperty('refused');
        expect(scopeOf(`agent:${agent}:${mainKey}`)).toHaveProperty('refused');
      }),
      { numRuns: 1000 },
    );
  });

  it('an arbitrary key is a recognised shape or refused; it never falls back to the shared default', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    const directShape = /^agent:[^:]+:[a-z][a-z0-9]{0,31}(?::[^:]+)?:(?:direct|dm):[^\n]+$/;
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 80 }),
      fc
        .array(fc.oneof(segment, fc.constantFrom('agent', 'direct', 'dm', 'DIRECT', 'group', 'main', 'telegram', 'cron', 'hook', '')), { maxLength: 7 })
        .map((parts) => parts.join(':')),
    );
    fc.assert(
      fc.property(text, (key) => {
        const result = scopeOf(key);
        if ('scope' in result) {
          expect(result.scope).not.toBe('task:default');
          if (result.scope.startsWith('user:')) expect(key).toMatch(directShape);
        }
      }),
      { numRuns: 5000 },
    );
  });
});
