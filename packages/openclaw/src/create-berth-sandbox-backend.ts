import { mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import type { HostLogger } from '@berth/core';
import { createBerth as createGatewayBerth, type Berth, type CreateBerthOptions } from '@berth/gateway-plugin';
import { serveSandboxes, type SandboxSocketServer } from '@berth/gateway-plugin/socket';
import { SANDBOX_WORKSPACE } from './create-sandbox-fs-bridge.js';
import { createSandboxHandle, runtimeIdOf } from './create-sandbox-handle.js';
import { loadPluginConfig, type LoadedPluginConfig } from './load-plugin-config.js';
import type { OpenClawSandboxBackendRegistration } from './openclaw-sdk-types.js';

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
        socket = configured === '~' || configured.startsWith('~/') ? path.join(environment.HOME || homedir(), configured.slice(1)) : path.resolve(configured);
      } else {
        // A fresh folder only this process can enter: nobody can have planted a socket there.
        ownedFolder = mkdtempSync(path.join(tmpdir(), 'berth-openclaw-'));
        socket = path.join(ownedFolder, 'berth.sock');
      }
      try {
        const server = await serveSandboxes({ berth, socket, ...(logger ? { logger } : {}) });
        logger?.info(`berth: serving sandboxes on ${server.socket} (terminal settings from ${config.source})`);
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

  const registration: OpenClawSandboxBackendRegistration = {
    async factory(params) {
      const running = await start();
      // Core's one decision: a user, a conversation of its own, or a refusal naming the
      // OpenClaw setting that fixes it. No engine is touched before it is made.
      const request = running.berth.request({ session: { sessionKey: params.sessionKey } });
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

  return {
    registration,
    config,
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
