import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { describeIgnoredKeys, loadConfig, parseConfigText, parseTerminalConfig } from './config.js';
import { IGNORED_GATEWAY_KEYS } from './terminal-config-schema.js';
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

  it('names a misspelt key and the key it resembles', () => {
    expect(message(() => parseTerminalConfig({ docker_imag: 'x' }))).toBe(
      'unknown key terminal.docker_imag (did you mean terminal.docker_image?); remove it or check its spelling (known keys are listed in docs/configuration.md)',
    );
  });

  it('names a key of the wrong type and what was expected', () => {
    expect(message(() => parseTerminalConfig({ container_cpu: 'lots' }))).toMatch(/^terminal\.container_cpu is the string "lots": expected a number$/);
    expect(message(() => parseTerminalConfig({ docker_forward_env: ['OK', 'not ok'] }))).toMatch(/^terminal\.docker_forward_env\.1 .*variable name/);
    expect(message(() => parseTerminalConfig({ docker_user_env_prefix: 'hermes-user' }))).toMatch(/docker_user_env_prefix.*HERMES_USER/);
  });

  it('names a bad variable name in a mapping, and what a name looks like', () => {
    expect(message(() => parseTerminalConfig({ docker_env: { 'BAD-NAME': 'x' } }))).toBe(
      'terminal.docker_env.BAD-NAME is a string: expected a variable name like GITHUB_TOKEN, not "BAD-NAME"',
    );
    expect(message(() => parseTerminalConfig({ docker_env: ['A=1'] }))).toBe('terminal.docker_env is a list: expected a mapping');
  });

  it('keeps the audit trail and the per-user limits off by default, and names a relative audit file', () => {
    expect(parseTerminalConfig({})).toMatchObject({
      audit_real_user_ids: false,
      audit_max_mb: 64,
      audit_keep: 5,
      user_commands_per_minute: 0,
      user_concurrent_commands: 0,
      user_cpu_seconds_per_day: 0,
    });
    expect(parseTerminalConfig({}).audit_file).toBeUndefined();
    expect(parseTerminalConfig({ audit_file: '~/berth/audit.jsonl' }).audit_file).toBe('~/berth/audit.jsonl');
    expect(message(() => parseTerminalConfig({ audit_file: 'audit.jsonl' }))).toMatch(
      /^terminal\.audit_file .*expected an absolute path \(or one under ~\/\), like \/var\/log\/berth\/audit\.jsonl/,
    );
    expect(message(() => parseTerminalConfig({ user_commands_per_minute: -1 }))).toMatch(/^terminal\.user_commands_per_minute /);
  });

  it('does not echo a value from docker_env in its message', () => {
    expect(message(() => parseTerminalConfig({ docker_env: { 'bad name': 'ghp_secret' } }))).not.toContain('ghp_secret');
    expect(message(() => parseTerminalConfig({ docker_env: { TOKEN: { nested: 'ghp_secret' } } }))).not.toContain('ghp_secret');
  });

  it('refuses an egress exception inside the pool, or a range inside link-local, in one line naming it; keeps ranges that merely overlap them', () => {
    expect(message(() => parseTerminalConfig({ docker_egress_allow: ['192.168.1.0/24', '10.217.4.5:80'] }))).toMatch(
      /^terminal\.docker_egress_allow\.1 is the string "10\.217\.4\.5:80": 10\.217\.4\.5:80 lies in terminal\.docker_network_pool 10\.217\.0\.0\/16, the sandboxes' own addresses, which no exception opens; remove it$/,
    );
    expect(message(() => parseTerminalConfig({ docker_network_pool: '10.50.0.0/16', docker_egress_allow: ['10.50.0.0/20'] }))).toMatch(
      /lies in terminal\.docker_network_pool 10\.50\.0\.0\/16/,
    );
    expect(message(() => parseTerminalConfig({ docker_egress_allow: ['169.254.0.0/16'] }))).toMatch(
      /a range in link-local 169\.254\.0\.0\/16 \(cloud metadata\), which a range never opens; name the one address/,
    );
    for (const wide of ['0.0.0.0/0', '0.0.0.0/1', '128.0.0.0/7:443']) {
      expect(message(() => parseTerminalConfig({ docker_egress_allow: [wide] }))).toMatch(/is wider than a \/8: it would open every private network at once/);
    }
    expect(parseTerminalConfig({ docker_egress_allow: ['10.0.0.0/8', '169.254.169.254:80', 'db.internal:5432'] }).docker_egress_allow).toHaveLength(3);
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
    onTestFinished(() => rmSync(home, { recursive: true, force: true }));
    expect(loadConfig({ environment: { HERMES_HOME: home } }).file).toBeUndefined();
    expect(message(() => loadConfig({ file: path.join(home, 'missing.yaml'), environment: {} }))).toMatch(/does not exist/);
    writeFileSync(path.join(home, 'config.yaml'), 'terminal:\n  docker_image: alpine:3\n');
    const loaded = loadConfig({ environment: { HERMES_HOME: home } });
    expect(loaded.file).toBe(path.join(home, 'config.yaml'));
    expect(loaded.config.docker_image).toBe('alpine:3');
  });

  describe("Hermes Agent's own terminal: keys", () => {
    // Hermes 0.19.0's default terminal: section as `hermes config` writes it, plus the keys its
    // terminal tool reads (docker_orphan_reaper, docker_persist_across_processes, sandbox_dir).
    const HERMES_0_19_0_TERMINAL = `
terminal:
  backend: docker
  modal_mode: auto
  cwd: .
  timeout: 180
  lifetime_seconds: 300
  env_passthrough: []
  shell_init_files: []
  auto_source_bashrc: true
  docker_image: nikolaik/python-nodejs:python3.11-nodejs20
  docker_forward_env: []
  docker_env: {}
  singularity_image: docker://nikolaik/python-nodejs:python3.11-nodejs20
  modal_image: nikolaik/python-nodejs:python3.11-nodejs20
  daytona_image: nikolaik/python-nodejs:python3.11-nodejs20
  container_cpu: 1
  container_memory: 5120
  container_disk: 51200
  container_persistent: true
  docker_volumes: []
  docker_mount_cwd_to_workspace: false
  docker_extra_args: []
  docker_run_as_host_user: false
  docker_network: true
  docker_persist_across_processes: true
  docker_orphan_reaper: true
  sandbox_dir: /srv/hermes/sandboxes
  persistent_shell: true
  daemon_term_grace_seconds: 2.0
  home_mode: auto
  ssh_host: null
  ssh_user: null
  ssh_port: 22
  ssh_key: null
`;

    it('accepts a real Hermes 0.19.0 config and names the keys it ignores in one line', () => {
      const config = parseConfigText(HERMES_0_19_0_TERMINAL, 'config.yaml');
      expect(config).toMatchObject({ backend: 'docker', timeout: 180, container_memory: 5120, sandbox_dir: '/srv/hermes/sandboxes', docker_network: true });
      const warning = describeIgnoredKeys(config)!;
      expect(warning.split('\n')).toHaveLength(1);
      for (const key of [
        'docker_orphan_reaper',
        'modal_mode',
        'daemon_term_grace_seconds',
        'home_mode',
        'shell_init_files',
        'auto_source_bashrc',
        'docker_run_as_host_user',
        'docker_extra_args',
        'docker_persist_across_processes',
      ]) {
        expect(warning).toContain(`terminal.${key}`);
      }
      // Keys Berth honours are not called ignored.
      for (const key of ['timeout', 'docker_image', 'sandbox_dir', 'env_passthrough', 'docker_network']) expect(warning).not.toContain(`terminal.${key},`);
    });

    it('accepts each key Hermes knows with the value types Hermes uses, and still refuses a misspelt Berth key', () => {
      for (const key of IGNORED_GATEWAY_KEYS) expect(() => parseTerminalConfig({ [key]: { any: ['value'] } })).not.toThrow();
      expect(message(() => parseTerminalConfig({ docker_orphan_reaper: true, docker_pids_limt: 100 }))).toBe(
        'unknown key terminal.docker_pids_limt (did you mean terminal.docker_pids_limit?); remove it or check its spelling (known keys are listed in docs/configuration.md)',
      );
    });

    it('says nothing when no ignored key is set', () => {
      expect(describeIgnoredKeys(parseTerminalConfig({ timeout: 30 }))).toBeUndefined();
    });

    it('honours env_passthrough as more forwarded names, checked like docker_forward_env', () => {
      const config = parseTerminalConfig({ docker_forward_env: ['TEAM'], env_passthrough: ['OPENAI_API_KEY', 'TEAM'] });
      expect(config.docker_forward_env).toEqual(['TEAM', 'OPENAI_API_KEY']);
      expect(message(() => parseTerminalConfig({ env_passthrough: ['not a name'] }))).toMatch(/^terminal\.env_passthrough\.0 .*variable name/);
      const perUser = message(() => parseTerminalConfig({ env_passthrough: ['HERMES_USER_TELEGRAM_1_TOKEN'] }));
      expect(perUser).toMatch(/^terminal\.env_passthrough\.0 .*per-user variable/);
    });

    it("reads berth_docker, the name Hermes' provider API gives Berth, as the docker backend", () => {
      expect(parseTerminalConfig({ backend: 'berth_docker' }).backend).toBe('docker');
      expect(message(() => parseTerminalConfig({ backend: 'local' }))).toMatch(
        /^terminal\.backend is the string "local": expected one of "docker", "podman", "kubernetes", "berth_docker"$/,
      );
    });
  });

  describe('the brokered-secret and egress-by-domain keys (docs/brokered-secrets.md)', () => {
    it('default to nothing brokered, egress open and no domains', () => {
      expect(parseTerminalConfig({})).toMatchObject({ docker_secret_hosts: {}, docker_egress: 'open', docker_egress_domains: [] });
    });

    it('read brokered variables with their hosts, exact or "*." wildcards, kept as written', () => {
      const config = parseTerminalConfig({
        docker_forward_env: ['GITHUB_TOKEN'],
        docker_secret_hosts: { GITHUB_TOKEN: ['api.github.com', '*.api.example.com'], NPM_TOKEN: ['registry.npmjs.org'] },
      });
      expect(Object.keys(config.docker_secret_hosts)).toEqual(['GITHUB_TOKEN', 'NPM_TOKEN']);
      expect([...config.docker_secret_hosts.GITHUB_TOKEN!]).toEqual(['api.github.com', '*.api.example.com']);
      expect([...config.docker_secret_hosts.NPM_TOKEN!]).toEqual(['registry.npmjs.org']);
    });

    it('read the allow-list mode with its domains', () => {
      const config = parseTerminalConfig({ docker_egress: 'allowlist', docker_egress_domains: ['api.github.com', '*.api.example.com'] });
      expect(config).toMatchObject({ docker_egress: 'allowlist', docker_egress_domains: ['api.github.com', '*.api.example.com'] });
      expect(parseTerminalConfig({ docker_egress: 'allowlist' }).docker_egress_domains).toEqual([]);
      expect(parseTerminalConfig({ docker_egress: 'open', docker_egress_domains: [] }).docker_egress).toBe('open');
    });

    it('refuse a host that is an address, has a port, or covers a top-level domain, naming the entry', () => {
      // The message never repeats the entry (it may be a pasted token): the path names it.
      const notAHost = (_entry: string) =>
        'not a host name or "*.domain" pattern (an address, a port or a "*" elsewhere is not allowed); write it like "api.github.com" or "*.example.com"';
      expect(message(() => parseTerminalConfig({ docker_secret_hosts: { GITHUB_TOKEN: ['10.1.2.3'] } }))).toBe(
        `terminal.docker_secret_hosts.GITHUB_TOKEN.0 is a string: ${notAHost('10.1.2.3')}`,
      );
      expect(message(() => parseTerminalConfig({ docker_secret_hosts: { GITHUB_TOKEN: ['api.github.com', 'api.github.com:443'] } }))).toBe(
        `terminal.docker_secret_hosts.GITHUB_TOKEN.1 is a string: ${notAHost('api.github.com:443')}`,
      );
      expect(message(() => parseTerminalConfig({ docker_secret_hosts: { GITHUB_TOKEN: ['*.com'] } }))).toBe(
        'terminal.docker_secret_hosts.GITHUB_TOKEN.0 is a string: covers a whole top-level domain; name the domain under it, like "*.example.com"',
      );
      expect(message(() => parseTerminalConfig({ docker_egress: 'allowlist', docker_egress_domains: ['api.github.com', '140.82.112.6'] }))).toBe(
        `terminal.docker_egress_domains.1 is the string "140.82.112.6": ${notAHost('140.82.112.6')}`,
      );
      expect(message(() => parseTerminalConfig({ docker_egress: 'allowlist', docker_egress_domains: ['*.com'] }))).toMatch(
        /^terminal\.docker_egress_domains\.0 .*covers a whole top-level domain/,
      );
    });

    it('refuse a brokered variable with no host, a bad or reserved name, or one whose value is written in docker_env', () => {
      expect(message(() => parseTerminalConfig({ docker_secret_hosts: { GITHUB_TOKEN: [] } }))).toBe(
        'terminal.docker_secret_hosts.GITHUB_TOKEN is a list: expected at least one host, ' +
          'like ["api.github.com"], that the value may be sent to; list them or remove the variable',
      );
      expect(message(() => parseTerminalConfig({ docker_secret_hosts: { 'GITHUB-TOKEN': ['api.github.com'] } }))).toBe(
        'terminal.docker_secret_hosts.GITHUB-TOKEN is a list: expected a variable name like GITHUB_TOKEN, not "GITHUB-TOKEN"',
      );
      expect(message(() => parseTerminalConfig({ docker_secret_hosts: { PATH: ['api.github.com'] } }))).toBe(
        'terminal.docker_secret_hosts.PATH is a list: PATH is set by the sandbox itself; remove it',
      );
      expect(message(() => parseTerminalConfig({ docker_secret_hosts: { __BERTH_CWD: ['api.github.com'] } }))).toMatch(
        /^terminal\.docker_secret_hosts\.__BERTH_CWD is a list: names starting with __berth .*; remove it$/,
      );
      expect(
        message(() => parseTerminalConfig({ docker_env: { GITHUB_TOKEN: 'ghp_written' }, docker_secret_hosts: { GITHUB_TOKEN: ['api.github.com'] } })),
      ).toBe(
        'terminal.docker_secret_hosts.GITHUB_TOKEN is a list: GITHUB_TOKEN is also in terminal.docker_env, ' +
          'whose values are written in the config and are no secret to broker; ' +
          "move its value to the gateway's environment, list GITHUB_TOKEN in terminal.docker_forward_env and remove it from terminal.docker_env",
      );
      expect(message(() => parseTerminalConfig({ docker_secret_hosts: ['GITHUB_TOKEN'] }))).toBe('terminal.docker_secret_hosts is a list: expected a mapping');
      expect(message(() => parseTerminalConfig({ docker_secret_hosts: { GITHUB_TOKEN: 'api.github.com' } }))).toBe(
        'terminal.docker_secret_hosts.GITHUB_TOKEN is a string: expected a list',
      );
    });

    it('refuse domains while egress is open (never silently ignored), and an unknown egress mode', () => {
      expect(message(() => parseTerminalConfig({ docker_egress_domains: ['api.github.com'] }))).toBe(
        'terminal.docker_egress_domains is a list: terminal.docker_egress is open, so sandboxes reach every host and this list would be ignored; ' +
          'set terminal.docker_egress: allowlist, or remove docker_egress_domains',
      );
      expect(message(() => parseTerminalConfig({ docker_egress: 'open', docker_egress_domains: ['api.github.com'] }))).toMatch(
        /^terminal\.docker_egress_domains .*set terminal\.docker_egress: allowlist/,
      );
      expect(message(() => parseTerminalConfig({ docker_egress: 'closed' }))).toBe(
        'terminal.docker_egress is the string "closed": expected one of "open", "allowlist"',
      );
    });
  });

  describe('the Kubernetes keys', () => {
    it('reads backend: kubernetes with its namespace, kubeconfig, context, storage class and container_disk as the claim size', () => {
      expect(parseTerminalConfig({})).toMatchObject({ kubernetes_namespace: 'berth', container_disk: 51200 });
      expect(
        parseTerminalConfig({
          backend: 'kubernetes',
          kubernetes_namespace: 'team-a',
          kubernetes_context: 'prod',
          kubernetes_kubeconfig: '~/.kube/berth',
          kubernetes_storage_class: 'fast.ssd',
          container_disk: '10g',
        }),
      ).toMatchObject({
        backend: 'kubernetes',
        kubernetes_namespace: 'team-a',
        kubernetes_context: 'prod',
        kubernetes_kubeconfig: '~/.kube/berth',
        kubernetes_storage_class: 'fast.ssd',
        container_disk: 10240,
      });
    });

    it('refuses a namespace or storage class Kubernetes would refuse, naming the key', () => {
      expect(message(() => parseTerminalConfig({ kubernetes_namespace: 'Team_A' }))).toMatch(
        /^terminal\.kubernetes_namespace is the string "Team_A": expected a namespace name/,
      );
      expect(message(() => parseTerminalConfig({ kubernetes_storage_class: 'Fast SSD' }))).toMatch(
        /^terminal\.kubernetes_storage_class is the string "Fast SSD": expected a storage class name/,
      );
      expect(message(() => parseTerminalConfig({ container_disk: 'lots' }))).toMatch(/^terminal\.container_disk is the string "lots": expected megabytes/);
    });
  });
});
