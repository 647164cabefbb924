import { describe, expect, it } from 'vitest';
import { describeIgnoredKeys, parseConfigText, parseTerminalConfig } from './config.js';
import { ConfigError } from './errors.js';
import { IGNORED_GATEWAY_KEYS, terminalConfigSchema } from './terminal-config-schema.js';

// Keys a config may hold beyond Berth's own (issue 43): a newer Hermes' own keys and other
// providers' settings are accepted and named in the one warning line; a key that looks like a
// misspelling of a Berth key stays an error naming the key it resembles.

const refusal = (section: Record<string, unknown>): ConfigError => {
  try {
    parseTerminalConfig(section);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error(`expected ${JSON.stringify(Object.keys(section))} to be refused`);
};

const BERTH_KEYS = Object.keys(terminalConfigSchema.shape).filter((key) => !(IGNORED_GATEWAY_KEYS as readonly string[]).includes(key));

// What upstream Hermes 0.21 writes under terminal: beyond 0.19.0's keys (docs/hermes-0.21.md).
const NEWER_HERMES = `
terminal:
  backend: berth_docker
  degraded_mode: warn
  temp_dir: ""
  font_family: ""
  timeout: 180
  oneshot_completion_wait_seconds: 600.0
  env_passthrough: []
  home_mode: auto
  docker_image: nikolaik/python-nodejs:python3.14-nodejs22
  vercel_runtime: node24
  docker_shm_size: 1g
  docker_snap_compat: false
  docker_shared_container_key: ""
  persistent_shell: true
  bubblewrap_profile: network
  bubblewrap_binds: []
  bubblewrap_memory_mb: 256
  bubblewrap_cpu_seconds: 30
  bubblewrap_max_procs: 256
  bubblewrap_home_allow: []
  bubblewrap_hide: []
  credential_files: [secrets/gcloud.json]
  backends:
    e2b:
      api_key: e2b_live_SECRETVALUE
      template: base
`;

describe('keys a config holds beyond Berth own', () => {
  it('a newer Hermes config parses, and its own keys and another provider are named in one warning line', () => {
    const config = parseConfigText(NEWER_HERMES, 'config.yaml');
    expect(config).toMatchObject({ backend: 'docker', timeout: 180 });
    const warning = describeIgnoredKeys(config)!;
    expect(warning.split('\n')).toHaveLength(1);
    expect(warning).toMatch(/^berth: ignoring /);
    for (const key of [
      'docker_shm_size',
      'docker_snap_compat',
      'docker_shared_container_key',
      'bubblewrap_profile',
      'bubblewrap_hide',
      'credential_files',
      'degraded_mode',
      'temp_dir',
    ]) {
      expect(warning).toContain(`terminal.${key}`);
    }
    expect(warning).toContain('terminal.backends.e2b: other terminal providers');
    // Names only: no value of any key, the provider's credential included.
    for (const value of ['e2b_live_SECRETVALUE', 'base', 'secrets/gcloud.json', '1g', 'network']) expect(warning).not.toContain(value);
    // Keys Berth honours are not called ignored.
    expect(warning).not.toContain('terminal.timeout');
    expect(warning).not.toContain('terminal.docker_image');
  });

  it('a key that neither Berth nor Hermes knows and that resembles no Berth key is accepted, named as unknown, its value never shown', () => {
    const config = parseTerminalConfig({ timeout: 30, team_notes: 'ghp_do_not_print', 'odd key\nwith a newline': 'x' });
    expect(config.timeout).toBe(30);
    const warning = describeIgnoredKeys(config)!;
    expect(warning).toBe(
      'berth: ignoring terminal.team_notes, terminal."odd key\\nwith a newline": unknown to Berth, so check the spelling of any meant for Berth (see docs/configuration.md)',
    );
    expect(warning.split('\n')).toHaveLength(1);
    expect(warning).not.toContain('ghp_do_not_print');
    // The unknown key does not reach the parsed config.
    expect(Object.keys(config)).not.toContain('team_notes');
  });

  it('a misspelt Berth key is an error naming it and the key it resembles', () => {
    const cases: [string, string][] = [
      ['docker_memroy', 'container_memory'], // Berth's memory key is container_memory: the rest after docker_ is one swap away
      ['docker_netwrok', 'docker_network'],
      ['timeuot', 'timeout'],
      ['docker_imagee', 'docker_image'],
      ['container_cpus', 'container_cpu'],
      ['kubernetes_namespce', 'kubernetes_namespace'],
      ['kubernetes_storage', 'kubernetes_storage_class'], // kubernetes_ keys are Berth's alone: any miss is an error
      ['backendss', 'backends'],
    ];
    for (const [misspelt, meant] of cases) {
      const error = refusal({ [misspelt]: 1 });
      expect({ misspelt, key: error.key }).toEqual({ misspelt, key: `terminal.${misspelt}` });
      expect({ misspelt, message: error.message }).toEqual({
        misspelt,
        message: `unknown key terminal.${misspelt} (did you mean terminal.${meant}?); remove it or check its spelling (known keys are listed in docs/configuration.md)`,
      });
    }
  });

  it('every Berth key with one letter doubled, dropped or swapped is refused, naming that key', () => {
    for (const key of BERTH_KEYS) {
      for (const misspelt of [`${key}${key.at(-1)}`, key.slice(0, -1), `${key.slice(0, 2)}${key[3]}${key[2]}${key.slice(4)}`]) {
        // backends less its s is backend, a key of its own.
        if (misspelt in terminalConfigSchema.shape) continue;
        expect({ misspelt, message: refusal({ [misspelt]: true }).message }).toEqual({
          misspelt,
          message: expect.stringContaining(`unknown key terminal.${misspelt} (did you mean terminal.`),
        });
      }
    }
  });

  it('a key of a Berth-only family is refused even far from every key; a docker_ key far from Berth keys is a newer host key, accepted', () => {
    expect(refusal({ berth_mode: 'x' }).message).toBe(
      'unknown key terminal.berth_mode; remove it or check its spelling (known keys are listed in docs/configuration.md)',
    );
    expect(refusal({ kubernetes_replicas: 3 }).message).toMatch(/^unknown key terminal\.kubernetes_replicas \(did you mean terminal\.kubernetes_/);
    const config = parseTerminalConfig({ docker_gpu_passthrough: true, container_registry_mirror: 'x' });
    expect(describeIgnoredKeys(config)).toContain('terminal.docker_gpu_passthrough, terminal.container_registry_mirror: unknown to Berth');
  });

  it('a misspelling of a Hermes key that Berth ignores anyway is named, not refused', () => {
    expect(describeIgnoredKeys(parseTerminalConfig({ docker_orphan_reapr: true }))).toContain('terminal.docker_orphan_reapr: unknown to Berth');
  });

  it('terminal.backends: other providers are ignored; settings under berth_docker are refused, naming the key to move', () => {
    expect(describeIgnoredKeys(parseTerminalConfig({ backends: { berth_docker: {}, modal: null } }))).toBe(
      "berth: ignoring terminal.backends.modal: other terminal providers' settings (see docs/configuration.md)",
    );
    expect(describeIgnoredKeys(parseTerminalConfig({ backends: null }))).toBeUndefined();
    const error = refusal({ backends: { berth_docker: { docker_network: false } } });
    expect(error.key).toBe('terminal.backends.berth_docker');
    expect(error.message).toBe(
      'terminal.backends.berth_docker is a mapping: Berth reads its settings from the terminal: section itself, not from terminal.backends.berth_docker; move docker_network (and the rest) up to terminal.docker_network',
    );
    expect(refusal({ backends: ['berth_docker'] }).message).toBe('terminal.backends is a list: expected a mapping');
  });

  it('the warning line names at most twenty keys and counts the rest', () => {
    const many = Object.fromEntries(Array.from({ length: 25 }, (_, index) => [`team_setting_${index}`, index]));
    const warning = describeIgnoredKeys(parseTerminalConfig(many))!;
    expect(warning).toContain('terminal.team_setting_19 and 5 more: unknown to Berth');
    expect(warning).not.toContain('terminal.team_setting_20');
  });

  it('a config with only Berth keys gets no warning line', () => {
    expect(describeIgnoredKeys(parseTerminalConfig({ timeout: 30, docker_pids_limit: 256, backend: 'berth_docker' }))).toBeUndefined();
  });
});
