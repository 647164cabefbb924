import { execFileSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  INSTALLATION_KEY_FILE,
  runWithSession,
  type ExecuteOptions,
  type ExecuteResult,
  type HostLogger,
  type TerminalEnvironment,
  type TerminalEnvironmentProviderV1,
  type TerminalRegistryV1,
} from '@berth/core';
import { createBerthPlugin, type Berth, type BerthPlugin, type BerthPluginOptions, releaseDisksUnder } from '@berth/gateway-plugin';
import { egressTableName, installationTableName, installationTag } from '@berth/sandbox-runtime/driver';
import Dockerode from 'dockerode';

/** The local base image every case runs on; no registry is reachable in CI. */
export const ATTACK_IMAGE = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';

/**
 * The `docker_network_pool` of every gateway of this test file: a /20 of its own rather than the
 * default (one of 384 between 10.224.0.0 and 10.247.255.255), so the pool's egress table is this
 * file's (another test run on the machine, of this or an earlier release, keeps its own). The
 * gateways of one file share it, as gateways on one host share the default pool. Files that run
 * side by side (here, and the Hermes bridge's suite) pick at random and may pick the same one: a
 * pool's table is removed only once no sandbox network of the pool is left on the host (seen when
 * it was one of 24: another file's last gateway removed the table while this file's sandboxes
 * relied on it, and they reached each other).
 */
export const ATTACK_NETWORK_POOL = `10.${randomInt(224, 248)}.${randomInt(0, 16) * 16}.0/20`;

/** An address inside {@link ATTACK_NETWORK_POOL}: its base address with `last` as the last number. */
export const addressInAttackPool = (last: number): string => `${ATTACK_NETWORK_POOL.split('/')[0]!.split('.').slice(0, 3).join('.')}.${last}`;

/**
 * The OCI runtime every gateway of the run puts its sandboxes under, when `BERTH_TEST_RUNTIME`
 * names one (`runsc`: the cases that gVisor could change, run a second time under it by
 * `scripts/test.sh`; docs/gvisor.md); unset, the engine's default.
 */
export const ATTACK_RUNTIME = process.env.BERTH_TEST_RUNTIME || undefined;

/** The engines a case runs on: Docker and rootful Podman (under gVisor, its service started with `--runtime runsc`). */
export const ATTACK_ENGINES: readonly ('docker' | 'podman')[] = ['docker', 'podman'];

/**
 * Under gVisor, the rootful Podman service whose containers run under it (Podman 4.3's API makes
 * every container under its service's runtime: docs/gvisor.md); the set-up starts it. It shares
 * the rootful storage, so the suite looks at its containers through the usual socket.
 */
export const PODMAN_GVISOR_SOCKET = process.env.BERTH_PODMAN_GVISOR_SOCKET ?? '/run/podman-gvisor/podman.sock';

/** Whether this run's sandboxes are under gVisor, whose `/proc` and process list differ from runc's (docs/gvisor.md). */
export const UNDER_GVISOR = ATTACK_RUNTIME === 'runsc';

/**
 * Runs a command on the host inside a sandbox's network namespace (its container's main process's),
 * to read what gVisor does not show from inside: the namespace's sysctls and neighbours.
 */
export async function inSandboxNetns(containerId: string, command: readonly string[], client: Dockerode = docker): Promise<string> {
  const pid = (await client.getContainer(containerId).inspect()).State.Pid;
  return execFileSync('nsenter', [`--net=/proc/${pid}/ns/net`, ...command], { encoding: 'utf8' });
}

/**
 * The attack no-new-privileges and `nosuid` stop, tried in `folder`: a set-user-id root copy of
 * busybox's `su`, run by nobody. Returns its output: "must be suid" when the bit gave nothing.
 */
export const SETUID_ATTEMPT = (folder: string): string =>
  `m=$(stat -c %a ${folder}) && d=$(mktemp -d ${folder}/suid.XXXXXX) && cp /bin/busybox "$d/busybox" && chmod 4755 "$d/busybox" && ` +
  `ln -s busybox "$d/su" && chmod 755 "$d" && chmod 711 ${folder}; su -s /bin/sh nobody -c "$d/su root -c id </dev/null" 2>&1; ` +
  `chmod "$m" ${folder}; rm -rf "$d"`;

/** The Docker socket the suite looks through from outside. */
export const DOCKER_SOCKET = '/var/run/docker.sock';

/** A client for looking at the engine from outside, as an operator would with `docker inspect`. */
export const docker = new Dockerode({ socketPath: DOCKER_SOCKET });

/** Rootful Podman's API socket, for the cases that run on both engines. */
export const PODMAN_SOCKET = '/run/podman/podman.sock';

/** The outside view of the engine a `terminal.backend` names. */
export function engineClient(backend: 'docker' | 'podman' = 'docker'): Dockerode {
  return backend === 'podman' ? new Dockerode({ socketPath: PODMAN_SOCKET }) : docker;
}

/** Label Berth puts on every sandbox: the host folder mounted at /workspace. */
export const WORKSPACE_LABEL = 'dev.berth.workspace';

/** A messaging user as the host knows it: platform and raw sender id. */
export interface Sender {
  readonly platform: string;
  readonly userId: string | number;
}

/** A random Telegram user (ids are random so that no other test run shares its container name). */
export function randomTelegramUser(): Sender {
  return { platform: 'telegram', userId: String(randomInt(1_000_000_000, 2_000_000_000)) };
}

/** A random WhatsApp user in E.164 form. */
export function randomWhatsAppUser(): Sender {
  return { platform: 'whatsapp', userId: `+1555${randomInt(1_000_000, 9_999_999)}` };
}

/** Random lower-case letters a–y: their env form is just the upper-case letters. */
export function randomLetters(length = 8): string {
  return Array.from(randomBytes(length), (byte) => String.fromCharCode(0x61 + (byte % 25))).join('');
}

/** A secret value nobody else could guess, so its appearance anywhere is a leak. */
export function randomSecret(tag: string): string {
  return `ghp_${tag}_${randomBytes(12).toString('hex')}`;
}

/** A gateway in miniature with the plugin registered, as a host runs it. */
export interface AttackGateway {
  readonly sandboxDir: string;
  readonly plugin: BerthPlugin;
  readonly berth: Berth;
  readonly provider: TerminalEnvironmentProviderV1;
  /** Every line the plugin logged through the host's logger. */
  readonly logs: string[];
  /** Runs `command` as `sender` exactly as the host's terminal tool would. */
  run(sender: Sender, command: string, options?: ExecuteOptions): Promise<ExecuteResult>;
  /** Like {@link run}, but returns the error a rejected call threw instead of throwing it. */
  attempt(sender: Sender, command: string, options?: ExecuteOptions): Promise<ExecuteResult | Error>;
  /** The host folder of a sender's sandbox (resolved by the plugin's resolver). */
  folderOf(sender: Sender): { folder: string; workspace: string; home: string; scopeKey: string };
  /** The container of a sender, looked up from outside by its scope label and this gateway's root. */
  containerOf(sender: Sender): Promise<Dockerode.ContainerInfo | undefined>;
  /** Every container whose workspace lies under this gateway's sandbox root. */
  containers(): Promise<Dockerode.ContainerInfo[]>;
  /** Removes the containers and the sandbox root; safe to call twice. */
  cleanup(): Promise<void>;
}

/** Options of {@link startAttackGateway}. */
export interface AttackGatewayOptions {
  /** The `terminal:` section; the image and a private sandbox root are filled in. */
  readonly config?: Record<string, unknown>;
  /** The gateway's environment (the HERMES_USER_* credentials). */
  readonly environment?: Record<string, string>;
  /** A sandbox root to use instead of a fresh temporary folder. */
  readonly sandboxDir?: string;
  /** The plugin's own options (the egress proxy's upstream trust and name lookup, say). */
  readonly plugin?: BerthPluginOptions;
}

/** Every container Berth made for a sandbox root (by the workspace label), from outside. */
export async function containersUnder(sandboxDir: string, client: Dockerode = docker): Promise<Dockerode.ContainerInfo[]> {
  const all = await client.listContainers({ all: true, filters: { label: ['dev.berth.managed-by=berth'] } });
  return all.filter((container) => (container.Labels?.[WORKSPACE_LABEL] ?? '').startsWith(sandboxDir + path.sep));
}

/** Removes every container Berth made for a sandbox root. */
export async function removeContainersUnder(sandboxDir: string, client: Dockerode = docker): Promise<void> {
  const containers = await containersUnder(sandboxDir, client).catch(() => []);
  await Promise.all(
    containers.map(async (container) => {
      if (container.State === 'paused') await thaw(container.Id);
      await client
        .getContainer(container.Id)
        .remove({ force: true })
        .catch(() => undefined);
      // Each sandbox has a network of its own, which its label names.
      const network = container.Labels?.['dev.berth.network'];
      if (network)
        await client
          .getNetwork(network)
          .remove()
          .catch(() => undefined);
    }),
  );
}

/**
 * Unfreezes a paused container. Once an exec was started in a frozen container, the engine's
 * own unpause (and remove) hang behind it (Docker 20.10, runc), so the freezer cgroup is thawed
 * directly first, then the engine is told.
 */
export async function thaw(containerId: string): Promise<void> {
  const candidates = [
    `/sys/fs/cgroup/freezer/docker/${containerId}/freezer.state`,
    `/sys/fs/cgroup/system.slice/docker-${containerId}.scope/cgroup.freeze`,
    `/sys/fs/cgroup/docker/${containerId}/cgroup.freeze`,
  ];
  for (const file of candidates) {
    try {
      writeFileSync(file, file.endsWith('freezer.state') ? 'THAWED' : '0');
    } catch {
      // Not this cgroup layout.
    }
  }
  await within(10_000, `unpause ${containerId}`, docker.getContainer(containerId).unpause()).catch(() => undefined);
}

/** Fails with how to start the engine, rather than skipping, when Docker or the image is missing. */
export async function assertEngineReady(): Promise<void> {
  try {
    await docker.ping();
  } catch (error) {
    throw new Error(`no Docker Engine answers on ${DOCKER_SOCKET} (${(error as Error).message}); run scripts/engines.sh, then run the suite again`);
  }
  try {
    await docker.getImage(ATTACK_IMAGE).inspect();
  } catch {
    throw new Error(`image ${ATTACK_IMAGE} is missing; build it with scripts/engines.sh or set BERTH_TEST_IMAGE`);
  }
}

/** A fresh temporary folder for a sandbox root. */
export function temporarySandboxDir(tag: string): string {
  return mkdtempSync(path.join(os.tmpdir(), `berth-attack-${tag}-`));
}

/**
 * Registers the plugin with a terminal registry of our own (as the example host does) and
 * opens the terminal tool's environment once for every user, as a gateway does.
 */
export async function startAttackGateway(options: AttackGatewayOptions = {}): Promise<AttackGateway> {
  await assertEngineReady();
  const sandboxDir = options.sandboxDir ?? temporarySandboxDir('gw');
  const logs: string[] = [];
  const logger: HostLogger = {
    info: (message) => logs.push(`info ${message}`),
    warn: (message) => logs.push(`warn ${message}`),
    error: (message) => logs.push(`error ${message}`),
  };
  const providers = new Map<string, TerminalEnvironmentProviderV1>();
  const terminal: TerminalRegistryV1 = {
    specificationVersion: 'v1',
    reservedNames: ['docker', 'local'],
    registerEnvironmentProvider: (provider) => void providers.set(provider.name, provider),
  };
  const plugin = createBerthPlugin(options.plugin);
  // A registration refused (the cases that try bad settings) leaves no folder behind.
  const registered = Promise.resolve().then(() =>
    plugin.register({
      specificationVersion: 'v1',
      terminal,
      config: {
        docker_image: ATTACK_IMAGE,
        sandbox_dir: sandboxDir,
        container_memory: 256,
        timeout: 60,
        docker_network_pool: ATTACK_NETWORK_POOL,
        // The attacks use Signal as a platform without an adapter of its own, as a gateway's operator names it.
        generic_platforms: ['signal'],
        ...(ATTACK_RUNTIME ? { docker_runtime: ATTACK_RUNTIME } : {}),
        ...options.config,
      },
      environment: {
        // The gateway finds Podman as an operator's does: CONTAINER_HOST first.
        ...(ATTACK_RUNTIME === 'runsc' && options.config?.backend === 'podman' ? { CONTAINER_HOST: `unix://${PODMAN_GVISOR_SOCKET}` } : {}),
        ...(options.environment ?? {}),
      },
      logger,
    }),
  );
  await registered.catch((error: unknown) => {
    if (!options.sandboxDir) rmSync(sandboxDir, { recursive: true, force: true });
    throw error;
  });
  const backend = options.config?.backend === 'podman' ? 'podman' : 'docker';
  const client = engineClient(backend);
  const provider = providers.get(`berth-${backend}`);
  const berth = plugin.instances[0];
  if (!provider || !berth) throw new Error(`the plugin registered no berth-${backend} provider`);
  const tool: TerminalEnvironment = await provider.createEnvironment({ taskId: 'attack' });
  const pool = typeof options.config?.docker_network_pool === 'string' ? options.config.docker_network_pool : ATTACK_NETWORK_POOL;
  liveGateways++;
  let cleaned = false;
  const gateway: AttackGateway = {
    sandboxDir,
    plugin,
    berth,
    provider,
    logs,
    run: (sender, command, executeOptions) =>
      runWithSession({ platform: sender.platform, userId: sender.userId, chatId: 'chat' }, () => tool.execute(command, executeOptions)),
    attempt: (sender, command, executeOptions) =>
      gateway.run(sender, command, executeOptions).catch((error: unknown) => (error instanceof Error ? error : new Error(String(error)))),
    folderOf(sender) {
      const request = berth.request({ session: { platform: sender.platform, userId: sender.userId } });
      return { folder: request.paths.folder, workspace: request.paths.workspace, home: request.paths.home, scopeKey: request.scope.key };
    },
    async containerOf(sender) {
      const { scopeKey } = gateway.folderOf(sender);
      return (await containersUnder(sandboxDir, client)).find((container) => container.Labels?.['dev.berth.scope'] === scopeKey);
    },
    containers: () => containersUnder(sandboxDir, client),
    async cleanup() {
      if (cleaned) return;
      cleaned = true;
      await tool.cleanup().catch(() => undefined);
      await plugin.close().catch(() => undefined);
      await removeContainersUnder(sandboxDir, client);
      liveGateways--;
      removeEgressTables(sandboxDir, pool);
      if (!options.sandboxDir) {
        await releaseDisksUnder(sandboxDir);
        rmSync(sandboxDir, { recursive: true, force: true });
      }
    },
  };
  return gateway;
}

/** The gateways of this test file that have not been cleaned up yet. */
let liveGateways = 0;

/** Removes an nftables table this run made; nothing when it is not there (or nft is not). */
function removeTable(table: string): void {
  try {
    execFileSync('nft', ['delete', 'table', 'inet', table], { stdio: 'ignore' });
  } catch {
    // Never made (no sandbox with networking), or gone.
  }
}

/**
 * Removes the egress tables a gateway's sandboxes needed: its installation's own, once its
 * networks are gone, and the pool's, once the file's last gateway is (the pool is this file's own,
 * `ATTACK_NETWORK_POOL`); never another run's.
 */
function removeEgressTables(sandboxDir: string, pool: string): void {
  const root = path.join(sandboxDir, 'docker');
  if (existsSync(path.join(root, INSTALLATION_KEY_FILE))) removeTable(installationTableName(installationTag({ sandboxRoot: root, pool })));
  if (liveGateways === 0 && pool === ATTACK_NETWORK_POOL && !poolInUse(pool)) removeTable(egressTableName(pool));
}

/** Whether a host interface has an IPv4 address inside `pool`: a sandbox network of it exists, whoever made it. */
function poolInUse(pool: string): boolean {
  const [base, bits] = pool.split('/') as [string, string];
  const number = (address: string): number => address.split('.').reduce((value, part) => value * 256 + Number(part), 0);
  const size = 2 ** (32 - Number(bits));
  const start = number(base) - (number(base) % size);
  return Object.values(os.networkInterfaces())
    .flat()
    .some((entry) => entry !== undefined && entry.family === 'IPv4' && number(entry.address) >= start && number(entry.address) < start + size);
}

/** Rejects with a message naming `what` when `work` has not settled within `ms`. */
export async function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, bound]);
  } finally {
    clearTimeout(timer);
  }
}

/** Milliseconds a promise took, with its value. */
export async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}
