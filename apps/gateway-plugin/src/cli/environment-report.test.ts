import { describe, expect, it } from 'vitest';
import { parseTerminalConfig } from '@berth/core';
import { createBerthResolver } from '../create-berth.js';
import { buildEnvironmentReport, formatEnvironmentReport } from './environment-report.js';

const SECRETS = ['ghp_user_value_1', 'ghp_linked_value', 'forwarded-value-9', 'static-value-x', 'refused-value-7'];

describe('the berth env report', () => {
  it('lists each variable with its source and no value, the exact prefix, and refused names', async () => {
    const config = parseTerminalConfig({
      docker_env: { TZ: 'static-value-x' },
      docker_forward_env: ['OPENAI_API_KEY'],
      docker_identity_links: [['telegram:123456789', 'whatsapp:+15550001111']],
    });
    const resolver = await createBerthResolver({
      config,
      environment: {
        OPENAI_API_KEY: 'forwarded-value-9',
        HERMES_USER_TELEGRAM_123456789_GITHUB_TOKEN: 'ghp_user_value_1',
        HERMES_USER_WHATSAPP_15550001111_NPM_TOKEN: 'ghp_linked_value',
        HERMES_USER_TELEGRAM_0123456789_GITHUB_TOKEN: 'refused-value-7',
      },
    });
    const report = buildEnvironmentReport(resolver, resolver.resolve({ session: { platform: 'telegram', userId: '123456789' } }));
    expect(report.prefix).toBe('HERMES_USER_TELEGRAM_123456789_');
    expect(report.scope).toBe('user:telegram:123456789');
    expect(report.variables).toEqual([
      { name: 'GITHUB_TOKEN', source: 'user', from: 'HERMES_USER_TELEGRAM_123456789_GITHUB_TOKEN', value: '***' },
      { name: 'NPM_TOKEN', source: 'linked', from: 'HERMES_USER_WHATSAPP_15550001111_NPM_TOKEN', value: '***' },
      { name: 'OPENAI_API_KEY', source: 'forwarded', from: 'OPENAI_API_KEY', value: '***' },
      { name: 'TZ', source: 'static', from: 'terminal.docker_env.TZ', value: '***' },
    ]);
    expect(report.refused.map((refused) => refused.variable)).toEqual(['HERMES_USER_TELEGRAM_0123456789_GITHUB_TOKEN']);
    const printed = JSON.stringify(report) + formatEnvironmentReport(report);
    for (const secret of SECRETS) expect(printed).not.toContain(secret);
    expect(formatEnvironmentReport(report)).toContain('HERMES_USER_TELEGRAM_0123456789_GITHUB_TOKEN');
  });

  it('reports what the terminal tool would give: with docker_user_sandbox false, the shared task sandbox and no user variables', async () => {
    const resolver = await createBerthResolver({
      config: parseTerminalConfig({ docker_user_sandbox: false }),
      environment: { HERMES_USER_TELEGRAM_1_GITHUB_TOKEN: 'ghp_user_value_1' },
    });
    const report = buildEnvironmentReport(resolver, resolver.resolve({ session: { platform: 'telegram', userId: '1' }, taskId: 'default' }));
    expect(report).toMatchObject({ identity: null, scope: 'task:default', prefix: null, variables: [] });
    expect(formatEnvironmentReport(report)).toMatch(/^task:default\nno user: /);
  });

  it('names a variable written for this user that reaches another, and the name to write (an id the env form escapes)', async () => {
    const config = parseTerminalConfig({ generic_platforms: ['signal'] });
    const resolver = await createBerthResolver({ config, environment: { HERMES_USER_SIGNAL_AB_CD_TOKEN: 'value-of-ab-cd-1' } });
    const meant = buildEnvironmentReport(resolver, resolver.resolve({ session: { platform: 'signal', userId: 'ab_cd' } }));
    expect(meant.variables).toEqual([]);
    expect(meant.misnamed).toEqual([
      { variable: 'HERMES_USER_SIGNAL_AB_CD_TOKEN', reaches: 'signal:ab', as: 'CD_TOKEN', write: 'HERMES_USER_SIGNAL_ABZ5FCD_TOKEN' },
    ]);
    expect(formatEnvironmentReport(meant)).toContain(
      "not this user's: HERMES_USER_SIGNAL_AB_CD_TOKEN reaches signal:ab as CD_TOKEN; for signal:ab_cd write HERMES_USER_SIGNAL_ABZ5FCD_TOKEN",
    );
    const reached = buildEnvironmentReport(resolver, resolver.resolve({ session: { platform: 'signal', userId: 'ab' } }));
    expect(reached.variables.map((variable) => variable.name)).toEqual(['CD_TOKEN']);
    expect(reached.misnamed).toEqual([]);
  });
});
