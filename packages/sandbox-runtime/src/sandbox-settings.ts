import { parseTerminalConfig, type TerminalConfig } from '@berth/core';

/** The `terminal:` keys a sandbox runtime uses; a backend gets these and nothing else. */
export const SANDBOX_SETTING_KEYS = [
  'docker_image',
  'container_cpu',
  'container_memory',
  'container_disk',
  'docker_network',
  'docker_network_pool',
  'docker_egress_allow',
  'docker_secret_hosts',
  'docker_egress',
  'docker_egress_domains',
  'docker_volumes',
  'docker_exec_mode',
  'docker_mask_secrets',
  'docker_max_running',
  'docker_cgroup_parent',
  'docker_total_memory',
  'docker_total_pids',
  'docker_share_floor',
  'docker_max_sandboxes',
  'docker_remove_after_seconds',
  'docker_pids_limit',
  'docker_cap_add',
  'docker_no_new_privileges',
  'docker_read_only',
  'docker_tmp_size',
  'docker_nofile',
  'docker_nproc',
  'docker_runtime',
  'docker_output_limit',
  'timeout',
  'lifetime_seconds',
  'docker_freeze_seconds',
  'docker_pool_size',
  'audit_file',
  'audit_real_user_ids',
  'audit_max_mb',
  'audit_keep',
  'metrics_real_user_ids',
  'user_commands_per_minute',
  'user_concurrent_commands',
  'user_cpu_seconds_per_day',
] as const;

/** The settings of a sandbox runtime: the part of a validated `terminal:` section it reads. */
export type SandboxSettings = Pick<TerminalConfig, (typeof SANDBOX_SETTING_KEYS)[number]>;

/** What {@link sandboxSettings} takes: a validated config, or any part of a `terminal:` section. */
export type SandboxSettingsInput = Partial<Record<(typeof SANDBOX_SETTING_KEYS)[number], unknown>> | TerminalConfig;

/**
 * The runtime's settings out of a `terminal:` section, validated by core's one schema (so a
 * wrong value is a `ConfigError` naming its key) with every default filled in. Keys a runtime
 * does not use are dropped: a backend never sees the rest of the config.
 */
export function sandboxSettings(input: SandboxSettingsInput = {}): SandboxSettings {
  const picked: Record<string, unknown> = {};
  for (const key of SANDBOX_SETTING_KEYS) {
    const value = (input as Record<string, unknown>)[key];
    if (value !== undefined) picked[key] = value;
  }
  const config = parseTerminalConfig(picked);
  return Object.fromEntries(SANDBOX_SETTING_KEYS.filter((key) => config[key] !== undefined).map((key) => [key, config[key]])) as SandboxSettings;
}
