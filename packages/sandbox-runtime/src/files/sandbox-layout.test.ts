import { ATTACHMENTS_FOLDER } from '@berth/core/request-protocol';
import { describe, expect, it } from 'vitest';
import { HOME_TARGET, WORKSPACE_TARGET } from '../sandbox-spec.js';
import { FILE_ROOTS, SANDBOX_LAYOUT } from './sandbox-layout.js';

describe('the in-container layout', () => {
  it("is the one the drivers mount, and the attachments folder (core's request protocol) lies in its workspace", () => {
    expect(WORKSPACE_TARGET).toBe(SANDBOX_LAYOUT.workspace);
    expect(HOME_TARGET).toBe(SANDBOX_LAYOUT.home);
    expect(ATTACHMENTS_FOLDER.startsWith(`${SANDBOX_LAYOUT.workspace}/`)).toBe(true);
    expect(FILE_ROOTS).toEqual(['/workspace', '/root', '/tmp']);
  });
});
