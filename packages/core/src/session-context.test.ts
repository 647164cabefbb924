import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import {
  getActiveSession,
  getActiveSessionUserId,
  runWithSession,
  SESSION_ENVIRONMENT_VARIABLES,
  SESSION_VARIABLE_FIELDS,
  sessionFromEnvironment,
} from './session-context.js';

describe('session context', () => {
  it('is empty outside a session', () => {
    expect(getActiveSession()).toBeUndefined();
    expect(getActiveSessionUserId()).toBeUndefined();
  });

  it('gives the active user as platform:id', () => {
    runWithSession({ platform: 'Telegram', userId: 123456789 }, () => {
      expect(getActiveSessionUserId()).toBe('telegram:123456789');
    });
  });

  it('keeps concurrent messages of different users apart across awaits', async () => {
    const seen = await Promise.all(
      Array.from({ length: 50 }, (_, index) =>
        runWithSession({ platform: 'telegram', userId: String(index) }, async () => {
          await sleep(Math.random() * 10);
          const first = getActiveSessionUserId();
          await sleep(Math.random() * 10);
          return [first, getActiveSessionUserId()];
        }),
      ),
    );
    seen.forEach(([first, second], index) => {
      expect(first).toBe(`telegram:${index}`);
      expect(second).toBe(`telegram:${index}`);
    });
  });

  it('cannot be changed by the code it runs', () => {
    runWithSession({ platform: 'telegram', userId: '1' }, () => {
      const session = getActiveSession() as { userId?: string };
      expect(() => {
        session.userId = '2';
      }).toThrow(TypeError);
      expect(getActiveSessionUserId()).toBe('telegram:1');
    });
  });

  it('reads the Python gateway session variables', () => {
    expect(sessionFromEnvironment({ HERMES_SESSION_PLATFORM: 'telegram', HERMES_SESSION_USER_ID: '42', HERMES_SESSION_CHAT_ID: '-100' })).toEqual({
      platform: 'telegram',
      userId: '42',
      chatId: '-100',
    });
    expect(sessionFromEnvironment({})).toBeUndefined();
  });

  it('reads each variable of the mapping into its field, and an empty one as unset', () => {
    expect(SESSION_ENVIRONMENT_VARIABLES).toEqual([
      'HERMES_SESSION_PLATFORM',
      'HERMES_SESSION_USER_ID',
      'HERMES_SESSION_CHAT_ID',
      'HERMES_SESSION_KEY',
      'HERMES_SESSION_PROFILE',
    ]);
    const environment = Object.fromEntries(Object.entries(SESSION_VARIABLE_FIELDS).map(([variable, field]) => [variable, `${field}-value`]));
    expect(sessionFromEnvironment(environment)).toEqual({
      platform: 'platform-value',
      userId: 'userId-value',
      chatId: 'chatId-value',
      sessionKey: 'sessionKey-value',
      profile: 'profile-value',
    });
    expect(sessionFromEnvironment({ HERMES_SESSION_KEY: 'cron:job', HERMES_SESSION_PLATFORM: '' })).toEqual({ sessionKey: 'cron:job' });
    expect(sessionFromEnvironment({ HERMES_SESSION_CHAT_ID: '', HERMES_SESSION_USER_ID: '' })).toBeUndefined();
  });
});
