import { describe, expect, it } from 'vitest';
import { SandboxFileError } from '@berth/core';
import { sandboxPathOf } from './sandbox-files.js';

const refusal = (named: string): SandboxFileError => {
  try {
    sandboxPathOf(named);
  } catch (error) {
    if (error instanceof SandboxFileError) return error;
    throw error;
  }
  throw new Error(`${JSON.stringify(named)} was accepted`);
};

describe('sandboxPathOf', () => {
  it('reads every path an agent writes as a path in the sandbox', () => {
    expect(sandboxPathOf('/workspace/out.txt')).toBe('/workspace/out.txt');
    expect(sandboxPathOf('out.txt')).toBe('/workspace/out.txt');
    expect(sandboxPathOf('./reports//q3.pdf')).toBe('/workspace/reports/q3.pdf');
    expect(sandboxPathOf('~/notes.md')).toBe('/root/notes.md');
    expect(sandboxPathOf('/root/.hermes/cache/documents/doc_1_a.txt')).toBe('/root/.hermes/cache/documents/doc_1_a.txt');
    expect(sandboxPathOf('/tmp/plot.png')).toBe('/tmp/plot.png');
    expect(sandboxPathOf('  /workspace/a b.txt  ')).toBe('/workspace/a b.txt');
  });

  it('refuses in one line what is not a file of the sandbox: .., host paths, folders, NUL', () => {
    for (const named of ['../etc/passwd', '/workspace/../root/x', 'a/../../b', '..']) {
      const error = refusal(named);
      expect(error.code).toBe('FILE_REFUSED');
      expect(error.message).toContain('".."');
    }
    for (const named of ['/etc/passwd', '/proc/1/environ', '/var/lib/berth/sandboxes/docker/telegram@1/workspace/x', '/home/x', '/workspacex/y']) {
      expect(refusal(named).message).toMatch(/is not in the sandbox's \/workspace, \/root or \/tmp/);
    }
    expect(refusal('/workspace/').message).toContain('is a folder');
    expect(refusal('~').message).toContain('is a folder');
    expect(refusal('').code).toBe('FILE_REFUSED');
    expect(refusal('/workspace/a\u0000b').code).toBe('FILE_REFUSED');
    for (const named of ['../x', '/etc/passwd', '']) expect(refusal(named).message).not.toContain('\n');
  });
});
