import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { parseTerminalConfig } from '@berth/core';
import { createBerthPlatformRegistry } from '@berth/gateway-plugin';
import { describe, expect, it } from 'vitest';

// The folder of this package: the gateway resolves `@acme/berth-platform-signal` from here, as
// it would from the folder a user installed the package in.
const packageFolder = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

describe('loading @acme/berth-platform-signal the way a user does', () => {
  it('is registered from terminal.platform_adapters by package name and canonicalises Signal ids', async () => {
    if (!existsSync(path.join(packageFolder, 'dist', 'index.js'))) {
      throw new Error('dist/index.js is missing: the gateway loads the built package; run "pnpm --filter @acme/berth-platform-signal build" first');
    }
    const config = parseTerminalConfig({ platform_adapters: ['@acme/berth-platform-signal'] });
    const registry = await createBerthPlatformRegistry(config, { resolveFrom: packageFolder });
    expect(registry.has('signal')).toBe(true);
    const identity = registry.parse('signal:A1B2C3D4-E5F6-4A7B-8C9D-0E1F2A3B4C5D');
    expect(identity).toEqual({ platform: 'signal', id: 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d' });
    expect(registry.folderName(identity)).toBe('signal@a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d');
    expect(registry.envName(identity)).toBe('A1B2C3D4E5F64A7B8C9D0E1F2A3B4C5D');
    // The generic adapter would have kept the upper-case spelling as a second user.
    expect(() => registry.parse('signal:PNI:a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d')).toThrow(/PNI/);
  });
});
