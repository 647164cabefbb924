import { constants, statfsSync, statSync } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import {
  defaultConfigPath,
  hermesHome,
  isBerthError,
  resolveSandboxDir,
  type BackendDescription,
  type LoadedConfig,
  type SandboxBackendV1,
  type TerminalConfig,
} from '@berth/core';
import { createBackend } from '../create-backend.js';
import { createBerthResolver } from '../create-berth.js';
import { variableChecks } from './doctor-variables.js';
import { findIsolationRisks } from '../isolation-risks.js';
import { capacityReport, describeRunningCap, localHostSize, type HostSize } from '@berth/sandbox-runtime';
import { colorsFor, type CliIo } from './cli-io.js';
import { loadCliConfig } from './load-cli-config.js';
import type { CliOptions } from './parse-cli-arguments.js';

/** The outcome of one doctor check. */
export interface DoctorCheck {
  readonly name:
    | 'config'
    | 'engine'
    | 'backend'
    | 'image'
    | 'sandbox-root'
    | 'variables'
    | 'secrets'
    | 'egress'
    | 'isolation'
    | 'runtime'
    | 'capacity'
    | 'disk';
  readonly status: 'ok' | 'problem' | 'warning' | 'skipped';
  readonly detail: string;
  /** The one thing to do, for problems and warnings. */
  readonly fix?: string;
}

/** What `berth doctor --json` prints. */
export interface DoctorReport {
  readonly ok: boolean;
  readonly engine: {
    readonly name: string;
    readonly endpoint: string | null;
    readonly how: string | null;
    readonly reachable: boolean;
    readonly version: string | null;
    readonly apiVersion: string | null;
  };
  readonly config: { readonly file: string | null; readonly valid: boolean; readonly error: string | null };
  readonly image: { readonly name: string | null; readonly present: boolean | null };
  readonly sandboxRoot: { readonly path: string; readonly exists: boolean; readonly writable: boolean };
  readonly checks: readonly DoctorCheck[];
}

async function sandboxRootState(root: string): Promise<{ exists: boolean; writable: boolean; problem?: string }> {
  let existing = root;
  // The root is made on first use: what matters is that the nearest existing folder lets us.
  for (;;) {
    try {
      const stat = statSync(existing);
      if (!stat.isDirectory()) return { exists: existing === root, writable: false, problem: `${existing} is not a folder` };
      break;
    } catch {
      const parent = path.dirname(existing);
      if (parent === existing) break;
      existing = parent;
    }
  }
  try {
    await access(existing, constants.W_OK | constants.X_OK);
    return { exists: existing === root, writable: true };
  } catch {
    return { exists: existing === root, writable: false, problem: `${existing} is not writable by this user` };
  }
}

/** The running sandboxes' limits added up against the host: memory, CPUs, pids against pid_max. */
function capacityCheck(config: TerminalConfig, host: HostSize, sharedBound?: BackendDescription['sharedBound']): DoctorCheck {
  if (config.docker_max_running === 'auto' && sharedBound?.enforced)
    return { name: 'capacity', status: 'ok', detail: describeRunningCap(config, host, sharedBound) };
  const report = capacityReport(config, host);
  const cap = config.docker_max_running === 'auto' ? `${report.maxRunning} at once (docker_max_running: auto)` : `${report.maxRunning} at once`;
  const sums = `their limits add up to ${report.memoryMb.sum} of ${report.memoryMb.host} MB of memory, ${report.cpus.sum} of ${report.cpus.host} CPUs and ${report.pids.sum} of ${report.pids.host} pids (pid_max); at most ${config.docker_max_sandboxes || 'any number of'} sandboxes exist (docker_max_sandboxes)`;
  if (report.maxRunning === 0) {
    return {
      name: 'capacity',
      status: 'warning',
      detail: `docker_max_running is 0: any number of sandboxes run at once, each with ${config.container_memory} MB and ${config.docker_pids_limit} pids`,
      fix: 'set terminal.docker_max_running to auto',
    };
  }
  if (report.memoryMb.sum > report.memoryMb.host || report.pids.sum > report.pids.host) {
    return {
      name: 'capacity',
      status: 'problem',
      detail: `up to ${cap}: ${sums}, more than the host has`,
      fix: 'lower terminal.docker_max_running (or set it to auto), container_memory or docker_pids_limit',
    };
  }
  return { name: 'capacity', status: 'ok', detail: `up to ${cap}: ${sums}` };
}

/**
 * The runtime sandboxes run under: which one, whether it puts a kernel of its own between users
 * (gVisor) and what Berth does differently there, and a warning when its release is older than
 * the one the tests ran. A configured runtime the engine lacks is the isolation check's problem.
 */
function runtimeChecks(config: TerminalConfig, description: BackendDescription, backendName: string): DoctorCheck[] {
  if (backendName === 'kubernetes') {
    return [
      {
        name: 'runtime',
        status: 'ok',
        detail: config.docker_runtime
          ? `each sandbox's pod asks for RuntimeClass ${config.docker_runtime} (docker_runtime); a node without its handler refuses the pod, and the refusal is the first command's error`
          : "pods run under the cluster's default runtime, sharing their node's kernel; docker_runtime names a RuntimeClass (gVisor's, say) to change that (docs/gvisor.md)",
      },
    ];
  }
  const runtime = description.runtime;
  if (!runtime) return [];
  const offered = description.runtimes ? `; the engine offers ${description.runtimes.join(', ') || 'none'}` : '';
  if (runtime.configured && description.runtimes && !description.runtimes.includes(runtime.name)) return [];
  const whose = runtime.configured ? 'docker_runtime' : "the engine's default";
  const version = runtime.version ? `, ${runtime.version}` : '';
  const checks: DoctorCheck[] = [];
  if (runtime.gvisor) {
    checks.push({
      name: 'runtime',
      status: 'ok',
      detail: `sandboxes run under ${runtime.name} (${whose}: gVisor${version}), a kernel of its own for each sandbox${offered}`,
    });
    for (const fallback of runtime.fallbacks) checks.push({ name: 'runtime', status: 'ok', detail: `under gVisor, ${fallback}` });
  } else if (runtime.version) {
    checks.push({
      name: 'runtime',
      status: 'ok',
      detail: `sandboxes run under ${runtime.name} (${whose}${version}), sharing this host's kernel with each other${offered} (docs/gvisor.md: docker_runtime: runsc puts a kernel of its own between users)`,
    });
  } else {
    checks.push({
      name: 'runtime',
      status: 'ok',
      detail: `sandboxes run under ${runtime.name} (${whose}); its binary is not on this host, so Berth cannot tell its release, nor whether it is gVisor${offered}`,
    });
  }
  if (runtime.olderThanTested)
    checks.push({
      name: 'runtime',
      status: 'warning',
      detail: `${runtime.name} is release ${runtime.release}, older than the one Berth's tests ran (${runtime.olderThanTested})`,
      fix: `upgrade ${runtime.name} on the engine's host (docs/gvisor.md)`,
    });
  return checks;
}

/** The per-user disks against the free space under the sandbox root (they are sparse: space is taken as it is written). */
function diskCheck(config: TerminalConfig, root: string): DoctorCheck {
  if (config.container_disk === 0)
    return { name: 'disk', status: 'warning', detail: 'terminal.container_disk is 0: no per-user disks (see the isolation check)' };
  let freeMb: number | undefined;
  for (let folder = path.resolve(root); freeMb === undefined; folder = path.dirname(folder)) {
    try {
      const stats = statfsSync(folder);
      freeMb = Math.floor((stats.bavail * stats.bsize) / 1024 / 1024);
    } catch {
      if (folder === path.dirname(folder)) break;
    }
  }
  const most = config.docker_max_sandboxes;
  const sum = most > 0 ? most * config.container_disk : undefined;
  const detail = `each sandbox has a disk of ${config.container_disk} MB (container_disk)${sum === undefined ? '' : `; ${most} of them (docker_max_sandboxes) could hold ${sum} MB`}${freeMb === undefined ? '' : `, with ${freeMb} MB free under ${root}`}`;
  if (sum === undefined || freeMb === undefined || sum <= freeMb) return { name: 'disk', status: 'ok', detail };
  return {
    name: 'disk',
    status: 'warning',
    detail: `${detail}: full disks together would fill the host first`,
    fix: 'lower terminal.container_disk or docker_max_sandboxes, or give the sandbox root more space',
  };
}

/** What a driver that can probe NetworkPolicy enforcement offers (the Kubernetes one). */
type NetworkPolicyProbe = () => Promise<{ readonly enforced: boolean | undefined; readonly detail: string }>;

function networkPolicyProbeOf(backend: SandboxBackendV1): NetworkPolicyProbe | undefined {
  const driver = (backend as { driver?: { probeNetworkPolicy?: unknown } }).driver;
  return typeof driver?.probeNetworkPolicy === 'function' ? (driver.probeNetworkPolicy as NetworkPolicyProbe).bind(driver) : undefined;
}

/** Whether the sandboxes' deny-ingress policy holds, found by trying (two probe pods). */
async function networkPolicyCheck(probe: NetworkPolicyProbe): Promise<DoctorCheck> {
  const result = await probe();
  if (result.enforced === true) return { name: 'isolation', status: 'ok', detail: `NetworkPolicy is enforced: ${result.detail}` };
  return {
    name: 'isolation',
    status: 'warning',
    detail:
      result.enforced === false
        ? `NetworkPolicy is NOT enforced: ${result.detail}; sandboxes can reach each other`
        : `whether NetworkPolicy is enforced is unknown: ${result.detail}`,
    fix: 'use a network plugin that enforces NetworkPolicy (Calico, Cilium); see docs/backend-kubernetes.md',
  };
}

/** Runs every check; never throws for a failed check. */
export async function runDoctorChecks(io: CliIo, options: CliOptions): Promise<DoctorReport> {
  const checks: DoctorCheck[] = [];
  let loaded: LoadedConfig | undefined;
  let configError: string | null = null;
  try {
    loaded = loadCliConfig(io, options.config);
    checks.push({
      name: 'config',
      status: 'ok',
      detail: loaded.file ? `${loaded.file} is valid` : `no file at ${defaultConfigPath(io.environment as NodeJS.ProcessEnv)}; using the defaults`,
    });
  } catch (error) {
    configError = (error as Error).message;
    checks.push({ name: 'config', status: 'problem', detail: configError, fix: 'fix the config file as the message says' });
  }
  const config = loaded?.config;
  const backendName = config?.backend ?? 'docker';
  let description: BackendDescription | undefined;
  let unreachable: string | undefined;
  if (config) {
    let backend: SandboxBackendV1 | undefined;
    try {
      backend = await createBackend(config, { environment: io.environment });
      checks.push({ name: 'backend', status: 'ok', detail: `the ${backend.name} backend is available` });
    } catch (error) {
      checks.push({
        name: 'backend',
        status: 'problem',
        detail: (error as Error).message,
        fix: 'install the backend package, or set terminal.backend to docker',
      });
    }
    if (backend) {
      // The backend finds its engine as it does for sandboxes: one discovery, in the gateway's environment.
      try {
        description = await backend.describe({ image: config.docker_image });
        checks.push({
          name: 'engine',
          status: 'ok',
          detail: `${description.engine} ${description.version} (API ${description.apiVersion}) at ${description.endpoint}, found via ${description.discovery}`,
        });
        for (const warning of description.warnings)
          checks.push({ name: 'engine', status: 'warning', detail: warning, fix: `see docs/backend-${description.engine}.md` });
        const probe = networkPolicyProbeOf(backend);
        if (probe) checks.push(await networkPolicyCheck(probe));
      } catch (error) {
        unreachable = isBerthError(error) && 'endpoint' in error ? String((error as { endpoint: unknown }).endpoint) : undefined;
        checks.push({
          name: 'engine',
          status: 'problem',
          detail: (error as Error).message,
          fix:
            backendName === 'kubernetes'
              ? 'check terminal.kubernetes_kubeconfig, kubernetes_context and kubernetes_namespace, and that the Role of docs/backend-kubernetes.md is bound'
              : `start the ${backendName} engine, or set ${backendName === 'podman' ? 'CONTAINER_HOST' : 'DOCKER_HOST'} to its socket`,
        });
      } finally {
        await backend.close().catch(() => undefined);
      }
    }
  }
  const present = description?.image?.present ?? null;
  if (config && description?.image && backendName === 'kubernetes') {
    // A namespaced user cannot see which images the nodes hold: a missing one shows when a pod starts.
    checks.push({ name: 'image', status: 'ok', detail: `the nodes pull ${config.docker_image} when a sandbox's pod starts; a missing image is reported then` });
  } else if (config && description?.image) {
    checks.push(
      present
        ? { name: 'image', status: 'ok', detail: `${config.docker_image} is on the engine` }
        : {
            name: 'image',
            status: 'problem',
            detail: `${config.docker_image} is not on the engine; the first command will try to pull it`,
            fix: `pull it (${backendName} pull ${config.docker_image}) or set terminal.docker_image to an image the engine has`,
          },
    );
  } else {
    checks.push({ name: 'image', status: 'skipped', detail: config ? 'the engine did not answer' : 'the config is not valid' });
  }
  const root = resolveSandboxDir(config?.sandbox_dir, io.environment as NodeJS.ProcessEnv);
  if (config) {
    const risks = findIsolationRisks(config, {
      sandboxDir: root,
      hermesHome: hermesHome(io.environment as NodeJS.ProcessEnv),
      ...(description?.runtimes ? { runtimes: description.runtimes } : {}),
      // The socket the backend found: a mount that leads to it is named whatever its path.
      ...(description?.endpoint?.startsWith('/') ? { engineSocket: description.endpoint } : {}),
    });
    for (const risk of risks)
      checks.push({
        name: 'isolation',
        status: 'problem',
        detail: `${risk.key}: ${risk.risk}`,
        fix: `remove it from the terminal config unless every user may have that (docs/configuration.md)`,
      });
    if (risks.length === 0)
      checks.push({ name: 'isolation', status: 'ok', detail: "no setting undoes the sandboxes' isolation (mounts, capabilities, no-new-privileges, runtime)" });
    if (description) checks.push(...runtimeChecks(config, description, backendName));
    checks.push(
      backendName === 'kubernetes'
        ? {
            name: 'capacity',
            status: 'ok',
            detail:
              "the cluster's scheduler places each sandbox's pod on a node with room (docker_max_running: auto sets no cap of Berth's there); bound the namespace with a ResourceQuota",
          }
        : capacityCheck(config, { ...localHostSize(), ...(description?.host ?? {}) }, description?.sharedBound),
    );
  }
  // Kubernetes sizes each claim with container_disk; the host's free space says nothing there.
  if (config && backendName !== 'kubernetes') checks.push(diskCheck(config, root));
  const state = await sandboxRootState(root);
  checks.push(
    state.writable
      ? { name: 'sandbox-root', status: 'ok', detail: state.exists ? `${root} is writable` : `${root} does not exist yet and can be created` }
      : {
          name: 'sandbox-root',
          status: 'problem',
          detail: `${root}: ${state.problem}`,
          fix: 'make it a writable folder, or set TERMINAL_SANDBOX_DIR (or terminal.sandbox_dir) to one',
        },
  );
  if (config) {
    try {
      const resolver = await createBerthResolver({ config, environment: io.environment, resolveFrom: io.cwd });
      checks.push(...variableChecks(resolver, config.docker_user_env_prefix, root));
      checks.push(...secretChecks(config, resolver.index.userVariableNames(), io.environment, description?.egress));
    } catch (error) {
      checks.push({ name: 'variables', status: 'problem', detail: (error as Error).message, fix: 'fix the config as the message says' });
    }
  }
  return {
    ok: checks.every((check) => check.status === 'ok' || check.status === 'warning'),
    engine: {
      name: backendName,
      endpoint: description?.endpoint ?? unreachable ?? null,
      how: description?.discovery ?? null,
      reachable: description !== undefined,
      version: description?.version ?? null,
      apiVersion: description?.apiVersion ?? null,
    },
    config: { file: loaded?.file ?? (options.config ? path.resolve(io.cwd, options.config) : null), valid: loaded !== undefined, error: configError },
    image: { name: config?.docker_image ?? null, present },
    sandboxRoot: { path: root, exists: state.exists, writable: state.writable },
    checks,
  };
}

/**
 * Which variables are brokered (their values only ever in requests to their hosts, through the
 * egress proxy) and which still enter sandboxes, and the egress mode (docs/brokered-secrets.md).
 */
export function secretChecks(
  config: TerminalConfig,
  userVariables: ReadonlyMap<string, number>,
  environment: Readonly<Record<string, string | undefined>>,
  egress: BackendDescription['egress'],
): DoctorCheck[] {
  const hosts = config.docker_secret_hosts;
  const brokered = Object.keys(hosts).sort();
  const entering = [
    ...config.docker_forward_env.filter((name) => environment[name] !== undefined && !(name in hosts)).map((name) => `${name} (forwarded)`),
    ...[...userVariables]
      .filter(([name]) => !(name in hosts))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, users]) => `${name} (user variable of ${users} user${users === 1 ? '' : 's'})`),
  ];
  const placesOf = (name: string): string => {
    const places = hosts[name]!;
    const extra = [
      ...places.headers.map((header) => `header ${header}`),
      ...places.query.map((parameter) => `query ${parameter}`),
      ...(places.ports.length === 1 && places.ports[0] === 443 ? [] : [`port ${places.ports.join(', ')}`]),
    ];
    return `${places.join(', ')}${extra.length > 0 ? ` (also ${extra.join(', ')})` : ''}`;
  };
  const brokeredText = brokered.map((name) => `${name} -> ${placesOf(name)}`).join('; ');
  const enteringText = entering.length === 0 ? 'no secret enters a sandbox' : `still enter sandboxes: ${entering.join(', ')}`;
  const checks: DoctorCheck[] = [];
  if (brokered.length === 0) {
    checks.push({
      name: 'secrets',
      status: 'ok',
      detail: `no variable is brokered; ${enteringText}`,
      ...(entering.length > 0 ? { fix: 'broker the ones that are API keys with terminal.docker_secret_hosts (docs/brokered-secrets.md)' } : {}),
    });
  } else if (egress?.unavailable && config.docker_network) {
    checks.push({
      name: 'secrets',
      status: 'warning',
      detail: `brokered: ${brokeredText} — but ${egress.unavailable}: sandboxes get placeholders that nothing replaces; ${enteringText}`,
      fix: 'run sandboxes on Docker or rootful Podman on this host for the egress proxy (docs/brokered-secrets.md)',
    });
  } else if (config.docker_network && egress?.proxy?.includes('could not listen on')) {
    // The runtime's status says where the proxy failed to listen (egress-broker.ts).
    checks.push({
      name: 'secrets',
      status: 'warning',
      detail: `brokered: ${brokeredText} — but the egress proxy ${egress.proxy.slice(egress.proxy.indexOf('could not listen on'))}; those sandboxes' requests carry placeholders until it listens; ${enteringText}`,
      fix: 'stop the other Berth process that holds the address (berth serve, or a CLI command still running), or free port 3129 there',
    });
  } else {
    checks.push({
      name: 'secrets',
      status: 'ok',
      detail: `brokered (sandboxes hold placeholders; the values go only to these hosts, only in Authorization, Proxy-Authorization and what each names${config.docker_network ? '' : ', and nowhere while docker_network is false'}): ${brokeredText}; ${enteringText}`,
    });
  }
  if (config.docker_egress === 'allowlist') {
    const domains = config.docker_egress_domains.length > 0 ? config.docker_egress_domains.join(', ') : 'none';
    checks.push(
      egress?.unavailable && config.docker_network
        ? {
            name: 'egress',
            status: 'problem',
            detail: `docker_egress is allowlist, but ${egress.unavailable}: no sandbox starts with networking`,
            fix: 'set terminal.docker_egress: open, or docker_network: false, or use Docker or rootful Podman on this host',
          }
        : { name: 'egress', status: 'ok', detail: `allowlist: sandboxes reach only DNS and the egress proxy, which lets through only ${domains}` },
    );
  } else {
    checks.push({
      name: 'egress',
      status: 'ok',
      detail: 'open (the default): sandboxes reach the internet directly, as the egress policy allows; docker_egress: allowlist limits them to named domains',
    });
  }
  return checks;
}

/** `berth doctor`: exit 0 only when every check passed. */
export async function runDoctorCommand(io: CliIo, options: CliOptions): Promise<number> {
  const report = await runDoctorChecks(io, options);
  if (options.json) {
    io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    const colors = colorsFor(io.stdout, io.environment);
    const mark = { ok: colors.green('ok'), problem: colors.red('PROBLEM'), warning: colors.yellow('warning'), skipped: colors.dim('skipped') };
    for (const check of report.checks) {
      io.stdout.write(`${mark[check.status]}  ${check.name}: ${check.detail}\n`);
      if (check.fix) io.stdout.write(`    -> ${check.fix}\n`);
    }
    io.stdout.write(report.ok ? 'all is well\n' : 'some checks failed\n');
  }
  return report.ok ? 0 : 1;
}
