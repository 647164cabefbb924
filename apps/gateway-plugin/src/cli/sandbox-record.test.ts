import { describe, expect, it } from 'vitest';
import { sandboxRecordRow, stringifyForDisplay, toSandboxRecord } from './sandbox-record.js';

// A container made by an older release (or by hand) may carry any label value.
const record = toSandboxRecord({
  scopeKey: 'user:signal:ad\u202emin',
  kind: 'user',
  platform: 'signal',
  userId: 'ad\u202emin\u2028x\u200b',
  containerId: '0123456789abcdef',
  containerName: 'berth-x',
  state: 'running',
  workspace: '/srv/w',
  home: '/srv/h',
});

describe('berth ls output', () => {
  it('shows invisible, bidi-control and line-separator characters escaped in the table', () => {
    const row = sandboxRecordRow(record).join(' ');
    expect(row).toContain('signal:ad\\u{202E}min\\u{2028}x\\u{200B}');
    expect(row).not.toMatch(/[\u202e\u2028\u200b]/);
  });

  it('escapes them in JSON too, losslessly', () => {
    const text = stringifyForDisplay([record]);
    expect(text).not.toMatch(/[\u202e\u2028\u200b]/);
    expect(JSON.parse(text)).toEqual([record]);
  });
});
