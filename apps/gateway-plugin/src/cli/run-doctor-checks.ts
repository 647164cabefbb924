import path from 'node:path';
import {
  defaultConfigPath,
  describeIgnoredKeys,
  hermesHome,
  isBerthError,
  resolveSandboxDir,
  type BackendDescription,
  type LoadedConfig,
  type SandboxBackendV1,
} from '@berth/core';
import { localHostSize } from '@berth/sandbox-runtime';
import { createBackend } from '../create-backend.js';
import { createBerthResolver } from '../create-berth.js';
import { findIsolationRisks } from '../isolation-risks.js';
import type { CliIo } from './cli-io.js';
import { capacityCheck, frozenCheck, poolCheck, sharesCheck } from './doctor-capacity.js';
import { diskCheck } from './doctor-disk.js';
import { networkPolicyCheck, networkPolicyProbeOf } from './doctor-network-policy.js';
import type { DoctorCheck, DoctorReport } from './doctor-report.js';
import { runtimeChecks } from './doctor-runtime.js';
import { sandboxRootState } from './doctor-sandbox-root.js';
import { secretChecks } from './doctor-secrets.js';
import { variableChecks } from './doctor-variables.js';
import { loadCliConfig } from './load-cli-config.js';
import type { CliOptions } from './parse-cli-arguments.js';

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
  const ignored = loaded ? describeIgnoredKeys(loaded.config) : undefined;
  if (ignored) {
    // The line berth serve, berth exec and the plugin write, as a warning of doctor's.
    checks.push({
      name: 'config',
      status: 'warning',
      detail: ignored.replace(/^berth: /, ''),
      fix:
        "Berth never passes them to the engine: say what a sandbox gets with Berth's " +
        'own keys (docker_runtime, docker_cap_add, docker_volumes, …), or remove them',
    });
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
        checks.push(poolCheck(config, backendName));
        // Nothing pauses a Pod: Kubernetes stops idle sandboxes instead.
        if (backendName !== 'kubernetes') {
          const sandboxes = await backend.list().catch(() => undefined);
          if (sandboxes) checks.push(await frozenCheck(config, sandboxes, description.sharedBound));
        }
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
              "the cluster's scheduler places each sandbox's pod on a node with room (docker_max_running: " +
              "auto sets no cap of Berth's there); bound the namespace with a ResourceQuota",
          }
        : capacityCheck(config, { ...localHostSize(), ...(description?.host ?? {}) }, description?.sharedBound),
    );
    const shares = backendName === 'kubernetes' ? undefined : await sharesCheck(config, description?.sharedBound);
    if (shares) checks.push(shares);
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
