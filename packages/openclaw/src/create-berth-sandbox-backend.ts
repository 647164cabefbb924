import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describeIgnoredKeys, expandHome, type HostLogger } from '@berth/core';
import { createBerth as createGatewayBerth, outboxBudgetOf, putHostFile, readSandboxFile, type Berth, type CreateBerthOptions } from '@berth/gateway-plugin';
import { serveSandboxes, type SandboxSocketServer } from '@berth/gateway-plugin/socket';
import { SANDBOX_WORKSPACE } from './create-sandbox-fs-bridge.js';
import { createSandboxHandle, runtimeIdOf } from './create-sandbox-handle.js';
import { loadPluginConfig, PLUGIN_CONFIG_KEY, type LoadedPluginConfig } from './load-plugin-config.js';
import { moveStagedInboundMedia } from './move-staged-inbound-media.js';
import type {
  OpenClawBeforeAgentFinalizeEvent,
  OpenClawCreateSandboxBackendParams,
  OpenClawHookContext,
  OpenClawSandboxBackendRegistration,
} from './openclaw-sdk-types.js';
import { prepareReplyMedia, removeReplyMediaCopies } from './prepare-reply-media.js';

/** Options of {@link createBerthSandboxBackend}. */
export interface CreateBerthSandboxBackendOptions {
  /** `plugins.entries.berth.config` from `openclaw.json`, unvalidated. */
  readonly pluginConfig?: unknown;
  /** The gateway's environment: `HERMES_USER_…` credentials, `docker_forward_env`. @default process.env */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /** Where Berth's lines go: the gateway's log. */
  readonly logger?: HostLogger;
  /** Builds the Berth (the default is `@berth/gateway-plugin`'s `createBerth`). */
  readonly createBerth?: (options: CreateBerthOptions) => Promise<Berth>;
  /** Node binary of the spawned socket clients. @default process.execPath */
  readonly node?: string;
}

/** A Berth sandbox backend for OpenClaw, ready to register. */
export interface BerthSandboxBackend {
  /** What `registerSandboxBackend('berth', …)` takes. */
  readonly registration: OpenClawSandboxBackendRegistration;
  /** The validated plugin settings and where the `terminal:` section came from. */
  readonly config: LoadedPluginConfig;
  /**
   * Builds the Berth and starts serving its socket, once; the factory calls it too. A failure
   * is thrown and the next call tries again.
   */
  start(): Promise<{ readonly berth: Berth; readonly socket: string }>;
  /** Stops serving, removes the socket (and the folder the plugin made for it), releases Berth. Sandboxes keep running. */
  close(): Promise<void>;
  /**
   * The plugin hooks that carry files between the chat and the session's sandbox (registered
   * with `api.on` by the plugin entry). Both only act for a session whose sandbox the factory
   * made, and whose OpenClaw host folder is its own.
   */
  readonly hooks: {
    /**
     * `before_tool_call` (awaited before every tool runs): puts attachments OpenClaw staged
     * since the run began (a message steered into a running turn) into the sandbox, as the
     * factory does at the start of each run. Never throws: OpenClaw would block the tool.
     */
    beforeToolCall(context: OpenClawHookContext): Promise<void>;
    /**
     * `before_agent_finalize` (awaited before OpenClaw builds the reply): places each file the
     * reply names with `MEDIA:` in `/workspace`, read from the session's own sandbox, where
     * OpenClaw will read it. Never throws; returns nothing (the reply is not revised).
     */
    beforeAgentFinalize(event: OpenClawBeforeAgentFinalizeEvent, context: OpenClawHookContext): Promise<void>;
  };
}

/** A session the factory made a sandbox for: where OpenClaw keeps its host copy of the workspace. */
interface KnownSession {
  readonly hostWorkspaceDir: string;
  /**
   * True when that host folder is this session's alone (`sandbox.scope: session` and
   * `workspaceAccess` not `rw`, and no other session key was seen with it). Otherwise files there
   * cannot be told apart by user, and Berth moves none of them.
   */
  readonly ownFolder: boolean;
}

interface Running {
  readonly berth: Berth;
  readonly server: SandboxSocketServer;
  readonly socket: string;
  readonly ownedFolder: string | undefined;
}

/**
 * The `berth` sandbox backend: its factory turns OpenClaw's session key into a Berth sandbox
 * through core's one scope decision (refusing keys that name no single user, such as
 * `per-peer` and `main` direct chats), and returns a handle whose commands reach the warm shell
 * sessions through a socket the gateway process itself serves. Nothing starts until the
 * first sandboxed run (or {@link BerthSandboxBackend.start}).
 */
export function createBerthSandboxBackend(options: CreateBerthSandboxBackendOptions = {}): BerthSandboxBackend {
  const environment = options.environment ?? process.env;
  const logger = options.logger;
  // Checked at once, so a wrong key stops the plugin from loading with a line that names it.
  const config = loadPluginConfig(options.pluginConfig, environment);
  // As berth serve and Hermes' register() say it: the keys accepted and not used, once.
  const inline = config.source === `${PLUGIN_CONFIG_KEY}.terminal`;
  const ignored = describeIgnoredKeys(config.terminal, inline ? config.source : 'terminal');
  if (ignored) logger?.warn(ignored);
  const build = options.createBerth ?? createGatewayBerth;

  let building: Promise<Berth> | undefined;
  let starting: Promise<Running> | undefined;
  let closed = false;
  const closedError = (): Error => new Error('the Berth sandbox backend was closed (the gateway is stopping or reloaded the plugin)');

  // The Berth alone: what the manager needs (`openclaw sandbox list` may run in a CLI process,
  // which must not serve a socket of its own).
  const getBerth = (): Promise<Berth> => {
    if (closed) return Promise.reject(closedError());
    building ??= build({ config: config.terminal, environment, ...(logger ? { logger } : {}) });
    building.catch(() => (building = undefined));
    return building;
  };

  const start = (): Promise<Running> => {
    if (closed) return Promise.reject(closedError());
    starting ??= (async (): Promise<Running> => {
      const berth = await getBerth();
      let ownedFolder: string | undefined;
      let socket: string;
      if (config.plugin.socket) {
        const configured = config.plugin.socket;
        socket = path.resolve(expandHome(configured, environment));
      } else {
        // A fresh folder only this process can enter: nobody can have planted a socket there.
        ownedFolder = mkdtempSync(path.join(tmpdir(), 'berth-openclaw-'));
        socket = path.join(ownedFolder, 'berth.sock');
      }
      try {
        const server = await serveSandboxes({ berth, socket, ...(logger ? { logger } : {}) });
        logger?.info(`berth: serving sandboxes on ${server.socket} (terminal settings from ${config.source})`);
        // A serving process keeps the warm pool (docker_pool_size); a Berth made elsewhere may have none.
        berth.warm?.();
        return { berth, server, socket: server.socket, ownedFolder };
      } catch (error) {
        if (ownedFolder) rmSync(ownedFolder, { recursive: true, force: true });
        throw error;
      }
    })();
    // A failed start (the engine, the socket path) is retried by the next caller.
    starting.catch(() => (starting = undefined));
    return starting;
  };

  const scopeOfRuntime = async (runtimeId: string): Promise<{ berth: Berth; scopeKey: string | undefined; running: boolean }> => {
    const berth = await getBerth();
    const info = (await berth.backend.list()).find((sandbox) => runtimeIdOf(sandbox.scopeKey) === runtimeId);
    return { berth, scopeKey: info?.scopeKey, running: info?.state === 'running' };
  };

  // Files between the chat and the sandbox go through OpenClaw's per-session host folder: which
  // session owns which folder is learnt from the factory, the one place OpenClaw names both.
  const sessions = new Map<string, KnownSession>();
  const folderOwners = new Map<string, string>();
  const deliveredCopies = new Map<string, Set<string>>();
  const folderQueues = new Map<string, Promise<unknown>>();
  const warnedShared = new Set<string>();

  // One transfer at a time per host folder (a run and a side question may overlap).
  const inFolder = <T>(folder: string, work: () => Promise<T>): Promise<T> => {
    const previous = folderQueues.get(folder) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(work);
    const settled = next.catch(() => undefined);
    folderQueues.set(folder, settled);
    void settled.then(() => {
      if (folderQueues.get(folder) === settled) folderQueues.delete(folder);
    });
    return next;
  };

  const sharedFolders = new Set<string>();
  // A folder seen with two session keys stays shared for good: files there cannot be told apart by user.
  const ownsFolder = (session: KnownSession | undefined): session is KnownSession =>
    session?.ownFolder === true && !sharedFolders.has(session.hostWorkspaceDir);

  const learnSession = (params: OpenClawCreateSandboxBackendParams): KnownSession => {
    const hostWorkspaceDir = path.resolve(params.workspaceDir);
    const owner = folderOwners.get(hostWorkspaceDir);
    if (owner === undefined) folderOwners.set(hostWorkspaceDir, params.sessionKey);
    else if (owner !== params.sessionKey) sharedFolders.add(hostWorkspaceDir);
    const ownFolder = (params.cfg?.scope ?? 'session') === 'session' && params.cfg?.workspaceAccess !== 'rw' && !sharedFolders.has(hostWorkspaceDir);
    if (!ownFolder && !warnedShared.has(hostWorkspaceDir)) {
      warnedShared.add(hostWorkspaceDir);
      logger?.warn(
        `berth: OpenClaw keeps one host folder for several sessions (${hostWorkspaceDir}), so attachments and MEDIA: ` +
          'files cannot be told apart by user and are not carried; set agents.defaults.sandbox.scope: "session" and workspaceAccess: "none"',
      );
    }
    const session: KnownSession = { hostWorkspaceDir, ownFolder };
    sessions.set(params.sessionKey, session);
    return session;
  };

  const moveInbound = async (berth: Berth, sessionKey: string, session: KnownSession): Promise<void> => {
    if (!ownsFolder(session)) return;
    const outcomes = await inFolder(session.hostWorkspaceDir, () =>
      moveStagedInboundMedia({
        hostWorkspaceDir: session.hostWorkspaceDir,
        // Resolved by core at the moment of the transfer, like every command.
        put: (hostPath, sandboxPath) => putHostFile(berth, berth.request({ session: { sessionKey } }), hostPath, sandboxPath),
      }),
    );
    for (const outcome of outcomes) if (outcome.refusal) logger?.warn(`berth: an attachment was not put in the sandbox: ${outcome.refusal}`);
  };

  const registration: OpenClawSandboxBackendRegistration = {
    async factory(params) {
      const running = await start();
      // Core's one decision: a user, a conversation of its own, or a refusal naming the
      // OpenClaw setting that fixes it. No engine is touched before it is made.
      const request = running.berth.request({ session: { sessionKey: params.sessionKey } });
      const session = learnSession(params);
      // OpenClaw staged this turn's attachments into its host folder before calling the
      // factory; they reach the sandbox before the agent runs.
      try {
        await moveInbound(running.berth, params.sessionKey, session);
      } catch (error) {
        logger?.warn(`berth: attachments could not be put in the sandbox: ${error instanceof Error ? error.message : String(error)}`);
      }
      return createSandboxHandle({
        berth: running.berth,
        socket: running.socket,
        sessionKey: params.sessionKey,
        request,
        hostWorkspaceDir: params.workspaceDir,
        ...(options.node ? { node: options.node } : {}),
        ...(config.plugin.client ? { client: config.plugin.client } : {}),
      });
    },
    manager: {
      async describeRuntime({ entry }) {
        const { berth, running } = await scopeOfRuntime(entry.containerName);
        // Berth recreates a sandbox whose settings changed by itself, so its label always matches.
        return { running, actualConfigLabel: berth.config.docker_image, configLabelMatch: true };
      },
      async removeRuntime({ entry }) {
        const { berth, scopeKey } = await scopeOfRuntime(entry.containerName);
        // The container only: a user's files are never deleted implicitly (berth rm --purge does that).
        if (scopeKey) await berth.backend.remove(scopeKey);
      },
    },
    resolveWorkdir: () => SANDBOX_WORKSPACE,
    // OpenClaw's read-only resource mounts (subagent attachments) are not mounted into Berth sandboxes.
    capabilities: { readOnlyResourceMounts: false },
  };

  const hooks: BerthSandboxBackend['hooks'] = {
    async beforeToolCall(context) {
      const sessionKey = context?.sessionKey;
      const session = sessionKey ? sessions.get(sessionKey) : undefined;
      if (!sessionKey || !ownsFolder(session)) return;
      try {
        await moveInbound((await start()).berth, sessionKey, session);
      } catch (error) {
        logger?.warn(`berth: attachments could not be put in the sandbox: ${error instanceof Error ? error.message : String(error)}`);
      }
    },
    async beforeAgentFinalize(event, context) {
      const sessionKey = context?.sessionKey ?? event?.sessionKey;
      const session = sessionKey ? sessions.get(sessionKey) : undefined;
      if (!sessionKey || !ownsFolder(session)) return;
      const text = typeof event?.lastAssistantMessage === 'string' ? event.lastAssistantMessage : '';
      try {
        await inFolder(session.hostWorkspaceDir, async () => {
          // The previous reply's copies were sent: its payloads were built once its run ended.
          const previous = deliveredCopies.get(session.hostWorkspaceDir);
          deliveredCopies.delete(session.hostWorkspaceDir);
          if (previous) await removeReplyMediaCopies(previous);
          if (!/media:/i.test(text)) return;
          const { berth } = await start();
          const outcomes = await prepareReplyMedia({
            hostWorkspaceDir: session.hostWorkspaceDir,
            text,
            // Resolved by core at the moment of the read, like every command.
            read: async (sandboxPath) => (await readSandboxFile(berth, berth.request({ session: { sessionKey } }), sandboxPath)).bytes,
            budget: outboxBudgetOf(berth),
          });
          const placed = new Set(outcomes.filter((outcome) => outcome.bytes !== undefined).map((outcome) => outcome.hostPath));
          if (placed.size > 0) deliveredCopies.set(session.hostWorkspaceDir, placed);
          for (const outcome of outcomes) if (outcome.refusal) logger?.warn(`berth: a MEDIA: file was not sent: ${outcome.refusal}`);
        });
      } catch (error) {
        logger?.warn(`berth: MEDIA: files could not be read from the sandbox: ${error instanceof Error ? error.message : String(error)}`);
      }
    },
  };

  return {
    registration,
    config,
    hooks,
    async start() {
      const running = await start();
      return { berth: running.berth, socket: running.socket };
    },
    async close() {
      closed = true;
      const [serving, berth] = [starting, building];
      starting = undefined;
      building = undefined;
      const running = await serving?.catch(() => undefined);
      if (running) {
        await running.server.close();
        if (running.ownedFolder) rmSync(running.ownedFolder, { recursive: true, force: true });
      }
      await (await berth?.catch(() => undefined))?.close();
    },
  };
}

export { runtimeIdOf };
