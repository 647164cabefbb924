import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, parseConfigText, parseTerminalConfig } from './config.js';
import { ConfigError } from './errors.js';

const message = (fn: () => unknown): string => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
};

describe('config', () => {
  it('fills every default', () => {
    const config = parseTerminalConfig({});
    expect(config).toMatchObject({
      backend: 'docker',
      docker_user_sandbox: true,
      docker_user_env_prefix: 'HERMES_USER',
      docker_forward_env: [],
      docker_env: {},
      container_persistent: true,
      docker_network: true,
    });
  });

  it('reads sizes in megabytes or with a unit', () => {
    expect(parseTerminalConfig({ container_memory: 512 }).container_memory).toBe(512);
    expect(parseTerminalConfig({ container_memory: '2g' }).container_memory).toBe(2048);
  });

  it('names an unknown key', () => {
    expect(message(() => parseTerminalConfig({ docker_imag: 'x' }))).toBe(
      'unknown key terminal.docker_imag; remove it or check its spelling (known keys are listed in docs/configuration.md)',
    );
  });

  it('names a key of the wrong type and what was expected', () => {
    expect(message(() => parseTerminalConfig({ container_cpu: 'lots' }))).toMatch(/^terminal\.container_cpu is the string "lots": expected a number$/);
    expect(message(() => parseTerminalConfig({ docker_forward_env: ['OK', 'not ok'] }))).toMatch(/^terminal\.docker_forward_env\.1 .*variable name/);
    expect(message(() => parseTerminalConfig({ docker_user_env_prefix: 'hermes-user' }))).toMatch(/docker_user_env_prefix.*HERMES_USER/);
  });

  it('does not echo a value from docker_env in its message', () => {
    expect(message(() => parseTerminalConfig({ docker_env: { 'bad name': 'ghp_secret' } }))).not.toContain('ghp_secret');
    expect(message(() => parseTerminalConfig({ docker_env: { TOKEN: { nested: 'ghp_secret' } } }))).not.toContain('ghp_secret');
  });

  it('reports malformed YAML with its line', () => {
    expect(message(() => parseConfigText('terminal:\n  backend: [docker\n', 'config.yaml'))).toMatch(/^config\.yaml is not valid YAML at line \d+/);
  });

  it('refuses a terminal section that is not a mapping', () => {
    expect(message(() => parseConfigText('terminal: 3\n', 'config.yaml'))).toMatch(/terminal in config\.yaml is 3: expected a mapping/);
  });

  it('ignores other sections of the gateway config', () => {
    expect(parseConfigText('model: x\nterminal:\n  backend: podman\n', 'c.yaml').backend).toBe('podman');
  });

  it('uses defaults when the default file is absent, and fails when an explicit one is', () => {
    const home = mkdtempSync(path.join(tmpdir(), 'berth-config-'));
    expect(loadConfig({ environment: { HERMES_HOME: home } }).file).toBeUndefined();
    expect(message(() => loadConfig({ file: path.join(home, 'missing.yaml'), environment: {} }))).toMatch(/does not exist/);
    writeFileSync(path.join(home, 'config.yaml'), 'terminal:\n  docker_image: alpine:3\n');
    const loaded = loadConfig({ environment: { HERMES_HOME: home } });
    expect(loaded.file).toBe(path.join(home, 'config.yaml'));
    expect(loaded.config.docker_image).toBe('alpine:3');
  });
});
