import { mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseTerminalConfig } from '@berth/core';
import { createBerthResolver } from '../create-berth.js';
import { variableChecks } from './doctor-variables.js';

describe("berth doctor's lines on user variables", () => {
  it('says whose each variable is, and warns where one looks meant for a user of this gateway it does not reach', async () => {
    const sandboxDir = mkdtempSync(path.join(os.tmpdir(), 'berth-doctor-variables-'));
    const config = parseTerminalConfig({ generic_platforms: ['signal'] });
    const environment = {
      HERMES_USER_SIGNAL_AB_CD_TOKEN: 'value-1',
      HERMES_USER_TELEGRAM_123456789_GITHUB_TOKEN: 'value-2',
      HERMES_USER_TELEGRAM_0123_GITHUB_TOKEN: 'value-3',
    };
    const resolver = await createBerthResolver({ config, environment });
    const before = variableChecks(resolver, 'HERMES_USER', sandboxDir);
    expect(before.map(({ status, detail }) => [status, detail])).toEqual([
      ['warning', '1 variable(s) reach no sandbox: HERMES_USER_TELEGRAM_0123_GITHUB_TOKEN'],
      ['ok', 'HERMES_USER_SIGNAL_AB_CD_TOKEN reaches signal:ab as CD_TOKEN; for signal:ab_cd it would be HERMES_USER_SIGNAL_ABZ5FCD_TOKEN (as TOKEN)'],
      ['ok', 'HERMES_USER_TELEGRAM_123456789_GITHUB_TOKEN reaches telegram:123456789 as GITHUB_TOKEN'],
    ]);
    // Once signal:ab_cd has a sandbox here, the likely mistake is a warning with the fix.
    mkdirSync(path.join(sandboxDir, 'docker', resolver.registry.folderName({ platform: 'signal', id: 'ab_cd' })), { recursive: true });
    const after = variableChecks(resolver, 'HERMES_USER', sandboxDir)[1]!;
    expect(after).toMatchObject({ status: 'warning', fix: 'rename it to HERMES_USER_SIGNAL_ABZ5FCD_TOKEN if it is meant for signal:ab_cd' });
    for (const check of [...before, after]) expect(JSON.stringify(check)).not.toMatch(/value-\d/);
  });
});
