import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, parseTerminalConfig } from '@berth/core';
import { createBerthPlatformRegistry } from './create-berth-platform-registry.js';
import { loadPlatformAdapters } from './load-platform-adapters.js';

// A gateway folder with third-party adapter packages installed in its node_modules.
const gateway = mkdtempSync(path.join(os.tmpdir(), 'berth-adapters-'));
afterAll(() => rmSync(gateway, { recursive: true, force: true }));

function install(name: string, source: string, exportsField: unknown = './index.js'): void {
  const folder = path.join(gateway, 'node_modules', ...name.split('/'));
  mkdirSync(path.join(folder, 'dist'), { recursive: true });
  writeFileSync(path.join(folder, 'package.json'), JSON.stringify({ name, type: 'module', exports: exportsField }));
  writeFileSync(path.join(folder, 'index.js'), source);
  writeFileSync(path.join(folder, 'dist', 'index.js'), source);
}

const ADAPTER = (platform: string) => `{
  specificationVersion: 'v1',
  platform: '${platform}',
  normalize: (raw) => String(raw),
  folderName: (id) => id.toLowerCase().replace(/[^a-z0-9]/g, '-') + '-' + Buffer.from(id).toString('hex'),
  envName: (id) => Buffer.from(id).toString('hex').toUpperCase(),
  idFromEnvName: (form) => /^([0-9A-F]{2})+$/.test(form) ? Buffer.from(form, 'hex').toString() : undefined,
}`;

install('@acme/berth-platform-signal', `export default ${ADAPTER('signal')};`);
install('@acme/berth-platform-matrix', `export default () => (${ADAPTER('matrix')});`);
install('@acme/not-an-adapter', `export default { hello: 'world' };`);
install('@acme/old-adapter', `export default { ...${ADAPTER('irc')}, specificationVersion: 'v0' };`);
// ESM-only, the way tsup-built packages usually ship: only an `import` condition.
install('@acme/berth-platform-xmpp', `export default ${ADAPTER('xmpp')};`, { '.': { types: './dist/index.d.ts', import: './dist/index.js' } });
install('@acme/throwing-factory', `export default () => { throw new Error('needs an API key'); };`);

describe('third-party platform adapters', () => {
  it('loads an ESM-only package (exports with only an import condition)', async () => {
    const adapters = await loadPlatformAdapters(['@acme/berth-platform-xmpp'], { resolveFrom: path.join(gateway, 'some', 'subfolder') });
    expect(adapters.map((adapter) => adapter.platform)).toEqual(['xmpp']);
  });

  it('loads an adapter object and an adapter factory from the gateway folder', async () => {
    const adapters = await loadPlatformAdapters(['@acme/berth-platform-signal', '@acme/berth-platform-matrix'], { resolveFrom: gateway });
    expect(adapters.map((adapter) => adapter.platform)).toEqual(['signal', 'matrix']);
  });

  it('registers them next to the built-in adapters, so their ids use their own forms', async () => {
    const config = parseTerminalConfig({ platform_adapters: ['@acme/berth-platform-signal'] });
    const registry = await createBerthPlatformRegistry(config, { resolveFrom: gateway });
    expect(registry.platforms()).toEqual(expect.arrayContaining(['telegram', 'signal']));
    expect(registry.envName({ platform: 'signal', id: 'ab-cd' })).toBe('61622D6364');
  });

  it.each([
    ['@acme/missing-adapter', /platform adapter package @acme\/missing-adapter is not installed; install it/],
    ['@acme/not-an-adapter', /@acme\/not-an-adapter does not default-export a v1 platform adapter/],
    ['@acme/old-adapter', /@acme\/old-adapter does not default-export a v1 platform adapter .*specificationVersion "v0"/],
    ['@acme/throwing-factory', /@acme\/throwing-factory .*its factory threw: needs an API key/],
  ])('refuses %s with a one-line ConfigError naming the package and the key', async (name, message) => {
    const error = await loadPlatformAdapters(['@acme/berth-platform-signal', name], { resolveFrom: gateway }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).key).toBe('terminal.platform_adapters.1');
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain('\n');
  });

  it('refuses a third-party adapter that takes a built-in platform', async () => {
    install('@acme/fake-telegram', `export default ${ADAPTER('telegram')};`);
    const config = parseTerminalConfig({ platform_adapters: ['@acme/fake-telegram'] });
    await expect(createBerthPlatformRegistry(config, { resolveFrom: gateway })).rejects.toThrow(
      /@acme\/fake-telegram cannot be registered: platform "telegram" already has an adapter/,
    );
  });
});
