import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRuntimeVersions } from './read-runtime-versions.js';

describe('readRuntimeVersions', () => {
  it('asks each binary once, however many runtime names the engine gives it, and leaves out one that is missing', async () => {
    const folder = mkdtempSync(path.join(os.tmpdir(), 'berth-runtimes-'));
    try {
      const binary = path.join(folder, 'runc');
      const calls = path.join(folder, 'calls');
      writeFileSync(binary, `#!/bin/sh\necho called >> ${JSON.stringify(calls)}\necho "runc version 1.1.5"\necho "commit: x"\n`);
      chmodSync(binary, 0o755);
      const versions = await readRuntimeVersions({
        runc: { path: binary },
        'io.containerd.runc.v2': { path: binary },
        'io.containerd.runtime.v1.linux': { path: binary },
        gone: { path: path.join(folder, 'missing') },
      });
      expect(versions).toEqual({
        runc: 'runc version 1.1.5',
        'io.containerd.runc.v2': 'runc version 1.1.5',
        'io.containerd.runtime.v1.linux': 'runc version 1.1.5',
      });
      expect(readFileSync(calls, 'utf8')).toBe('called\n');
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
