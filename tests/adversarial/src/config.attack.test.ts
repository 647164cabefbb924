import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, IGNORED_GATEWAY_KEYS, isBerthError, terminalConfigSchema, type TerminalEnvironmentProviderV1 } from '@berth/core';
import { createBerthPlugin, releaseDisksUnder } from '@berth/gateway-plugin';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTACK_IMAGE, containersUnder, temporarySandboxDir, within } from './support/attack-gateway.js';

// Bad configuration through the plugin's register() and through the berth CLI: every key of the
// terminal: schema with a wrong type, an out-of-range value and a misspelt sibling, and malformed
// YAML. Each must give one clear line naming the key (exit 125 for the CLI) and start nothing.
const CLI = path.resolve(import.meta.dirname, '..', '..', '..', 'apps', 'gateway-plugin', 'dist', 'cli.js');
const home = temporarySandboxDir('config');
const sandboxDir = path.join(home, 'sandboxes');
const files = path.join(home, 'files');

/** For every checked key: a value of the wrong type, and one of the right type that is not allowed. */
const BAD_VALUES: Record<string, { wrongType: unknown; outOfRange: unknown; valid: unknown }> = {
  backend: { wrongType: 5, outOfRange: 'nomad', valid: 'docker' },
  // Other providers' settings are ignored; Berth's own under berth_docker would look honoured and do nothing.
  backends: { wrongType: 'berth_docker', outOfRange: { berth_docker: { docker_network: false } }, valid: { e2b: { template: 'base' } } },
  docker_user_sandbox: { wrongType: 'yes', outOfRange: 2, valid: true },
  docker_user_env_prefix: { wrongType: 42, outOfRange: 'hermes_user', valid: 'HERMES_USER' },
  docker_forward_env: { wrongType: 'GITHUB_TOKEN', outOfRange: ['1BAD'], valid: ['TEAM'] },
  docker_env: { wrongType: ['A=1'], outOfRange: { 'BAD-NAME': 'x' }, valid: { A: '1' } },
  docker_image: { wrongType: 42, outOfRange: 'has space:latest', valid: ATTACK_IMAGE },
  container_cpu: { wrongType: 'two', outOfRange: 0, valid: 1 },
  container_memory: { wrongType: true, outOfRange: 8, valid: 256 },
  container_disk: { wrongType: true, outOfRange: 8, valid: 1024 },
  container_persistent: { wrongType: 'no', outOfRange: 2, valid: true },
  docker_network: { wrongType: 'bridge', outOfRange: 0, valid: true },
  docker_network_pool: { wrongType: 10, outOfRange: '10.217.0.0/30', valid: '10.217.0.0/16' },
  docker_egress_allow: { wrongType: '10.1.2.3', outOfRange: ['10.1.2.3:99999'], valid: ['10.1.2.3:5432'] },
  docker_secret_hosts: {
    wrongType: ['GITHUB_TOKEN'],
    outOfRange: { GITHUB_TOKEN: ['140.82.112.6'] },
    valid: { GITHUB_TOKEN: ['api.github.com', 'raw.githubusercontent.com'] },
  },
  docker_egress: { wrongType: true, outOfRange: 'closed', valid: 'open' },
  docker_egress_domains: { wrongType: 'api.github.com', outOfRange: ['api.github.com'], valid: [] },
  timeout: { wrongType: '30s', outOfRange: -1, valid: 30 },
  lifetime_seconds: { wrongType: '5m', outOfRange: -1, valid: 300 },
  docker_freeze_seconds: { wrongType: '1h', outOfRange: -1, valid: 0 },
  docker_pool_size: { wrongType: 'two', outOfRange: 17, valid: 0 },
  sandbox_dir: { wrongType: 42, outOfRange: '', valid: sandboxDir },
  docker_volumes: { wrongType: '/a:/b', outOfRange: ['relative:/x'], valid: [] },
  env_passthrough: { wrongType: 'OPENAI_API_KEY', outOfRange: ['HERMES_USER_TELEGRAM_1_TOKEN'], valid: ['TEAM'] },
  docker_exec_mode: { wrongType: 1, outOfRange: 'ssh', valid: 'auto' },
  docker_mask_secrets: { wrongType: 'true', outOfRange: 1, valid: true },
  docker_max_running: { wrongType: true, outOfRange: -1, valid: 'auto' },
  docker_max_sandboxes: { wrongType: 'many', outOfRange: -1, valid: 64 },
  docker_remove_after_seconds: { wrongType: '7d', outOfRange: -1, valid: 0 },
  docker_pids_limit: { wrongType: 'many', outOfRange: 1, valid: 512 },
  docker_cap_add: { wrongType: 'CHOWN', outOfRange: ['sys_admin'], valid: ['CHOWN'] },
  docker_no_new_privileges: { wrongType: 'no', outOfRange: 0, valid: true },
  docker_read_only: { wrongType: 'yes', outOfRange: 1, valid: false },
  docker_tmp_size: { wrongType: true, outOfRange: '1k', valid: 64 },
  docker_nofile: { wrongType: 'lots', outOfRange: 1, valid: 4096 },
  docker_nproc: { wrongType: 'lots', outOfRange: 1, valid: 4096 },
  docker_runtime: { wrongType: 5, outOfRange: 'Bad Runtime', valid: 'runc' },
  docker_output_limit: { wrongType: '1MB', outOfRange: 10, valid: 1_048_576 },
  docker_file_limit: { wrongType: '50MB', outOfRange: 0, valid: 50 },
  docker_cgroup_parent: { wrongType: 5, outOfRange: '../escape', valid: 'auto' },
  docker_total_memory: { wrongType: true, outOfRange: 8, valid: 'auto' },
  docker_total_pids: { wrongType: 'many', outOfRange: 10, valid: 'auto' },
  docker_share_floor: { wrongType: true, outOfRange: 8, valid: 256 },
  audit_file: { wrongType: 5, outOfRange: 'audit.jsonl', valid: '/var/log/berth-audit.jsonl' },
  audit_real_user_ids: { wrongType: 'yes', outOfRange: 1, valid: false },
  audit_max_mb: { wrongType: '64MB', outOfRange: 0, valid: 64 },
  audit_keep: { wrongType: 'five', outOfRange: 0, valid: 5 },
  // Port 0: a generated config that starts the listener never finds its port taken.
  metrics_listen: { wrongType: 9464, outOfRange: 'localhost', valid: '127.0.0.1:0' },
  metrics_real_user_ids: { wrongType: 'yes', outOfRange: 1, valid: false },
  user_commands_per_minute: { wrongType: 'many', outOfRange: -1, valid: 0 },
  user_concurrent_commands: { wrongType: 'many', outOfRange: -1, valid: 0 },
  user_cpu_seconds_per_day: { wrongType: 'a day', outOfRange: -1, valid: 0 },
  docker_identity_links: { wrongType: 'a,b', outOfRange: [['telegram:1']], valid: [] },
  platform_adapters: { wrongType: 'x', outOfRange: [''], valid: [] },
  generic_platforms: { wrongType: 'discord', outOfRange: ['Discord'], valid: ['discord'] },
  kubernetes_namespace: { wrongType: 7, outOfRange: 'Berth_Sandboxes', valid: 'berth' },
  kubernetes_kubeconfig: { wrongType: ['a'], outOfRange: '', valid: '/etc/berth/kubeconfig' },
  kubernetes_context: { wrongType: false, outOfRange: '', valid: 'berth' },
  kubernetes_storage_class: { wrongType: 3, outOfRange: 'Fast SSD', valid: 'fast-ssd' },
};

/** Malformed YAML files, each with what its one line must mention. */
const MALFORMED_YAML: Array<{ name: string; text: string; mentions: RegExp }> = [
  { name: 'an unclosed flow list', text: 'terminal:\n  timeout: [1,\n', mentions: /line \d+/ },
  { name: 'a tab for indentation', text: 'terminal:\n\ttimeout: 5\n', mentions: /line \d+/ },
  { name: 'a duplicate key', text: 'terminal:\n  timeout: 1\n  timeout: 2\n', mentions: /line \d+/ },
  { name: 'terminal as a list', text: 'terminal:\n  - timeout\n', mentions: /terminal/ },
  { name: 'a document that is a list', text: '- terminal\n', mentions: /mapping/ },
  { name: 'an unclosed quote', text: 'terminal:\n  docker_image: "busybox\n', mentions: /line \d+/ },
];

interface Case {
  readonly name: string;
  readonly section: Record<string, unknown>;
  readonly key: string;
}

/** Bad values beyond the table's one out-of-range value per key, for keys with more than one way to be wrong. */
const MORE_BAD_VALUES: Case[] = [
  {
    name: 'docker_secret_hosts: a top-level domain',
    section: { docker_secret_hosts: { GITHUB_TOKEN: ['*.com'] } },
    key: 'terminal.docker_secret_hosts.GITHUB_TOKEN.0',
  },
  {
    name: 'docker_secret_hosts: a port',
    section: { docker_secret_hosts: { GITHUB_TOKEN: ['api.github.com', 'api.github.com:443'] } },
    key: 'terminal.docker_secret_hosts.GITHUB_TOKEN.1',
  },
  { name: 'docker_secret_hosts: no host', section: { docker_secret_hosts: { GITHUB_TOKEN: [] } }, key: 'terminal.docker_secret_hosts.GITHUB_TOKEN' },
  {
    name: 'docker_secret_hosts: a bad variable name',
    section: { docker_secret_hosts: { 'GITHUB-TOKEN': ['api.github.com'] } },
    key: 'terminal.docker_secret_hosts.GITHUB-TOKEN',
  },
  { name: 'docker_secret_hosts: a reserved name', section: { docker_secret_hosts: { PATH: ['api.github.com'] } }, key: 'terminal.docker_secret_hosts.PATH' },
  {
    name: 'docker_secret_hosts: a name in docker_env',
    section: { docker_env: { GITHUB_TOKEN: 'ghp_written_in_the_config' }, docker_secret_hosts: { GITHUB_TOKEN: ['api.github.com'] } },
    key: 'terminal.docker_secret_hosts.GITHUB_TOKEN',
  },
  {
    name: 'docker_egress_domains: an address',
    section: { docker_egress: 'allowlist', docker_egress_domains: ['140.82.112.6'] },
    key: 'terminal.docker_egress_domains.0',
  },
  {
    name: 'docker_egress_domains: a top-level domain',
    section: { docker_egress: 'allowlist', docker_egress_domains: ['*.com'] },
    key: 'terminal.docker_egress_domains.0',
  },
  {
    name: 'docker_egress_domains: with docker_egress open',
    section: { docker_egress: 'open', docker_egress_domains: ['api.github.com'] },
    key: 'terminal.docker_egress_domains',
  },
];

const cases: Case[] = [
  ...Object.entries(BAD_VALUES).flatMap(([key, values]) => [
    { name: `${key}: wrong type`, section: { [key]: values.wrongType }, key: `terminal.${key}` },
    { name: `${key}: out of range`, section: { [key]: values.outOfRange }, key: `terminal.${key}` },
    // A key unknown to Berth is refused when it looks like a misspelling of a Berth key (one far from
    // every key is accepted with a warning: a newer host's own setting, docs/configuration.md).
    { name: `${key}: misspelt sibling`, section: { [key]: values.valid, [`${key}${key.at(-1)}`]: values.valid }, key: `terminal.${key}${key.at(-1)}` },
  ]),
  ...MORE_BAD_VALUES,
];

/** Registers the plugin with `config` (or the default file under `home`); returns the error or the provider. */
async function register(config: unknown, environment: Record<string, string> = { HERMES_HOME: home }): Promise<Error | TerminalEnvironmentProviderV1> {
  const providers: TerminalEnvironmentProviderV1[] = [];
  const plugin = createBerthPlugin();
  try {
    await plugin.register({
      specificationVersion: 'v1',
      terminal: { specificationVersion: 'v1', registerEnvironmentProvider: (provider) => void providers.push(provider) },
      ...(config !== undefined ? { config } : {}),
      environment,
    });
    expect(providers).toHaveLength(1);
    return providers[0]!;
  } catch (error) {
    expect(providers).toEqual([]);
    return error as Error;
  } finally {
    await plugin.close();
  }
}

/** Runs `berth exec --config FILE -- true` as a subprocess. */
function cli(file: string): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, 'exec', '--config', file, '--', 'true'],
      { env: { PATH: process.env.PATH ?? '', HERMES_HOME: home, TERMINAL_SANDBOX_DIR: sandboxDir }, timeout: 30_000 },
      (error, stdout, stderr) => resolve({ status: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

/** Runs `tasks` with at most `size` at once. */
async function pool<T, R>(items: readonly T[], size: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: size }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await task(items[index]!);
      }
    }),
  );
  return results;
}

function expectOneLineNaming(message: string, key: string): void {
  expect(message.trim().split('\n')).toHaveLength(1);
  expect(message).toContain(key);
}

beforeAll(() => {
  mkdirSync(sandboxDir, { recursive: true });
  mkdirSync(files, { recursive: true });
});

afterAll(async () => {
  await releaseDisksUnder(home);
  rmSync(home, { recursive: true, force: true });
});

describe('bad configuration is refused with one clear line naming the key, and nothing starts', () => {
  it('the table covers every key of the terminal: schema (ignored gateway keys are accepted as documented)', async () => {
    const keys = Object.keys(terminalConfigSchema.shape).sort();
    expect([...Object.keys(BAD_VALUES), ...IGNORED_GATEWAY_KEYS].sort()).toEqual(keys);
    // The Python gateway's keys that Berth ignores take any value and start nothing.
    for (const key of IGNORED_GATEWAY_KEYS) {
      const outcome = await register({ [key]: { anything: [1, 'two'] }, docker_image: ATTACK_IMAGE, sandbox_dir: sandboxDir });
      expect({ key, error: outcome instanceof Error ? outcome.message : undefined }).toEqual({ key, error: undefined });
    }
  });

  it(`through register(): ${cases.length} cases (wrong type, out of range, misspelt sibling for each key, and more bad values of some) each throw ConfigError naming the key`, async () => {
    for (const testCase of cases) {
      const outcome = await register({ sandbox_dir: sandboxDir, docker_image: ATTACK_IMAGE, ...testCase.section });
      expect({ name: testCase.name, isConfigError: outcome instanceof ConfigError }).toEqual({ name: testCase.name, isConfigError: true });
      const error = outcome as ConfigError;
      expect({ name: testCase.name, key: error.key.startsWith(testCase.key) }).toEqual({ name: testCase.name, key: true });
      expectOneLineNaming(error.message, testCase.key);
    }
  });

  it(`through the berth CLI: the same ${cases.length} cases each exit 125 with one line on stderr naming the key`, async () => {
    const results = await pool(cases, 4, async (testCase) => {
      const file = path.join(files, `${testCase.name.replace(/[^a-z0-9]+/gi, '-')}.yaml`);
      // JSON is YAML: the section is written exactly as given.
      writeFileSync(file, JSON.stringify({ terminal: { sandbox_dir: sandboxDir, docker_image: ATTACK_IMAGE, ...testCase.section } }));
      return { testCase, run: await cli(file) };
    });
    for (const { testCase, run } of results) {
      expect({ name: testCase.name, status: run.status, stdout: run.stdout }).toEqual({ name: testCase.name, status: 125, stdout: '' });
      expect(run.stderr).toMatch(/^berth: /);
      expectOneLineNaming(run.stderr, testCase.key);
    }
  });

  it('malformed YAML, through the CLI and through register() reading the default file: one line naming the file and where, exit 125', async () => {
    for (const malformed of MALFORMED_YAML) {
      const file = path.join(files, `${malformed.name.replace(/[^a-z0-9]+/gi, '-')}.yaml`);
      writeFileSync(file, malformed.text);
      const run = await cli(file);
      expect({ name: malformed.name, status: run.status, stdout: run.stdout }).toEqual({ name: malformed.name, status: 125, stdout: '' });
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toContain(file);
      expect(run.stderr).toMatch(malformed.mentions);
      const defaultHome = path.join(files, `home-${malformed.name.replace(/[^a-z0-9]+/gi, '-')}`);
      mkdirSync(defaultHome, { recursive: true });
      writeFileSync(path.join(defaultHome, 'config.yaml'), malformed.text);
      const outcome = await register(undefined, { HERMES_HOME: defaultHome });
      expect(outcome).toBeInstanceOf(ConfigError);
      expect((outcome as Error).message.split('\n')).toHaveLength(1);
      expect((outcome as Error).message).toContain(path.join(defaultHome, 'config.yaml'));
    }
  });

  it('nothing was started by any refused configuration: no container, no folder under the sandbox root', async () => {
    expect(readdirSync(sandboxDir)).toEqual([]);
    expect(await containersUnder(sandboxDir)).toEqual([]);
    expect(await containersUnder(home)).toEqual([]);
  });
});

describe('fuzz: generated configurations give a valid start or a ConfigError, never a crash or a hang', () => {
  const valueFor = (key: string): fc.Arbitrary<unknown> => {
    const known = BAD_VALUES[key];
    const samples = known ? [known.valid, known.wrongType, known.outOfRange] : [null];
    return fc.oneof(fc.constantFrom(...samples), fc.anything({ maxDepth: 2 }), fc.integer(), fc.double(), fc.string(), fc.boolean());
  };
  const section = fc.record(
    Object.fromEntries(
      [...Object.keys(BAD_VALUES), 'unknown_key', 'Timeout'].map((key) => [
        key,
        key === 'platform_adapters' ? fc.constantFrom([], ['@berth/not-installed'], [''], 'x') : valueFor(key),
      ]),
    ),
    { requiredKeys: [] },
  );
  const config = fc.oneof(section, fc.anything({ maxDepth: 2 }));

  it('250 generated configs through register(), each bounded to 5 s', async () => {
    let started = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(config, async (generated) => {
        // A generated sandbox_dir is harmless (register creates nothing), but keep the image local.
        const outcome = await within(5_000, `register() with ${JSON.stringify(generated)?.slice(0, 200)}`, register(generated));
        if (outcome instanceof Error) {
          expect(isBerthError(outcome) && outcome instanceof ConfigError ? 'ConfigError' : `${outcome.name}: ${outcome.message}`).toBe('ConfigError');
          expect(outcome.message.split('\n')).toHaveLength(1);
          refused++;
        } else {
          started++;
        }
      }),
      { numRuns: 250 },
    );
    console.log(`fuzz: ${started} valid starts, ${refused} ConfigErrors`);
    expect(started + refused).toBe(250);
  });
});
