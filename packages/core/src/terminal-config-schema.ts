import { z } from 'zod';
import { capability, egressDomain, egressException, megabytes, secretHosts, volume } from './config-values.js';
import { egressExceptionProblem } from './egress-exception.js';
import { PLATFORM_NAME_PATTERN } from './identity.js';
import { LISTEN_ADDRESS_FORMS, parseListenAddress } from './listen-address.js';
import { DEFAULT_COMMAND_TIMEOUT_SECONDS, MAX_COMMAND_TIMEOUT_SECONDS } from './request-protocol.js';
import { reservedVariableReason } from './reserved-variables.js';

/** Variable names: what POSIX shells accept. */
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** The user-variable prefix: upper-case words joined by `_`. */
const ENV_PREFIX = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/;

/**
 * The IPv4 range each sandbox's own /29 network is taken from when `docker_network_pool` says
 * none: the schema's default, and a driver's when it is made without the setting.
 */
export const DEFAULT_NETWORK_POOL = '10.217.0.0/16';

const variableName = z.string().regex(VARIABLE_NAME, { message: 'expected a variable name like GITHUB_TOKEN' });

/**
 * Keys of Hermes Agent's own `terminal:` section that mean nothing for a Berth sandbox: accepted
 * with any value, so one config file serves both, and named once as ignored by
 * `describeIgnoredKeys` (config.ts). Hermes 0.19.0's defaults and the settings its terminal tool
 * reads, and what newer upstream (0.21) writes, read at NousResearch/hermes-agent (docs/hermes-0.21.md):
 * `DEFAULT_CONFIG["terminal"]` in hermes_cli/config_defaults.py and `TERMINAL_CONFIG_ENV_MAP` in
 * hermes_cli/config.py at 0006718 (`degraded_mode`, `temp_dir`, `font_family`,
 * `oneshot_completion_wait_seconds`, `vercel_runtime`, `docker_shm_size`, `docker_snap_compat`,
 * `docker_shared_container_key`), the `terminal.bubblewrap_*` settings of
 * tools/environments/bubblewrap.py at 010c7a1, and `credential_files` of tools/credential_files.py.
 * A provider's own settings (`terminal.backends.<name>`) are the `backends` key's.
 */
export const IGNORED_GATEWAY_KEYS = [
  'auto_source_bashrc',
  'bubblewrap_binds',
  'bubblewrap_cpu_seconds',
  'bubblewrap_hide',
  'bubblewrap_home_allow',
  'bubblewrap_max_procs',
  'bubblewrap_memory_mb',
  'bubblewrap_profile',
  'credential_files',
  'cwd',
  'daemon_term_grace_seconds',
  'daytona_image',
  'degraded_mode',
  'docker_extra_args',
  'docker_mount_cwd_to_workspace',
  'docker_orphan_reaper',
  'docker_persist_across_processes',
  'docker_run_as_host_user',
  'docker_shared_container_key',
  'docker_shm_size',
  'docker_snap_compat',
  'env_type',
  'font_family',
  'home_mode',
  'local_persistent',
  'modal_image',
  'modal_mode',
  'oneshot_completion_wait_seconds',
  'persistent_shell',
  'shell_init_files',
  'singularity_image',
  'ssh_host',
  'ssh_key',
  'ssh_persistent',
  'ssh_port',
  'ssh_user',
  'temp_dir',
  'vercel_runtime',
] as const;

/** The name Hermes' provider API gives Berth: `terminal.backend: berth_docker`, and its entry under `terminal.backends`. */
export const BERTH_PROVIDER_NAME = 'berth_docker';

/** The terminal backends a config may name: Berth's engines, and `berth_docker`, the name Hermes' provider API gives Berth (meaning `docker`). */
const BACKENDS = ['docker', 'podman', 'kubernetes', BERTH_PROVIDER_NAME] as const;

/** A Kubernetes namespace name (a DNS-1123 label). */
const KUBERNETES_NAMESPACE = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/;
/** A Kubernetes object name such as a storage class (a DNS-1123 subdomain). */
const KUBERNETES_NAME = /^(?=.{1,253}$)[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$/;

/** The capabilities a shell needs to own, chmod and switch users among its own files. */
export const DEFAULT_CAPABILITIES = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID'] as const;

/**
 * The `terminal:` section of the gateway's config, keys spelled as the gateway spells them.
 * Every key has a default, so an absent file means a working configuration.
 */
export const terminalConfigSchema = z
  .strictObject({
    backend: z
      .enum(BACKENDS)
      .default('docker')
      .transform((value): 'docker' | 'podman' | 'kubernetes' => (value === BERTH_PROVIDER_NAME ? 'docker' : value)),
    docker_user_sandbox: z.boolean().default(true),
    docker_user_env_prefix: z.string().regex(ENV_PREFIX, { message: 'expected upper-case words joined by "_", like HERMES_USER' }).default('HERMES_USER'),
    docker_forward_env: z.array(variableName).default([]),
    docker_env: z
      .record(
        variableName,
        z
          .union([z.string(), z.number(), z.boolean()])
          .transform(String)
          .refine((value) => !value.includes('\u0000'), { message: 'contains a NUL byte, which no variable can hold; remove it' }),
      )
      .default({}),
    docker_image: z
      .string()
      .min(1)
      .regex(/^[^\s]+$/, { message: 'expected an image reference without spaces, like debian:bookworm-slim' })
      .default('debian:bookworm-slim'),
    container_cpu: z.number().positive().max(256).default(1),
    container_memory: megabytes.default(5120),
    // A hard limit per sandbox on /workspace and /root together (Hermes' key and default); 0: none.
    // On Kubernetes it is the size of each sandbox's claim.
    container_disk: z.union([z.literal(0), megabytes]).default(51_200),
    container_persistent: z.boolean().default(true),
    docker_network: z.boolean().default(true),
    // Berth's own: the IPv4 range each sandbox's own /29 network is taken from.
    docker_network_pool: z
      .string()
      .regex(/^(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\/(?:[89]|1\d|2[0-9])$/, {
        message: `expected an IPv4 range of /29 or larger, like ${DEFAULT_NETWORK_POOL}`,
      })
      .default(DEFAULT_NETWORK_POOL),
    timeout: z.number().positive().max(MAX_COMMAND_TIMEOUT_SECONDS).default(DEFAULT_COMMAND_TIMEOUT_SECONDS),
    lifetime_seconds: z.number().int().min(0).max(31_536_000).default(300),
    // Berth's own: a sandbox idle for lifetime_seconds is frozen (docker pause: its processes
    // stop, its memory stays, the next command thaws it at once) and stopped once frozen this
    // long (an hour by default: a conversation picked up within the hour starts at once); 0
    // stops it at lifetime_seconds (docs/sandbox-runtime.md).
    docker_freeze_seconds: z.number().int().min(0).max(31_536_000).default(3600),
    // Berth's own: how many started, anonymous sandboxes wait for new users; each is handed to
    // exactly one new user for its whole life (docs/sandbox-runtime.md, "The warm pool"). 0: none.
    docker_pool_size: z.number().int().min(0).max(16).default(0),
    sandbox_dir: z.string().min(1).optional(),
    docker_volumes: z.array(volume).default([]),
    // Hermes' name for variables that reach sandboxes from the gateway's environment: Berth adds
    // them to docker_forward_env, so every check on forwarded names applies to them too.
    env_passthrough: z.array(variableName).default([]),
    // What sandboxes may reach past the egress policy: `10.1.2.3`, `10.1.0.0/16`, `10.1.2.3:5432`, `db.internal:5432`.
    docker_egress_allow: z.array(egressException).default([]),
    // Berth's own, taking effect with the egress proxy (docs/brokered-secrets.md): brokered
    // variables. Each named variable (forwarded by docker_forward_env or env_passthrough, or a
    // user's own {PREFIX}_{PLATFORM}_{USER}_{NAME}) never enters a sandbox: the sandbox gets a
    // placeholder, which the proxy replaces by the value only in requests to these hosts.
    // A list of hosts (the value goes in Authorization and Proxy-Authorization, on port 443), or
    // { hosts, headers, query, ports } naming where else it goes (brokered-hosts.ts).
    docker_secret_hosts: z.record(variableName, secretHosts).default({}),
    // Berth's own, with the egress proxy: 'allowlist': sandboxes reach only the proxy and DNS, and
    // through the proxy only the hosts of docker_egress_domains (docker_egress_allow's addresses
    // still directly); 'open': the internet, as the egress policy allows.
    docker_egress: z.enum(['open', 'allowlist']).default('open'),
    // Berth's own, with the egress proxy: the hosts docker_egress: allowlist lets sandboxes reach,
    // by name and port (`api.github.com` on 443 and 80, `git.example.com:22`); never addresses.
    docker_egress_domains: z.array(egressDomain).default([]),
    // Berth's own keys.
    docker_exec_mode: z.enum(['auto', 'session', 'exec']).default('auto'),
    docker_mask_secrets: z.boolean().default(true),
    // 'auto': as many as the host's memory, CPUs and pid_max hold (see docs/configuration.md); 0: no cap.
    docker_max_running: z.union([z.literal('auto'), z.number().int().min(0)]).default('auto'),
    // Berth's own: one bound for all of an installation's sandboxes together, a parent cgroup
    // whose memory and pids limits keep the host and the gateway safe (docs/backend-docker.md).
    // auto: a parent of this installation's own; "" leaves each sandbox in the engine's default.
    docker_cgroup_parent: z
      .string()
      .regex(/^(?:auto|[A-Za-z0-9][A-Za-z0-9_.-]{0,63})?$/, { message: 'expected auto, "" or a cgroup name of letters, digits, "_", "." and "-"' })
      .default('auto'),
    // auto: 90 % of the engine host's memory, and half its pid_max.
    docker_total_memory: z.union([z.literal('auto'), megabytes]).default('auto'),
    docker_total_pids: z.union([z.literal('auto'), z.number().int().min(64).max(4_194_304)]).default('auto'),
    // The least memory a running sandbox's fair share of the bound is (docs/backend-docker.md#fair-share).
    docker_share_floor: megabytes.default(256),
    docker_max_sandboxes: z.number().int().min(0).default(256),
    docker_remove_after_seconds: z.number().int().min(0).max(315_360_000).default(604_800),
    docker_pids_limit: z.number().int().min(16).max(1_000_000).default(512),
    docker_cap_add: z.array(capability).default([...DEFAULT_CAPABILITIES]),
    docker_no_new_privileges: z.boolean().default(true),
    // Read-only by default: the container's own layer cannot fill the engine's disk; /tmp,
    // /var/tmp and /run are bounded tmpfs, /workspace and /root the user's disk.
    docker_read_only: z.boolean().default(true),
    docker_tmp_size: megabytes.default(512),
    docker_nofile: z.number().int().min(64).max(1_048_576).default(4096),
    docker_nproc: z.number().int().min(16).max(1_048_576).default(4096),
    docker_runtime: z
      .string()
      .regex(/^[a-z0-9._-]+$/)
      .optional(),
    docker_output_limit: z.number().int().min(1024).max(268_435_456).default(1_048_576),
    // Berth's own: the largest file, in megabytes, that goes between a chat and a sandbox
    // (an attachment put in, a file the agent names for delivery taken out). Telegram's bots
    // send at most 50 MB, Hermes' own remote fetch defaults to 50 MiB.
    docker_file_limit: z.number().int().min(1).max(2048).default(50),
    // Berth's own: the audit trail (docs/observability.md), one JSON line per command and per
    // sandbox event, appended to this file (an absolute path, or ~/…); absent: no audit trail.
    audit_file: z
      .string()
      .regex(/^(?:\/|~\/)[^\0]*$/, { message: 'expected an absolute path (or one under ~/), like /var/log/berth/audit.jsonl' })
      .optional(),
    // Real platform user ids in the audit trail instead of opaque per-user ids.
    audit_real_user_ids: z.boolean().default(false),
    // The audit file is rotated once it would pass this many megabytes; audit_keep old files are kept.
    audit_max_mb: z.number().int().min(1).max(65_536).default(64),
    audit_keep: z.number().int().min(1).max(100).default(5),
    // Berth's own: where the gateway plugin serves Prometheus metrics (GET /metrics); `:PORT` binds
    // loopback only. Absent: no listener (docs/observability.md).
    metrics_listen: z
      .string()
      .refine((value) => parseListenAddress(value) !== undefined, { message: `expected ${LISTEN_ADDRESS_FORMS}` })
      .optional(),
    // Real platform user ids on the metrics (berth_sandbox_info's user label); off, no metric names a user.
    metrics_real_user_ids: z.boolean().default(false),
    // Berth's own per-user limits, enforced before a command reaches the engine; 0: no limit.
    user_commands_per_minute: z.number().int().min(0).max(1_000_000).default(0),
    user_concurrent_commands: z.number().int().min(0).max(10_000).default(0),
    // CPU seconds one user's sandbox may use per UTC day, read from its cgroup; 0: no limit.
    user_cpu_seconds_per_day: z.number().int().min(0).max(8_640_000).default(0),
    docker_identity_links: z.array(z.array(z.string().min(3)).min(2, { message: 'a link needs at least two identities' })).default([]),
    platform_adapters: z.array(z.string().min(1)).default([]),
    // Berth's own: platforms without an adapter of their own that get core's generic adapter (ids
    // as the host gives them). Any other platform without an adapter is refused, naming the known
    // ones, so a mistyped platform never makes a new person.
    generic_platforms: z
      .array(
        z
          .string()
          .regex(PLATFORM_NAME_PATTERN, { message: 'expected a platform name: a lower-case letter and up to 31 lower-case letters or digits, e.g. discord' }),
      )
      .default([]),
    // Berth's own keys for backend: kubernetes (docs/backend-kubernetes.md).
    kubernetes_namespace: z
      .string()
      .regex(KUBERNETES_NAMESPACE, { message: 'expected a namespace name: lower-case letters, digits and "-", at most 63' })
      .default('berth'),
    kubernetes_kubeconfig: z.string().min(1).optional(),
    kubernetes_context: z.string().min(1).optional(),
    kubernetes_storage_class: z
      .string()
      .regex(KUBERNETES_NAME, { message: 'expected a storage class name: lower-case letters, digits, "-" and "."' })
      .optional(),
    // A newer Hermes' terminal providers' own settings, by provider name (docs/hermes-0.21.md).
    // Berth reads none of them: its own settings are this section's keys (docs/configuration.md).
    backends: z.record(z.string(), z.unknown()).nullable().optional(),
    ...Object.fromEntries(IGNORED_GATEWAY_KEYS.map((key) => [key, z.unknown().optional()])),
  })
  .superRefine((value, context) => {
    // One place for each setting: an entry here would look honoured and do nothing (docker_network: false, say).
    const own = value.backends?.[BERTH_PROVIDER_NAME];
    if (own !== undefined && own !== null && (typeof own !== 'object' || Array.isArray(own) || Object.keys(own).length > 0)) {
      const first = typeof own === 'object' && !Array.isArray(own) ? Object.keys(own)[0] : undefined;
      context.addIssue({
        code: 'custom',
        path: ['backends', BERTH_PROVIDER_NAME],
        message:
          `Berth reads its settings from the terminal: section itself, not from terminal.backends.${BERTH_PROVIDER_NAME}; ` +
          (first ? `move ${first} (and the rest) up to terminal.${first}` : `remove terminal.backends.${BERTH_PROVIDER_NAME}`),
      });
    }
    for (const name of Object.keys(value.docker_env ?? {})) {
      const reason = reservedVariableReason(name);
      if (reason) context.addIssue({ code: 'custom', path: ['docker_env', name], message: `${reason}; remove it` });
    }
    for (const name of Object.keys(value.docker_secret_hosts ?? {})) {
      const reason = reservedVariableReason(name);
      if (reason) context.addIssue({ code: 'custom', path: ['docker_secret_hosts', name], message: `${reason}; remove it` });
      else if (Object.hasOwn(value.docker_env ?? {}, name)) {
        // A value written in the config is readable by whoever reads the config: nothing to broker.
        context.addIssue({
          code: 'custom',
          path: ['docker_secret_hosts', name],
          message:
            `${name} is also in terminal.docker_env, whose values are written in the config and are no secret to broker; ` +
            `move its value to the gateway's environment, list ${name} in terminal.docker_forward_env and remove it from terminal.docker_env`,
        });
      }
    }
    // A security setting is never silently ignored: with egress open, a list of domains would restrict nothing.
    if (value.docker_egress === 'open' && (value.docker_egress_domains?.length ?? 0) > 0) {
      context.addIssue({
        code: 'custom',
        path: ['docker_egress_domains'],
        message:
          'terminal.docker_egress is open, so sandboxes reach every host and this list would be ignored; ' +
          'set terminal.docker_egress: allowlist, or remove docker_egress_domains',
      });
    }
    value.docker_egress_allow.forEach((entry, index) => {
      const problem = egressExceptionProblem(entry, value.docker_network_pool);
      if (problem) context.addIssue({ code: 'custom', path: ['docker_egress_allow', index], message: problem });
    });
    // A per-user variable forwarded to every sandbox would give one user's credential to everyone.
    const userHead = `${value.docker_user_env_prefix}_`;
    for (const key of ['docker_forward_env', 'env_passthrough'] as const) {
      value[key].forEach((name, index) => {
        const reason = reservedVariableReason(name);
        if (reason) context.addIssue({ code: 'custom', path: [key, index], message: `${reason}; remove it` });
        if (name.startsWith(userHead)) {
          context.addIssue({
            code: 'custom',
            path: [key, index],
            message: `${name} is a per-user variable; forwarding it would give one user's credential to everyone — remove it (it reaches its user by itself)`,
          });
        }
      });
    }
  });

/** A validated `terminal:` section with every default filled in. */
export type TerminalConfig = z.output<typeof terminalConfigSchema>;
/** What a user may write in the `terminal:` section. */
export type TerminalConfigInput = z.input<typeof terminalConfigSchema>;
