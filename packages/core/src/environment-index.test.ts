import { describe, expect, it } from 'vitest';
import { createEnvironmentIndex } from './environment-index.js';
import { createGenericAdapter } from './platform-adapter.js';
import { createPlatformRegistry } from './platform-registry.js';

const registry = () => {
  const built = createPlatformRegistry({ genericPlatforms: ['signal', 'slack'] });
  built.register({
    ...createGenericAdapter({ platform: 'telegram' }),
    // A numeric-id platform, as Telegram's own adapter is.
    normalize: (raw: unknown) => {
      if (!/^[1-9][0-9]*$/.test(String(raw))) throw new Error('not a number');
      return String(raw);
    },
  });
  return built;
};

describe('the readings of user variables', () => {
  it('says whose each variable is and as which name, and who a name written for an escaped id was likely meant for', () => {
    const index = createEnvironmentIndex(
      {
        HERMES_USER_SIGNAL_AB_CD_TOKEN: 'x',
        HERMES_USER_SLACK_U024BE7LH_TOKEN: 'y',
        HERMES_USER_TELEGRAM_123456789_GITHUB_TOKEN: 'z',
        HERMES_USER_DISCORD_1_TOKEN: 'w',
      },
      { prefix: 'HERMES_USER', registry: registry() },
    );
    expect(index.readings()).toEqual([
      {
        source: 'HERMES_USER_SIGNAL_AB_CD_TOKEN',
        identity: 'signal:ab',
        name: 'CD_TOKEN',
        meantFor: { identity: 'signal:ab_cd', source: 'HERMES_USER_SIGNAL_ABZ5FCD_TOKEN', name: 'TOKEN' },
      },
      {
        source: 'HERMES_USER_SLACK_U024BE7LH_TOKEN',
        identity: 'slack:u024be7lh',
        name: 'TOKEN',
        meantFor: { identity: 'slack:U024BE7LH', source: 'HERMES_USER_SLACK_Z55024Z42Z457Z4CZ48_TOKEN', name: 'TOKEN' },
      },
      // A numeric id: no other reading.
      { source: 'HERMES_USER_TELEGRAM_123456789_GITHUB_TOKEN', identity: 'telegram:123456789', name: 'GITHUB_TOKEN' },
    ]);
    // A platform the gateway does not serve: refused, saying how to serve it.
    expect(index.refused.map((error) => error.message)).toEqual([
      expect.stringMatching(
        /^variable HERMES_USER_DISCORD_1_TOKEN is not forwarded to any sandbox: no adapter knows the platform "discord" .*terminal\.generic_platforms/,
      ),
    ]);
  });
});
