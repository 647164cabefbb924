import { describe, expect, it } from 'vitest';
import { createSandboxFsBridge } from './create-sandbox-fs-bridge.js';
import type { SandboxShell } from './create-sandbox-shell.js';

// Path resolution only: it decides what a file tool may touch before anything runs. The
// operations themselves run in a real sandbox in create-berth-sandbox-backend.integration.test.ts.
const unused: SandboxShell = {
  run: () => Promise.reject(new Error('path resolution must not run anything in the sandbox')),
  outputLimit: 1024 * 1024,
};
const bridge = createSandboxFsBridge({ shell: unused, hostWorkspaceDir: '/srv/openclaw/sandboxes/workspace-1' });

describe('the fs bridge\'s paths', () => {
  it('keeps sandbox paths inside /workspace and reads relative ones from the working folder', () => {
    expect(bridge.resolvePath({ filePath: '/workspace/a/../b.txt' })).toEqual({ containerPath: '/workspace/b.txt', relativePath: 'b.txt' });
    expect(bridge.resolvePath({ filePath: 'notes/c.txt' })).toEqual({ containerPath: '/workspace/notes/c.txt', relativePath: 'notes/c.txt' });
    expect(bridge.resolvePath({ filePath: 'c.txt', cwd: '/workspace/notes' })).toEqual({ containerPath: '/workspace/notes/c.txt', relativePath: 'notes/c.txt' });
    expect(bridge.resolvePath({ filePath: '/workspace/' })).toEqual({ containerPath: '/workspace', relativePath: '' });
  });

  it('reads a path in OpenClaw\'s own host workspace as the same place in the sandbox', () => {
    expect(bridge.resolvePath({ filePath: '/srv/openclaw/sandboxes/workspace-1/src/x.ts' })).toEqual({ containerPath: '/workspace/src/x.ts', relativePath: 'src/x.ts' });
    expect(bridge.resolvePath({ filePath: 'x.ts', cwd: '/srv/openclaw/sandboxes/workspace-1/src' })).toEqual({ containerPath: '/workspace/src/x.ts', relativePath: 'src/x.ts' });
    expect(bridge.pathMappings).toEqual([{ hostRoot: '/srv/openclaw/sandboxes/workspace-1', containerRoot: '/workspace' }]);
  });

  it('refuses every way out of /workspace, with a line naming the path', () => {
    for (const filePath of ['/etc/passwd', '/workspace/../root/.ssh/id_rsa', '../x', '/workspacex/y', '/srv/openclaw/sandboxes/workspace-10/x', '/']) {
      expect(() => bridge.resolvePath({ filePath })).toThrow(/is outside the sandbox's \/workspace; the file tools work in \/workspace \(use exec for other folders\)$/);
    }
    expect(() => bridge.resolvePath({ filePath: 'x', cwd: '/tmp' })).toThrow(/\/tmp\/x is outside/);
    expect(() => bridge.resolvePath({ filePath: '  ' })).toThrow(/empty path/);
  });
});
