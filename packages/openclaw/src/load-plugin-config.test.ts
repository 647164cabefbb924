import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadPluginConfig } from './load-plugin-config.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'berth-openclaw-config-'));
const environment = { HOME: root, HERMES_HOME: path.join(root, 'hermes') };
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('loadPluginConfig', () => {
  it("reads the terminal section from the plugin's own config in openclaw.json", () => {
    const loaded = loadPluginConfig(
      { terminal: { docker_image: 'debian:bookworm-slim', docker_forward_env: ['OPENAI_API_KEY'], container_memory: '1g' } },
      environment,
    );
    expect(loaded.terminal).toMatchObject({
      docker_image: 'debian:bookworm-slim',
      docker_forward_env: ['OPENAI_API_KEY'],
      container_memory: 1024,
      docker_user_sandbox: true,
    });
    expect(loaded.source).toBe('plugins.entries.berth.config.terminal');
  });

  it("reads a Berth config file the plugin config names, with ~ as the gateway user's home", () => {
    writeFileSync(path.join(root, 'berth.yaml'), 'terminal:\n  docker_image: alpine:3\n  lifetime_seconds: 60\n');
    const loaded = loadPluginConfig({ configFile: '~/berth.yaml' }, environment);
    expect(loaded.terminal).toMatchObject({ docker_image: 'alpine:3', lifetime_seconds: 60 });
    expect(loaded.source).toBe(path.join(root, 'berth.yaml'));
  });

  it('falls back to the default Berth config file, then to the defaults', () => {
    expect(loadPluginConfig(undefined, environment)).toMatchObject({
      source: 'the defaults (no Berth config file)',
      terminal: { docker_image: 'debian:bookworm-slim' },
    });
  });

  it('names a wrong terminal key with its full path in openclaw.json', () => {
    expect(() => loadPluginConfig({ terminal: { docker_imgae: 'x' } }, environment)).toThrow(
      'unknown key plugins.entries.berth.config.terminal.docker_imgae (did you mean plugins.entries.berth.config.terminal.docker_image?); remove it or check its spelling (known keys are listed in docs/configuration.md)',
    );
    expect(() => loadPluginConfig({ terminal: { container_memory: 'lots' } }, environment)).toThrow(
      /^plugins\.entries\.berth\.config\.terminal\.container_memory is the string "lots": expected megabytes/,
    );
  });

  it('refuses unknown plugin keys, wrong shapes, and both sources at once', () => {
    expect(() => loadPluginConfig({ termnal: {} }, environment)).toThrow(
      'unknown key plugins.entries.berth.config.termnal; the Berth plugin takes terminal, configFile, socket and client (see docs/openclaw.md)',
    );
    expect(() => loadPluginConfig({ terminal: 'docker' }, environment)).toThrow(
      'plugins.entries.berth.config.terminal is "docker": expected a mapping of terminal settings',
    );
    expect(() => loadPluginConfig({ socket: '' }, environment)).toThrow('plugins.entries.berth.config.socket is "": expected a non-empty path');
    expect(() => loadPluginConfig({ client: 'python' }, environment)).toThrow(
      'plugins.entries.berth.config.client is "python": expected "auto", "perl" or "node"',
    );
    expect(loadPluginConfig({ client: 'node' }, environment).plugin.client).toBe('node');
    expect(() => loadPluginConfig({ terminal: {}, configFile: '/etc/berth.yaml' }, environment)).toThrow(/has both terminal and configFile; keep one/);
  });

  it('says which named config file is missing', () => {
    expect(() => loadPluginConfig({ configFile: path.join(root, 'nope.yaml') }, environment)).toThrow(
      `config file ${path.join(root, 'nope.yaml')} does not exist`,
    );
  });
});
