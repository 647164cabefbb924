import {
  hasInstallationKey,
  ImageNotFoundError,
  SandboxError,
  sandboxName,
  type BackendCapabilities,
  type ExecRequest,
  type ExecResult,
  type HostLogger,
  type SandboxBackendV1,
  type SandboxInfo,
  type SandboxPaths,
  type SandboxRequest,
  type SandboxState,
  type TerminalConfig,
} from '@berth/core';
import type Dockerode from 'dockerode';
import { buildContainerSpec, LABELS, MANAGED_BY } from './container-spec.js';
import type { OpenExecChannel } from './exec-channel.js';
import { prepareHostFolders, purgeHostFolders } from './host-folders.js';
import { KillerShell } from './killer-shell.js';
import { readLastUsed, touchLastUsed } from './last-used-file.js';
import { maskOutput } from './mask-output.js';
import { engineMessage, isAlreadyDone, isConflict, isGone, mapEngineError } from './map-engine-error.js';
import { openExecChannel } from './open-exec-channel.js';
import { FALLBACK_STATE_DIR, runExecOnce } from './run-exec-once.js';
import { environmentDigest, SessionClosedError, ShellSession, type SessionRunResult } from './shell-session.js';
import { KILLER_INIT } from './shell-protocol.js';

/** Progress of the slow steps of a first command. */
export interface ProgressEvent {
  readonly phase: 'pull' | 'create' | 'start';
  readonly message: string;
}

/** What an engine backend is built from; the Docker and Podman packages fill it in. */
export interface EngineBackendOptions {
  /** Which engine speaks behind `docker`; named in labels, messages and `name`. */
  readonly engine: 'docker' | 'podman';
  /** A client for the engine's Docker-compatible API. */
  readonly docker: Dockerode;
  /** The socket path or URL `docker` talks to, for messages. */
  readonly endpoint: string;
  readonly config: TerminalConfig;
  /** Overrides `config.docker_image`. */
  readonly image?: string;
  readonly logger?: HostLogger;
  readonly onProgress?: (event: ProgressEvent) => void;
  /**
   * Prefix of sandbox names; core's keyed digest of the scope follows (see `sandboxName`).
   * @default 'berth-'
   */
  readonly namePrefix?: string;
  /** Labels added to every container, and required of every container this backend lists, adopts or reaps. */
  readonly labels?: Readonly<Record<string, string>>;
  /** The `NetworkMode` of a sandbox named `name` (its own network, or `none`). */
  readonly networkModeOf: (name: string) => string;
  /** Makes sure the network of the sandbox named `name` exists; called before it is created or started. */
  readonly prepareNetwork: (name: string) => Promise<void>;
  /** Removes the network of a removed sandbox, if it has one of its own; never throws. */
  readonly releaseNetwork?: (networkMode: string, name: string) => Promise<void>;
  /** The engine's last word on each container's host configuration. */
  readonly adjustHostConfig?: (hostConfig: Dockerode.HostConfig) => Dockerode.HostConfig;
  /** Overrides of the capability flags (the network isolation depends on the engine's network). */
  readonly capabilities?: Partial<BackendCapabilities>;
  /**
   * Milliseconds between automatic `reap()` runs while `lifetime_seconds` is set; 0 turns them
   * off (the caller reaps, as tests that must decide when do).
   * @default a quarter of the lifetime, between 1 s and 60 s
   */
  readonly reapIntervalMs?: number;
  /**
   * How many containers may be created and started at once; more wait. Protects small hosts
   * when many users send their first message together.
   * @default 4
   */
  readonly createConcurrency?: number;
}

/** Engine facts for `berth doctor`. */
export interface EngineInfo {
  readonly engine: 'docker' | 'podman';
  readonly endpoint: string;
  readonly version: string;
  readonly apiVersion: string;
}

/** A sandbox backend on a Docker-compatible engine, with a few engine-level extras. */
export interface EngineBackend extends SandboxBackendV1 {
  /** Throws `EngineUnavailableError` naming the socket when the engine does not answer. */
  ping(): Promise<void>;
  /** The engine's version, for diagnostics. */
  engineInfo(): Promise<EngineInfo>;
  /** The container name a scope's sandbox gets (opaque: see core's `sandboxName`). */
  containerName(request: SandboxRequest): string;
}

interface SandboxEntry {
  readonly scopeKey: string;
  name: string;
  containerId: string | undefined;
  running: boolean;
  session: ShellSession | undefined;
  killer: KillerShell | undefined;
  killerOpening: Promise<KillerShell | undefined> | undefined;
  /** Decided at the first session attempt: `exec` when the image's shell cannot hold a session. */
  mode: 'session' | 'exec' | undefined;
  tail: Promise<unknown>;
  pending: number;
  lastUsed: number;
  /** When the last-used file was last written: it is written at most every few seconds. */
  lastRecorded?: number;
  paths: SandboxPaths | undefined;
  /** The container's config hash differs from ours but it was busy: recreate once idle. */
  stale: boolean;
  /** Digest of the environment the fallback mode last sent. */
  environmentKey?: string;
  info: Pick<SandboxInfo, 'kind' | 'platform' | 'userId' | 'taskId'>;
}

/** How long a command may run before Berth checks whether its sandbox was paused from outside. */
const PAUSE_CHECK_AFTER_MS = 1_500;

/** Commands the keep-alive main process and init leave in a container's process list. */
const IDLE_PROCESS = /(^|\/)(docker-init|tini|catatonit|conmon)\b|trap "exit 0"|^sleep 3600$|^\/bin\/sh$/;

function lastUsedOf(time: number | undefined): { lastUsed?: string } {
  return time === undefined ? {} : { lastUsed: new Date(time).toISOString() };
}

function stateOf(state: string | undefined): SandboxState {
  switch (state) {
    case 'running':
      return 'running';
    case 'exited':
    case 'created':
    case 'dead':
    case 'stopped':
    case 'configured':
      return 'stopped';
    case 'paused':
      return 'paused';
    default:
      return 'other';
  }
}

/** A small counting semaphore. */
function createLimiter(size: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async (task) => {
    if (active >= size) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await task();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

/**
 * The engine layer shared by the Docker and Podman backends: one hardened container per
 * scope with a persistent shell session, adoption by name and labels, single-flight creation,
 * recovery when the container or the engine went away, idle reaping, and purge. What differs
 * between engines (the network, host-configuration tweaks) comes in through the options.
 */
export function createEngineBackend(options: EngineBackendOptions): EngineBackend {
  const { docker, config, engine, endpoint } = options;
  const image = options.image ?? config.docker_image;
  const namePrefix = options.namePrefix ?? 'berth-';
  const extraLabels = options.labels ?? {};
  const logger = options.logger;
  const entries = new Map<string, SandboxEntry>();
  const limitCreate = createLimiter(options.createConcurrency ?? 4);
  let imageReady: Promise<void> | undefined;
  let closed = false;
  let adopted = false;

  const fail = (error: unknown, action: string): never => {
    throw mapEngineError(error, { engine, endpoint, action });
  };
  const labelFilters = (): string[] => [`${LABELS.managedBy}=${MANAGED_BY}`, ...Object.entries(extraLabels).map(([key, value]) => `${key}=${value}`)];
  const containerName = (request: SandboxRequest): string => sandboxName({ root: request.paths.root, scopeKey: request.scope.key, prefix: namePrefix });

  const entryFor = (request: SandboxRequest): SandboxEntry => {
    const { scope } = request;
    let entry = entries.get(scope.key);
    if (!entry) {
      entry = {
        scopeKey: scope.key,
        // Named by nameEntry(), inside the scope's queue.
        name: '',
        containerId: undefined,
        running: false,
        session: undefined,
        killer: undefined,
        killerOpening: undefined,
        mode: config.docker_exec_mode === 'exec' ? 'exec' : undefined,
        tail: Promise.resolve(),
        pending: 0,
        lastUsed: Date.now(),
        paths: request.paths,
        stale: false,
        info: scope.kind === 'user' ? { kind: 'user', platform: scope.primary.platform, userId: scope.primary.id } : { kind: 'task', taskId: scope.taskId },
      };
      entries.set(scope.key, entry);
    }
    entry.paths = request.paths;
    return entry;
  };

  /** Runs `task` after every earlier task of the same sandbox: commands of one scope never overlap. */
  const enqueue = <T>(entry: SandboxEntry, task: () => Promise<T>): Promise<T> => {
    entry.pending++;
    const run = entry.tail.then(task, task);
    entry.tail = run.then(
      () => undefined,
      () => undefined,
    );
    return run.finally(() => {
      entry.pending--;
      entry.lastUsed = Date.now();
      if (entry.paths && entry.lastUsed - (entry.lastRecorded ?? 0) > 5_000) {
        entry.lastRecorded = entry.lastUsed;
        touchLastUsed(entry.paths.workspace);
      }
    });
  };

  const dropSession = (entry: SandboxEntry): void => {
    entry.session?.close();
    entry.session = undefined;
    entry.killer?.close();
    entry.killer = undefined;
    entry.killerOpening = undefined;
  };

  const ensureImage = (): Promise<void> => {
    imageReady ??= (async () => {
      try {
        await docker.getImage(image).inspect();
        return;
      } catch (error) {
        if (!isGone(error)) fail(error, `inspect image ${image}`);
      }
      options.onProgress?.({ phase: 'pull', message: `pulling ${image}` });
      logger?.info(`berth: image ${image} is absent on the ${engine} engine; pulling it`);
      try {
        const stream = await docker.pull(image);
        await new Promise<void>((resolve, reject) => {
          docker.modem.followProgress(
            stream,
            (error: Error | null) => (error ? reject(error) : resolve()),
            (event: { status?: string; progress?: string; id?: string }) => {
              options.onProgress?.({ phase: 'pull', message: [event.id, event.status, event.progress].filter(Boolean).join(' ') });
            },
          );
        });
        await docker.getImage(image).inspect();
      } catch (error) {
        const unreachable = mapEngineError(error, { engine, endpoint, action: `pull ${image}` });
        if (unreachable.code === 'ENGINE_UNAVAILABLE') throw unreachable;
        throw new ImageNotFoundError(
          image,
          `image ${image} is not on the ${engine} engine and could not be pulled (${engineMessage(error)}); run \`${engine} pull ${image}\` where a registry is reachable, or set terminal.docker_image to an image you have`,
          { cause: error },
        );
      }
    })().catch((error: unknown) => {
      imageReady = undefined;
      throw error;
    });
    return imageReady;
  };

  const inspectByName = async (name: string): Promise<Dockerode.ContainerInspectInfo | undefined> => {
    try {
      return await docker.getContainer(name).inspect();
    } catch (error) {
      if (isGone(error)) return undefined;
      return fail(error, `inspect container ${name}`);
    }
  };

  /** Whether a container runs anything besides its init and keep-alive process. */
  const isBusy = async (id: string): Promise<boolean> => {
    try {
      const top = (await docker.getContainer(id).top({ ps_args: '-o pid,args' })) as { Titles?: string[]; Processes?: string[][] };
      const column = Math.max(0, (top.Titles ?? []).findIndex((title) => /^(CMD|COMMAND|ARGS)$/i.test(title)));
      return (top.Processes ?? []).some((row) => !IDLE_PROCESS.test(row[column] ?? row[row.length - 1] ?? ''));
    } catch {
      // Unknown means busy: never destroy work on a guess.
      return true;
    }
  };

  const removeContainer = async (id: string, name: string): Promise<void> => {
    try {
      await docker.getContainer(id).remove({ force: true, v: true });
    } catch (error) {
      if (isGone(error)) return;
      // 409: removal already in progress elsewhere.
      if (isConflict(error)) return;
      fail(error, `remove container ${name}`);
    }
  };

  const startContainer = async (entry: SandboxEntry, id: string): Promise<void> => {
    options.onProgress?.({ phase: 'start', message: `starting ${entry.name}` });
    try {
      await docker.getContainer(id).start();
    } catch (error) {
      if (!isAlreadyDone(error)) fail(error, `start container ${entry.name}`);
    }
  };

  const createContainer = async (entry: SandboxEntry, request: SandboxRequest, spec: Dockerode.ContainerCreateOptions): Promise<string> => {
    await prepareHostFolders(request.paths);
    await ensureImage();
    await options.prepareNetwork(entry.name);
    options.onProgress?.({ phase: 'create', message: `creating ${entry.name}` });
    const container = await docker.createContainer(spec).catch((error: unknown) => {
      if (isConflict(error)) return undefined;
      if (isGone(error)) {
        // The image vanished between the check and the create.
        imageReady = undefined;
      }
      return fail(error, `create container ${entry.name}`);
    });
    if (!container) return '';
    try {
      await startContainer(entry, container.id);
    } catch (error) {
      // Nothing half-created: a container that cannot start is removed again.
      await removeContainer(container.id, entry.name).catch(() => undefined);
      throw error;
    }
    logger?.info(`berth: created sandbox ${entry.name} for ${entry.scopeKey}`);
    return container.id;
  };

  const enforceMaxRunning = async (current: SandboxEntry): Promise<void> => {
    if (config.docker_max_running <= 0) return;
    const running = [...entries.values()].filter((entry) => entry.running && entry !== current);
    let excess = running.length + 1 - config.docker_max_running;
    if (excess <= 0) return;
    for (const entry of running.sort((a, b) => a.lastUsed - b.lastUsed)) {
      if (excess <= 0) break;
      if (entry.pending > 0) continue;
      logger?.info(`berth: stopping ${entry.name}, least recently used, to stay within terminal.docker_max_running=${config.docker_max_running}`);
      await stopEntry(entry).catch((error: unknown) => logger?.warn(`berth: could not stop ${entry.name}: ${(error as Error).message}`));
      excess--;
    }
  };

  /** Makes sure the scope's container exists and runs; adopts, recreates or creates it. Returns its id. */
  const acquireContainer = async (entry: SandboxEntry, request: SandboxRequest): Promise<string> => {
    const { spec, configHash } = buildContainerSpec({
      config,
      image,
      name: entry.name,
      scope: request.scope,
      paths: request.paths,
      engine,
      networkMode: options.networkModeOf(entry.name),
      extraLabels,
      ...(options.adjustHostConfig ? { adjustHostConfig: options.adjustHostConfig } : {}),
    });
    for (let attempt = 0; attempt < 12; attempt++) {
      const info = await inspectByName(entry.name);
      if (!info && (await adoptLegacyContainer(entry, request))) continue;
      if (!info) {
        const id = await limitCreate(() => createContainer(entry, request, spec));
        if (id === '') {
          // Another process holds the name; the engine may answer 404 until its create completes.
          await new Promise((resolve) => setTimeout(resolve, 50 * (attempt + 1)));
          continue;
        }
        entry.containerId = id;
        entry.running = true;
        await enforceMaxRunning(entry);
        return id;
      }
      const labels = info.Config.Labels ?? {};
      if (labels[LABELS.managedBy] !== MANAGED_BY || labels[LABELS.scope] !== request.scope.key) {
        throw new SandboxError(
          'SANDBOX_NAME_TAKEN',
          `container ${entry.name} exists but is not Berth's sandbox for ${request.scope.key}; rename or remove it, or set another name prefix`,
        );
      }
      if (labels[LABELS.configHash] !== configHash) {
        if (info.State.Running && (await isBusy(info.Id))) {
          if (!entry.stale) logger?.warn(`berth: the config of ${entry.name} changed, but it is busy; it keeps its old settings until it is idle`);
          entry.stale = true;
        } else {
          logger?.info(`berth: the config of ${entry.name} changed; recreating it (files are kept)`);
          dropSession(entry);
          await removeContainer(info.Id, entry.name);
          const oldNetwork = info.HostConfig?.NetworkMode ?? 'none';
          if (oldNetwork !== options.networkModeOf(entry.name)) await options.releaseNetwork?.(oldNetwork, entry.name);
          continue;
        }
      } else {
        entry.stale = false;
      }
      if (!info.State.Running) {
        if (info.State.Paused) {
          await docker
            .getContainer(info.Id)
            .unpause()
            .catch((error: unknown) => fail(error, `unpause container ${entry.name}`));
        } else {
          await prepareHostFolders(request.paths);
          await options.prepareNetwork(entry.name);
          await limitCreate(() => startContainer(entry, info.Id));
          logger?.info(`berth: restarted sandbox ${entry.name} for ${entry.scopeKey}`);
        }
      } else if (info.State.Paused) {
        await docker
          .getContainer(info.Id)
          .unpause()
          .catch((error: unknown) => fail(error, `unpause container ${entry.name}`));
      }
      entry.containerId = info.Id;
      entry.running = true;
      await enforceMaxRunning(entry);
      return info.Id;
    }
    throw new SandboxError('SANDBOX_CONFLICT', `container ${entry.name} kept changing while Berth acquired it; retry the command`);
  };

  /**
   * A container of this scope made by a release that named sandboxes after their users (or by
   * an operator's rename) is renamed to the opaque name, so the loop adopts it (and recreates it
   * once idle, files kept, because its settings differ) instead of making a duplicate.
   */
  const adoptLegacyContainer = async (entry: SandboxEntry, request: SandboxRequest): Promise<boolean> => {
    // Only this installation's (same folders): another gateway on the engine may serve the same scope key.
    const legacy = (await findContainers(entry.scopeKey)).find((container) => container.Labels?.[LABELS.workspace] === request.paths.workspace);
    if (!legacy) return false;
    const legacyName = (legacy.Names?.[0] ?? '').replace(/^\//, '');
    try {
      await docker.getContainer(legacy.Id).rename({ name: entry.name });
    } catch (error) {
      // 409: the new name is taken (another process renamed it first): the loop adopts that one.
      if (!isConflict(error) && !isGone(error)) fail(error, `rename container ${legacyName}`);
    }
    logger?.info(`berth: renamed the sandbox of an earlier release to ${entry.name}; it is recreated once idle, files kept`);
    return true;
  };

  const channelOpener = (entry: SandboxEntry): OpenExecChannel => (command, channelOptions) => {
    const id = entry.containerId;
    if (!id) return Promise.reject(new SessionClosedError(false, `sandbox ${entry.name} has no container`));
    return openExecChannel(docker, id, command, channelOptions).catch((error: unknown) => fail(error, `run a command in container ${entry.name}`));
  };

  const openKiller = (entry: SandboxEntry): Promise<KillerShell | undefined> => {
    if (entry.killer?.alive) return Promise.resolve(entry.killer);
    entry.killerOpening ??= channelOpener(entry)(['/bin/sh'])
      .then(async (channel) => {
        const killer = new KillerShell(channel);
        entry.killer = killer;
        // An exec that is still starting when the container is paused holds the engine's lock
        // on it; waiting for the answer makes sure this one has started.
        await Promise.race([killer.ready, new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
        return killer;
      })
      .catch(() => undefined)
      .finally(() => (entry.killerOpening = undefined));
    return entry.killerOpening;
  };

  /**
   * Gives the entry its opaque name. A new installation's key is made only once the engine has
   * answered: a command that fails for want of an engine leaves the sandbox root as it was.
   */
  const nameEntry = async (entry: SandboxEntry, request: SandboxRequest): Promise<void> => {
    if (entry.name !== '') return;
    if (!hasInstallationKey(request.paths.root)) {
      await docker.ping().catch((error: unknown) => fail(error, 'reach the engine'));
    }
    entry.name = containerName(request);
  };

  /** Acquires the container and, in session mode, a live shell session. */
  const ensureReady = async (entry: SandboxEntry, request: SandboxRequest): Promise<void> => {
    if (entry.containerId && entry.running && (entry.mode === 'exec' || entry.session?.alive)) return;
    await nameEntry(entry, request);
    dropSession(entry);
    await acquireContainer(entry, request);
    if (entry.mode === 'exec') return;
    // The killer starts beside the session and is up before the first command runs: it must exist
    // before anything needs killing, and an exec still starting when someone pauses the container
    // would hold the engine's lock on it (inspect, unpause and rm all wait) until it is thawed.
    const killerReady = openKiller(entry);
    const channel = await channelOpener(entry)(['/bin/sh'], { workingDir: '/workspace' });
    try {
      const session = await ShellSession.open({ channel, variables: request.environment.variables });
      entry.session = session;
      entry.mode = 'session';
      session.onClose(() => {
        if (entry.session === session) entry.session = undefined;
      });
      await killerReady;
    } catch (error) {
      void killerReady.then((killer) => killer?.close());
      if (error instanceof SessionClosedError && !error.started) {
        // The shell could not even start: the sandbox is full (a fork bomb's leftovers holding
        // every pid, say). Stopping it ends every process in it; the retry starts it again with
        // the files intact.
        logger?.warn(`berth: no shell could start in ${entry.name}; restarting the sandbox`);
        await stopEntry(entry).catch(() => undefined);
        throw error;
      }
      if (error instanceof SessionClosedError || config.docker_exec_mode === 'session') throw error;
      entry.mode = 'exec';
      logger?.warn(`berth: the shell of ${entry.name} cannot hold a session (${(error as Error).message}); running one exec per command`);
    }
  };

  /**
   * Unpauses a sandbox someone paused from outside. A command written to a frozen shell never
   * answers, and neither the kill nor a stop can end frozen processes, so a command that is slow
   * to answer, and every timeout, first makes sure the container is not paused.
   */
  const thawIfPaused = async (entry: SandboxEntry): Promise<void> => {
    if (!entry.containerId) return;
    const container = docker.getContainer(entry.containerId);
    try {
      const info = await container.inspect();
      if (!info.State?.Paused) return;
      logger?.warn(`berth: sandbox ${entry.name} was paused from outside; unpausing it so its command can answer`);
      await container.unpause();
    } catch {
      // Gone or unreachable: the command's own path reports that.
    }
  };

  const killCommand = async (entry: SandboxEntry): Promise<void> => {
    // Not awaited: the kill request waits in the killer's stdin and runs once thawed, and an
    // inspect can be slow while a fork bomb fills the sandbox.
    void thawIfPaused(entry);
    if (entry.mode === 'session' && entry.session) {
      const stateDir = entry.session.stateDir;
      const killer = await openKiller(entry);
      if (killer?.alive) {
        killer.kill(stateDir);
        return;
      }
    }
    // No killer shell: a one-off exec (fails only if the container's pid limit is exhausted).
    const stateDir = entry.session?.stateDir ?? FALLBACK_STATE_DIR;
    const channel = await channelOpener(entry)(['/bin/sh', '-c', `${KILLER_INIT}__berth_kill "$1"`, 'berth', stateDir]);
    channel.onStdout(() => undefined);
    channel.onStderr(() => undefined);
    channel.end();
  };

  const runOnce = async (entry: SandboxEntry, request: SandboxRequest, exec: ExecRequest): Promise<SessionRunResult> => {
    const timeoutMs = Math.max(1, (exec.timeout ?? config.timeout) * 1000);
    const stdin = exec.stdin === undefined ? undefined : typeof exec.stdin === 'string' ? Buffer.from(exec.stdin, 'utf8') : exec.stdin;
    const common = {
      command: exec.command,
      ...(exec.cwd !== undefined ? { cwd: exec.cwd } : {}),
      ...(stdin !== undefined ? { stdin } : {}),
      timeoutMs,
      outputLimit: config.docker_output_limit,
      variables: request.environment.variables,
      kill: () => killCommand(entry),
    };
    if (entry.mode === 'exec') {
      const key = environmentDigest(request.environment.variables);
      const environmentChanged = entry.environmentKey !== undefined && entry.environmentKey !== key;
      entry.environmentKey = key;
      return runExecOnce({ ...common, environmentChanged, openChannel: channelOpener(entry) });
    }
    const session = entry.session;
    if (!session) throw new SessionClosedError(false, `the shell of ${entry.name} is gone`);
    // Most commands answer well within this; a slower one costs one inspect, to catch a pause.
    const watchdog = setTimeout(() => void thawIfPaused(entry), PAUSE_CHECK_AFTER_MS);
    let result: SessionRunResult;
    try {
      result = await session.run(common);
    } finally {
      clearTimeout(watchdog);
    }
    if (result.timedOut && !session.alive) {
      // The kill did not bring the shell back (a fork bomb that outran it, say): stopping the
      // container ends every process in it; the next command starts it again, files intact.
      logger?.warn(`berth: a timed-out command in ${entry.name} could not be killed; restarting the sandbox`);
      await stopEntry(entry).catch(() => undefined);
    }
    return result;
  };

  const execute = async (entry: SandboxEntry, request: SandboxRequest, exec: ExecRequest): Promise<ExecResult> => {
    if (exec.command.includes('\0')) throw new SandboxError('COMMAND_INVALID', 'the command contains a NUL byte, which no shell can run; remove it');
    const started = performance.now();
    let result: SessionRunResult | undefined;
    for (let attempt = 0; attempt < 2 && !result; attempt++) {
      try {
        await ensureReady(entry, request);
        result = await runOnce(entry, request, exec);
      } catch (error) {
        // Retried once, and only when the command cannot have run: the session or the
        // container was gone before the command started.
        const code = (error as { code?: string }).code;
        const neverStarted = (error instanceof SessionClosedError && !error.started) || code === 'SANDBOX_GONE' || code === 'SANDBOX_CONFLICT';
        dropSession(entry);
        entry.running = false;
        if (!neverStarted || attempt === 1) throw error;
        logger?.info(`berth: sandbox ${entry.name} was gone; bringing it back`);
      }
    }
    const final = result!;
    const secrets = config.docker_mask_secrets ? request.environment.secrets : undefined;
    return {
      exitCode: final.timedOut ? 124 : final.status,
      stdout: maskOutput(final.stdout, secrets, config.docker_output_limit),
      stderr: maskOutput(final.stderr, secrets, config.docker_output_limit),
      timedOut: final.timedOut,
      truncated: final.stdout.truncated || final.stderr.truncated,
      durationMs: performance.now() - started,
    };
  };

  const findContainers = async (scopeKey?: string): Promise<Dockerode.ContainerInfo[]> => {
    try {
      return await docker.listContainers({ all: true, filters: { label: [...labelFilters(), ...(scopeKey ? [`${LABELS.scope}=${scopeKey}`] : [])] } });
    } catch (error) {
      return fail(error, 'list sandboxes');
    }
  };

  async function stopEntry(entry: SandboxEntry): Promise<void> {
    // A paused container's processes cannot receive the stop's signals; bounded, because an
    // inspect can be slow while a fork bomb fills the sandbox.
    await Promise.race([thawIfPaused(entry), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    dropSession(entry);
    entry.running = false;
    const ids = entry.containerId ? [entry.containerId] : (await findContainers(entry.scopeKey)).map((container) => container.Id);
    for (const id of ids) {
      try {
        await docker.getContainer(id).stop({ t: 3 });
      } catch (error) {
        if (!isAlreadyDone(error) && !isGone(error)) fail(error, `stop container ${entry.name}`);
      }
    }
  }

  /** Tracks labelled containers this process has not seen yet, so they are reaped too. */
  const adoptExisting = async (): Promise<void> => {
    for (const container of await findContainers()) {
      const labels = container.Labels ?? {};
      const scopeKey = labels[LABELS.scope];
      if (!scopeKey || entries.has(scopeKey)) continue;
      const name = (container.Names?.[0] ?? '').replace(/^\//, '');
      entries.set(scopeKey, {
        scopeKey,
        name,
        containerId: container.Id,
        running: container.State === 'running',
        session: undefined,
        killer: undefined,
        killerOpening: undefined,
        mode: config.docker_exec_mode === 'exec' ? 'exec' : undefined,
        tail: Promise.resolve(),
        pending: 0,
        // The last use an earlier process recorded; a full lifetime from now when none was.
        lastUsed: readLastUsed(labels[LABELS.workspace]) ?? Date.now(),
        paths: undefined,
        stale: false,
        info: labels[LABELS.kind] === 'task' ? { kind: 'task', taskId: labels[LABELS.task] ?? '' } : { kind: 'user', platform: labels[LABELS.platform] ?? '', userId: labels[LABELS.user] ?? '' },
      });
    }
  };

  const reap = async (): Promise<string[]> => {
    if (!adopted) {
      await adoptExisting();
      adopted = true;
    }
    const stopped: string[] = [];
    if (config.lifetime_seconds <= 0) return stopped;
    const deadline = Date.now() - config.lifetime_seconds * 1000;
    for (const entry of [...entries.values()]) {
      if (!entry.running || entry.pending > 0 || entry.lastUsed > deadline) continue;
      await enqueue(entry, async () => {
        if (!entry.running || entry.lastUsed > deadline) return;
        await stopEntry(entry);
        stopped.push(entry.scopeKey);
        logger?.info(`berth: stopped ${entry.name}, idle for more than ${config.lifetime_seconds} s`);
      }).catch((error: unknown) => logger?.warn(`berth: could not stop idle sandbox ${entry.name}: ${(error as Error).message}`));
    }
    return stopped;
  };

  let timer: NodeJS.Timeout | undefined;
  if (config.lifetime_seconds > 0 && options.reapIntervalMs !== 0) {
    const period = options.reapIntervalMs ?? Math.min(60_000, Math.max(1_000, (config.lifetime_seconds * 1000) / 4));
    timer = setInterval(() => {
      reap().catch((error: unknown) => logger?.warn(`berth: reaping idle sandboxes failed: ${(error as Error).message}`));
    }, period);
    timer.unref();
  }

  const assertOpen = (): void => {
    if (closed) throw new SandboxError('BACKEND_CLOSED', `the ${engine} backend was closed; create a new one`);
  };

  return {
    specificationVersion: 'v1',
    name: engine,
    capabilities: {
      persistentSession: config.docker_exec_mode !== 'exec',
      networkIsolation: true,
      idleStop: true,
      adoption: true,
      ...options.capabilities,
    },
    containerName,

    async doAcquire(request) {
      assertOpen();
      const entry = entryFor(request);
      return enqueue(entry, async () => {
        await ensureReady(entry, request);
        return entry.containerId!;
      });
    },

    async doExec(request, exec) {
      assertOpen();
      const entry = entryFor(request);
      return enqueue(entry, () => execute(entry, request, exec));
    },

    async list() {
      const containers = await findContainers();
      return containers.map((container): SandboxInfo => {
        const labels = container.Labels ?? {};
        const scopeKey = labels[LABELS.scope] ?? '';
        const entry = entries.get(scopeKey);
        const kind = labels[LABELS.kind] === 'task' ? 'task' : 'user';
        return {
          scopeKey,
          kind,
          ...(kind === 'user' ? { platform: labels[LABELS.platform] ?? '', userId: labels[LABELS.user] ?? '' } : { taskId: labels[LABELS.task] ?? '' }),
          containerId: container.Id,
          containerName: (container.Names?.[0] ?? '').replace(/^\//, ''),
          state: stateOf(container.State),
          workspace: labels[LABELS.workspace] ?? '',
          home: labels[LABELS.home] ?? '',
          ...lastUsedOf(entry?.lastUsed ?? readLastUsed(labels[LABELS.workspace])),
        };
      });
    },

    async stop(scopeKey) {
      const entry = entries.get(scopeKey);
      if (entry) {
        await enqueue(entry, () => stopEntry(entry));
        return;
      }
      for (const container of await findContainers(scopeKey)) {
        try {
          await docker.getContainer(container.Id).stop({ t: 3 });
        } catch (error) {
          if (!isAlreadyDone(error) && !isGone(error)) fail(error, `stop container of ${scopeKey}`);
        }
      }
    },

    async remove(scopeKey, removeOptions = {}) {
      if (removeOptions.purge && !removeOptions.paths) {
        throw new SandboxError('PURGE_NEEDS_PATHS', `purging ${scopeKey} needs its paths (resolve them with the sandbox resolver's forScope); nothing was removed`);
      }
      const entry = entries.get(scopeKey);
      const work = async (): Promise<void> => {
        if (entry) dropSession(entry);
        for (const container of await findContainers(scopeKey)) {
          const name = (container.Names?.[0] ?? '').replace(/^\//, '');
          await removeContainer(container.Id, name);
          await options.releaseNetwork?.(container.HostConfig?.NetworkMode ?? 'none', name);
        }
        if (removeOptions.purge && removeOptions.paths) await purgeHostFolders(removeOptions.paths);
        entries.delete(scopeKey);
        logger?.info(`berth: removed sandbox of ${scopeKey}${removeOptions.purge ? ' and its files' : ''}`);
      };
      if (entry) await enqueue(entry, work);
      else await work();
    },

    reap,

    async close() {
      closed = true;
      if (timer) clearInterval(timer);
      for (const entry of entries.values()) dropSession(entry);
    },

    async ping() {
      try {
        await docker.ping();
      } catch (error) {
        fail(error, 'reach the engine');
      }
    },

    async engineInfo() {
      try {
        const version = await docker.version();
        return { engine, endpoint, version: version.Version, apiVersion: version.ApiVersion };
      } catch (error) {
        return fail(error, 'read the engine version');
      }
    },
  };
}
